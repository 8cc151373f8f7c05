"""The LangGraph API driven by LangGraph's JS client, ``@langchain/langgraph-sdk``, against a real server process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.nodejs import assert_suite_passes, node_binary, suite_server

pytestmark = [pytest.mark.node, pytest.mark.slow]
KEY = "langgraph-key-123"


def test_langgraph_js_sdk_suite(tmp_path: Path) -> None:
    node = node_binary("LangGraph JS client", "@langchain/langgraph-sdk")
    with suite_server(tmp_path / "lg.db", KEY, "--graph", "fan=tests.graphs:fan_out_graph") as server:
        assert_suite_passes(node, "langgraph-sdk.test.mjs", server, KEY, 8)
