"""The AG-UI endpoint driven by the real @ag-ui/client (Node), against a real server process."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.server import ServerProcess

pytestmark = [pytest.mark.node, pytest.mark.slow]
NODE_DIR = Path(__file__).resolve().parents[2] / "node"
KEY = "interop-key-123"


def test_real_agui_client_suite(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node, "Node.js is required for the AG-UI interop tests"
    assert (NODE_DIR / "node_modules" / "@ag-ui" / "client").is_dir(), (
        "run `npm ci` in tests/node (scripts/test does) to install @ag-ui/client"
    )
    fixtures = Path(__file__).resolve().parents[3] / "bridge" / "spec" / "fixtures"
    server = ServerProcess(
        tmp_path / "agui.db",
        ["--workflows", str(NODE_DIR / "workflows"), "--workflows", str(fixtures), "--api-key", f"tester={KEY}+admin"],
    ).start()
    try:
        result = subprocess.run(
            [node, "--test", "--test-reporter=spec", "agui.test.mjs"],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=120,
            env={"PATH": "/usr/bin:/bin:/usr/local/bin", "BRIDGE_URL": server.url, "BRIDGE_KEY": KEY},
        )
        assert result.returncode == 0, result.stdout + result.stderr + server.output()[-3000:]
        assert "taken over" not in server.output(), server.output()
        assert re.search(r"^\S* ?fail 0$", result.stdout, re.M), result.stdout
        assert re.search(r"^\S* ?pass 9$", result.stdout, re.M), result.stdout
    finally:
        server.stop()


def test_copilotkit_runtime_in_front_of_the_bridge(tmp_path: Path) -> None:
    """CopilotKit's runtime (v2, headless) holds an HttpAgent per workflow; CopilotKit's core answers interrupts."""
    node = shutil.which("node")
    assert node, "Node.js is required for the CopilotKit interop tests"
    assert (NODE_DIR / "node_modules" / "@copilotkit" / "runtime").is_dir(), (
        "run `npm ci` in tests/node (scripts/test does) to install @copilotkit/runtime"
    )
    fixtures = Path(__file__).resolve().parents[3] / "bridge" / "spec" / "fixtures"
    server = ServerProcess(
        tmp_path / "copilotkit.db",
        ["--workflows", str(NODE_DIR / "workflows"), "--workflows", str(fixtures), "--api-key", f"tester={KEY}+admin"],
    ).start()
    env = {
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "BRIDGE_URL": server.url,
        "BRIDGE_KEY": KEY,
        # CopilotKit's telemetry stays off: this suite talks to nothing but the bridge on loopback.
        "COPILOTKIT_TELEMETRY_DISABLED": "true",
        "DO_NOT_TRACK": "1",
        "SCARF_ANALYTICS": "false",
    }
    try:
        result = subprocess.run(
            [node, "--test", "--test-reporter=spec", "copilotkit.test.mjs"],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
        )
        assert result.returncode == 0, result.stdout + result.stderr + server.output()[-3000:]
        assert re.search(r"^\S* ?fail 0$", result.stdout, re.M), result.stdout
        assert re.search(r"^\S* ?pass 9$", result.stdout, re.M), result.stdout
        # CopilotKit 1.75 runs on its own @ag-ui/client, older than 1.0.
        assert "@copilotkit/runtime 1.75.0 with @ag-ui/client 0.0.59" in result.stdout, result.stdout
    finally:
        server.stop()
