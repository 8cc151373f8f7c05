"""The LangGraph API driven by LangGraph's JS client, ``@langchain/langgraph-sdk``, against a real server process."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.server import ServerProcess

pytestmark = [pytest.mark.node, pytest.mark.slow]
NODE_DIR = Path(__file__).resolve().parents[2] / "node"
KEY = "langgraph-key-123"


def test_langgraph_js_sdk_suite(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node, "Node.js is required for the LangGraph JS client tests"
    assert (NODE_DIR / "node_modules" / "@langchain" / "langgraph-sdk").is_dir(), (
        "run `npm ci` in tests/node (scripts/test does) to install @langchain/langgraph-sdk"
    )
    fixtures = Path(__file__).resolve().parents[3] / "bridge" / "spec" / "fixtures"
    server = ServerProcess(
        tmp_path / "lg.db",
        [
            "--workflows",
            str(NODE_DIR / "workflows"),
            "--workflows",
            str(fixtures),
            "--graph",
            "fan=tests.graphs:fan_out_graph",
            "--api-key",
            f"tester={KEY}+admin",
        ],
    ).start()
    try:
        result = subprocess.run(
            [node, "--test", "--test-reporter=spec", "langgraph-sdk.test.mjs"],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=120,
            env={"PATH": "/usr/bin:/bin:/usr/local/bin", "BRIDGE_URL": server.url, "BRIDGE_KEY": KEY},
        )
        assert result.returncode == 0, result.stdout + result.stderr + server.output()[-3000:]
        assert re.search(r"^\S* ?fail 0$", result.stdout, re.M), result.stdout
        assert re.search(r"^\S* ?pass 7$", result.stdout, re.M), result.stdout
    finally:
        server.stop()
