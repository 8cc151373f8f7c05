"""Serving starts without the protocol SDKs: MCP and A2A load theirs on the first request to their routes."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys, tempfile
from starlette.routing import Route
from openwop_bridge.host.cli import build_parser, build_server
app = build_server(build_parser().parse_args(["serve", "--db", tempfile.mkdtemp() + "/probe.db"]))[0]
paths = sorted(r.path for r in app.routes if isinstance(r, Route))
sdks = sorted(m for m in ("mcp", "mcp_types", "a2a", "google.protobuf") if m in sys.modules)
bench = sorted(m for m in sys.modules if m == "bench" or m.startswith("bench."))
channels = sorted(m for m in ("httpx", "slack_sdk", "aiosmtplib", "openwop_bridge.notify.config") if m in sys.modules)
FRAMEWORKS = ("langgraph", "langchain_core", "ag_ui", "prometheus_client")
frameworks = sorted(m for m in FRAMEWORKS if m in sys.modules)
from starlette.testclient import TestClient
with TestClient(app, base_url="http://127.0.0.1:8000") as client:  # start-up hooks, then requests needing no SDK
    assert client.get("/healthz").status_code == 200
    assert client.get("/.well-known/openwop").status_code == 200
    served = sorted(m for m in ("mcp", "mcp_types", "a2a", "google.protobuf") if m in sys.modules)
    frameworks_served = sorted(m for m in FRAMEWORKS if m in sys.modules)
print(json.dumps({"paths": paths, "sdks": sdks, "served": served, "bench": bench, "channels": channels,
                  "frameworks": frameworks, "frameworks_served": frameworks_served}))
"""


def _probe() -> dict[str, list[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True)
    seen: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


def test_building_the_served_app_imports_no_protocol_sdk() -> None:
    seen = _probe()
    assert {"/mcp", "/a2a", "/.well-known/agent-card.json"} <= set(seen["paths"]), seen["paths"]
    assert seen["sdks"] == [], f"imported at start-up: {seen['sdks']}"


def test_serving_imports_no_protocol_sdk_before_its_first_request() -> None:
    # Start-up hooks (the engine, the MCP mount) and discovery leave the SDKs unloaded too.
    seen = _probe()
    assert seen["served"] == [], f"imported while starting to serve: {seen['served']}"


def test_building_the_served_app_loads_no_benchmark_code() -> None:
    # The CLI offers ``bench``; only its options module may load with the parser, not the harness.
    seen = _probe()
    assert set(seen["bench"]) <= {"bench", "openwop_bridge.bench.options"}, f"loaded at start-up: {seen['bench']}"


def test_serving_without_a_notify_file_loads_no_channel_library() -> None:
    """Webhook deliveries load httpx with the first delivery, and the notify file's models and channels
    (pydantic models, slack_sdk, aiosmtplib) load only with a notify file: each costs memory every start."""
    assert _probe()["channels"] == []


def test_serving_loads_each_library_with_its_first_use() -> None:
    """LangGraph (with langchain_core) loads with the first ``--graph`` or the first request that needs it,
    AG-UI's models with the first AG-UI request, prometheus_client with the first scrape of ``/metrics``:
    together they cost a third of a second and megabytes every start."""
    seen = _probe()
    assert seen["frameworks"] == [], f"imported at start-up: {seen['frameworks']}"
    assert seen["frameworks_served"] == [], f"imported while starting to serve: {seen['frameworks_served']}"
