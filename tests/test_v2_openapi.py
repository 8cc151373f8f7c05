"""The v2 OpenAPI document (``GET /openapi.json``): valid, complete, and true of the served host.

The document must pass ``openapi-spec-validator``, list exactly the v2 routes
the app serves, and survive a bounded schemathesis run against a real
``openwop-bridge serve`` on loopback: no 5xx, and every status, content type
and body one the document lists.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import httpx
import orjson
import schemathesis
from hypothesis import HealthCheck, settings
from openapi_spec_validator import validate
from starlette.routing import Route

from openwop_bridge.host.http.routing import routes as routes_of
from openwop_bridge.host.v2.api import OPERATIONS, openapi_document
from tests.fuzz import BUDGET_S, call_and_validate, fuzz_fixtures, fuzz_schema
from tests.server import ServerProcess

KEY = "fuzz-v2-key-0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}

DOCUMENT = openapi_document()

# POST /webhooks is left out: a generated URL the egress rules admit would be resolved, and nothing
# here may leave loopback (tests/host/test_webhooks*.py cover it against a loopback receiver).
schema = fuzz_schema(DOCUMENT).exclude(method="POST", path="/webhooks")


server, deadline = fuzz_fixtures("fuzz-v2", KEY)


def test_the_document_is_valid_openapi() -> None:
    validate(DOCUMENT)


def _served() -> set[tuple[str, str]]:
    """``(method, OpenAPI path)`` of every v2 route the app registers, plus discovery."""
    spelled = {
        "run_id": "runId",
        "node_id": "nodeId",
        "token": "token",
        "webhook_id": "webhookId",
        "delivery_id": "deliveryId",
        "delegation_id": "delegationId",
    }
    served = {("get", "/.well-known/openwop")}
    for route in routes_of(OPERATIONS):
        assert isinstance(route, Route) and route.methods is not None
        path = re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: "{" + spelled[m.group(1)] + "}", route.path)
        served |= {(m.lower(), path) for m in route.methods if m != "HEAD"}
    return served


def test_the_document_lists_exactly_the_v2_routes() -> None:
    documented = {(method, path) for path, ops in DOCUMENT["paths"].items() for method in ops}
    assert documented == _served()
    for path, ops in DOCUMENT["paths"].items():
        for op in ops.values():
            named = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert named == set(re.findall(r"\{(\w+)\}", path)), path
            assert "OpenWOP-Version" in {p["name"] for p in op["parameters"]}
            assert all(code == "default" or 200 <= int(code) < 600 for code in op["responses"])


def test_errors_are_the_vendored_v2_envelope() -> None:
    from openwop_bridge.spec import v2 as spec_v2

    envelope = DOCUMENT["components"]["schemas"]["ErrorEnvelope"]
    assert envelope["properties"]["error"] == spec_v2.schema("error-envelope.schema.json")["properties"]["error"]
    sse = DOCUMENT["paths"]["/runs/{runId}/events"]["get"]["responses"]["200"]["content"]
    assert list(sse) == ["text/event-stream"]
    create = DOCUMENT["paths"]["/runs"]["post"]
    assert "Idempotency-Key" in {p["name"] for p in create["parameters"]}
    assert create["requestBody"]["required"] is True


def test_the_fuzzed_document_is_the_one_served(server: ServerProcess) -> None:
    r = httpx.get(f"{server.url}/openapi.json", headers={"OpenWOP-Version": "2.0"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == orjson.loads(orjson.dumps(DOCUMENT))


@schema.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck))
def test_every_response_is_documented(case: schemathesis.Case, server: ServerProcess, deadline: float) -> None:
    assert time.monotonic() < deadline, f"the fuzz took longer than {BUDGET_S} s"
    call_and_validate(case, server.url, AUTH)


def test_get_on_the_fork_path_is_method_not_allowed(server: ServerProcess) -> None:
    r = httpx.get(f"{server.url}/runs/run-0:fork", headers={**AUTH, "OpenWOP-Version": "2.0"})
    assert r.status_code == 405 and r.headers["allow"] == "POST"


def test_the_document_is_the_same_bytes_in_every_process() -> None:
    # Served at /v2/openapi.json: a client caching it by its bytes (ETag) must not see it change on a restart.
    probe = "import json; from openwop_bridge.host.v2.api import openapi_document; "
    probe += "print(json.dumps(openapi_document()))"
    texts = {
        subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(texts) == 1
