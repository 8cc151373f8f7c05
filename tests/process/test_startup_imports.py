"""Serving starts without the protocol SDKs: MCP and A2A load theirs on the first request to their routes."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
from starlette.routing import Route
from bridge.host.cli import build_parser, build_server
app = build_server(build_parser().parse_args(["serve", "--db", ":memory:"]))[0]
paths = sorted(r.path for r in app.routes if isinstance(r, Route))
sdks = sorted(m for m in ("mcp", "mcp_types", "a2a", "google.protobuf") if m in sys.modules)
bench = sorted(m for m in sys.modules if m == "bench" or m.startswith("bench."))
print(json.dumps({"paths": paths, "sdks": sdks, "bench": bench}))
"""


def _probe() -> dict[str, list[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True)
    seen: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


def test_building_the_served_app_imports_no_protocol_sdk() -> None:
    seen = _probe()
    assert {"/mcp", "/a2a", "/.well-known/agent-card.json"} <= set(seen["paths"]), seen["paths"]
    assert seen["sdks"] == [], f"imported at start-up: {seen['sdks']}"


def test_building_the_served_app_loads_no_benchmark_code() -> None:
    # The CLI offers ``bench``; only its options module may load with the parser, not the harness.
    seen = _probe()
    assert set(seen["bench"]) <= {"bench", "bench.options"}, f"loaded at start-up: {seen['bench']}"
