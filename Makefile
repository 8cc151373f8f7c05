.PHONY: serve test lint types unit bench bench-peer clean
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
	.venv/bin/python -m pip install -q -e '.[bench]' --config-settings editable_mode=strict
	mkdir -p bench-results
	.venv/bin/openwop-bridge bench --json bench-results/bench.json $(BENCH_ARGS)
bench-peer:       ## LangGraph's `langgraph dev` in a venv of its own (.venv-langgraph-dev) for langgraph_client_roundtrip
	[ -x .venv-langgraph-dev/bin/python ] || python3 -m venv .venv-langgraph-dev
	.venv-langgraph-dev/bin/python -m pip install -q 'langgraph-cli[inmem]>=0.4,<0.5' "langgraph==$$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("langgraph"))')"
clean:
	rm -rf .venv .venv-langgraph-dev .mypy_cache .ruff_cache .pytest_cache artifacts bench-results
