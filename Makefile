.PHONY: serve test lint types unit bench clean
serve:            ## start the host (SQLite, demo workflows, dev key)
	./scripts/serve
test:             ## the whole suite: ruff, mypy, pytest
	./scripts/test
lint:
	.venv/bin/ruff check bridge adapters bench tests examples
types:
	.venv/bin/mypy
unit:             ## pytest only, skipping the slow and external-system tests
	.venv/bin/pytest -q -m "not slow and not postgres and not browser and not node"
bench:            ## benchmarks with peers (installs the bench extra): table on stdout, JSON in bench-results/
	.venv/bin/python -m pip install -q -e '.[bench]'
	mkdir -p bench-results
	.venv/bin/openwop-bridge bench --json bench-results/bench.json $(BENCH_ARGS)
clean:
	rm -rf .venv .mypy_cache .ruff_cache .pytest_cache artifacts bench-results
