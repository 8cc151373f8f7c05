"""The LangGraph API driven by LangGraph's JS client, ``@langchain/langgraph-sdk``, against a real server process."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.nodejs import WORKFLOWS, node_binary, run_suite
from tests.server import ServerProcess

pytestmark = [pytest.mark.node, pytest.mark.slow]
KEY = "langgraph-key-123"


def test_langgraph_js_sdk_suite(tmp_path: Path) -> None:
    node = node_binary("LangGraph JS client", "@langchain/langgraph-sdk")
    server = ServerProcess(
        tmp_path / "lg.db",
        [
            *WORKFLOWS,
            "--graph",
            "fan=tests.graphs:fan_out_graph",
            "--api-key",
            f"tester={KEY}+admin",
        ],
    ).start()
    try:
        result = run_suite(node, "langgraph-sdk.test.mjs", server, KEY)
        assert result.returncode == 0, result.stdout + result.stderr + server.output()[-3000:]
        assert re.search(r"^\S* ?fail 0$", result.stdout, re.M), result.stdout
        assert re.search(r"^\S* ?pass 8$", result.stdout, re.M), result.stdout
    finally:
        server.stop()
