"""Running a Node.js test suite of tests/node against a served bridge (the third-party JS clients)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tests.server import ServerProcess

NODE_DIR = Path(__file__).resolve().parent / "node"
#: The official OpenWOP fixtures, served beside tests/node/workflows.
FIXTURES = Path(__file__).resolve().parents[1] / "bridge" / "spec" / "fixtures"
#: ``serve`` options loading the suites' workflows and the fixtures.
WORKFLOWS = ["--workflows", str(NODE_DIR / "workflows"), "--workflows", str(FIXTURES)]


def node_binary(needed_for: str, package: str | None = None) -> str:
    """The ``node`` executable (the test fails without it), and ``package`` installed by ``npm ci``."""
    node = shutil.which("node")
    assert node, f"Node.js is required for the {needed_for} tests"
    if package is not None:
        assert (NODE_DIR / "node_modules" / package).is_dir(), (
            f"run `npm ci` in tests/node (scripts/test does) to install {package}"
        )
    return node


def run_suite(
    node: str, script: str, server: ServerProcess, key: str, *, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    """``node --test`` of ``script`` against ``server`` (``BRIDGE_URL``, ``BRIDGE_KEY`` and ``env`` set)."""
    return subprocess.run(
        [node, "--test", "--test-reporter=spec", script],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "BRIDGE_URL": server.url, "BRIDGE_KEY": key, **env},
    )


def suite_server(db: Path, key: str, *options: str) -> ServerProcess:
    """A server (not started) with the suites' workflows, ``options`` and ``key`` as an admin key."""
    return ServerProcess(db, [*WORKFLOWS, *options, "--api-key", f"tester={key}+admin"])


def assert_suite_passes(
    node: str, script: str, server: ServerProcess, key: str, passed: int, *, timeout: float = 120, **env: str
) -> str:
    """Run ``script`` (see :func:`run_suite`); it exits 0 with no failure and ``passed`` tests passing. Its output."""
    result = run_suite(node, script, server, key, timeout=timeout, **env)
    assert result.returncode == 0, result.stdout + result.stderr + server.output()[-3000:]
    assert re.search(r"^\S* ?fail 0$", result.stdout, re.M), result.stdout
    assert re.search(rf"^\S* ?pass {passed}$", result.stdout, re.M), result.stdout
    return result.stdout
