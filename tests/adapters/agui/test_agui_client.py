"""The AG-UI endpoint driven by the real @ag-ui/client (Node), against a real server process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.nodejs import assert_suite_passes, node_binary, suite_server

pytestmark = [pytest.mark.node, pytest.mark.slow]
KEY = "interop-key-123"


def test_real_agui_client_suite(tmp_path: Path) -> None:
    node = node_binary("AG-UI interop", "@ag-ui/client")
    with suite_server(tmp_path / "agui.db", KEY) as server:
        assert_suite_passes(node, "agui.test.mjs", server, KEY, 9)
        assert "taken over" not in server.output(), server.output()


def test_copilotkit_runtime_in_front_of_the_bridge(tmp_path: Path) -> None:
    """CopilotKit's runtime (v2, headless) holds an HttpAgent per workflow; CopilotKit's core answers interrupts."""
    node = node_binary("CopilotKit interop", "@copilotkit/runtime")
    with suite_server(tmp_path / "copilotkit.db", KEY) as server:
        # CopilotKit's telemetry stays off: this suite talks to nothing but the bridge on loopback.
        output = assert_suite_passes(
            node,
            "copilotkit.test.mjs",
            server,
            KEY,
            9,
            timeout=180,
            COPILOTKIT_TELEMETRY_DISABLED="true",
            DO_NOT_TRACK="1",
            SCARF_ANALYTICS="false",
        )
        # CopilotKit 1.75 runs on its own @ag-ui/client, older than 1.0.
        assert "@copilotkit/runtime 1.75.0 with @ag-ui/client 0.0.59" in output, output
