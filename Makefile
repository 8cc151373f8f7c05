.PHONY: serve test lint types unit bench clean
serve:            ## start the host (SQLite, demo workflows, dev key)
	./scripts/serve
test:             ## the whole suite: ruff, mypy, pytest
	./scripts/test
lint:
	.venv/bin/ruff check bridge adapters tests examples
types:
	.venv/bin/mypy
unit:             ## pytest only, skipping the slow and external-system tests
	.venv/bin/pytest -q -m "not slow and not postgres and not browser and not node"
bench:            ## benchmarks with peers, printed as a table
	.venv/bin/openwop-bridge bench
clean:
	rm -rf .venv .mypy_cache .ruff_cache .pytest_cache artifacts bench-results
