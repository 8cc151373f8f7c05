"""The AG-UI endpoint driven by the real @ag-ui/client (Node), against a real server process."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.nodejs import WORKFLOWS, node_binary, run_suite
from tests.server import ServerProcess

pytestmark = [pytest.mark.node, pytest.mark.slow]
KEY = "interop-key-123"


def test_real_agui_client_suite(tmp_path: Path) -> None:
    node = node_binary("AG-UI interop", "@ag-ui/client")
    server = ServerProcess(
        tmp_path / "agui.db",
        [*WORKFLOWS, "--api-key", f"tester={KEY}+admin"],
    ).start()
    try:
        result = run_suite(node, "agui.test.mjs", server, KEY)
        assert result.returncode == 0, result.stdout + result.stderr + server.output()[-3000:]
        assert "taken over" not in server.output(), server.output()
        assert re.search(r"^\S* ?fail 0$", result.stdout, re.M), result.stdout
        assert re.search(r"^\S* ?pass 9$", result.stdout, re.M), result.stdout
    finally:
        server.stop()


def test_copilotkit_runtime_in_front_of_the_bridge(tmp_path: Path) -> None:
    """CopilotKit's runtime (v2, headless) holds an HttpAgent per workflow; CopilotKit's core answers interrupts."""
    node = node_binary("CopilotKit interop", "@copilotkit/runtime")
    server = ServerProcess(
        tmp_path / "copilotkit.db",
        [*WORKFLOWS, "--api-key", f"tester={KEY}+admin"],
    ).start()
    try:
        # CopilotKit's telemetry stays off: this suite talks to nothing but the bridge on loopback.
        result = run_suite(
            node,
            "copilotkit.test.mjs",
            server,
            KEY,
            timeout=180,
            COPILOTKIT_TELEMETRY_DISABLED="true",
            DO_NOT_TRACK="1",
            SCARF_ANALYTICS="false",
        )
        assert result.returncode == 0, result.stdout + result.stderr + server.output()[-3000:]
        assert re.search(r"^\S* ?fail 0$", result.stdout, re.M), result.stdout
        assert re.search(r"^\S* ?pass 9$", result.stdout, re.M), result.stdout
        # CopilotKit 1.75 runs on its own @ag-ui/client, older than 1.0.
        assert "@copilotkit/runtime 1.75.0 with @ag-ui/client 0.0.59" in result.stdout, result.stdout
    finally:
        server.stop()
