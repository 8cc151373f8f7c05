"""A schema-driven fuzz of the served host against its own ``GET /v1/openapi.json``.

Schemathesis generates requests from the document (its examples, boundary
values, negative data and unsupported methods, plus a few random cases per
operation) and sends them to a real ``openwop-bridge serve`` on loopback with a
valid admin key. Every response must be documented: no 5xx, a status code and
content type the document lists, a body matching its schema, ``Allow`` on 405.
"""

from __future__ import annotations

import time

import httpx
import orjson
import schemathesis
from hypothesis import HealthCheck, settings

from openwop_bridge.a2a.openapi import a2a_openapi
from openwop_bridge.agui.openapi import agui_openapi
from openwop_bridge.host.http.openapi import web_fragment
from openwop_bridge.host.v1.api import openapi_document
from openwop_bridge.langgraph_api.openapi import langgraph_openapi
from tests.fuzz import BUDGET_S, call_and_validate, fuzz_fixtures, fuzz_schema
from tests.server import ServerProcess

KEY = "fuzz-key-0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}

#: What ``openwop-bridge serve`` documents with its default plugins and the web pages.
DOCUMENT = openapi_document([web_fragment(), agui_openapi(), langgraph_openapi(), a2a_openapi()], link_page=True)

schema = fuzz_schema(DOCUMENT)
# A valid key answers with a live stream that only ends after its lifetime; its
# headers and content type are checked by test_inbox_stream_is_an_event_stream.
fuzzed = schema.exclude(path="/ui/api/inbox/events")


server, deadline = fuzz_fixtures("fuzz", KEY)


def test_the_fuzzed_document_is_the_one_served(server: ServerProcess) -> None:
    r = httpx.get(f"{server.url}/v1/openapi.json")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == orjson.loads(orjson.dumps(DOCUMENT))
    for path in (
        "/agui/{workflowId}",
        "/langgraph/threads/{thread_id}",
        "/a2a",
        "/.well-known/agent-card.json",
        "/healthz",
        "/ui/",
        "/ui/api/me",
        "/ui/static/{path}",
    ):
        assert path in r.json()["paths"], path


@fuzzed.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck))
def test_every_response_is_documented(case: schemathesis.Case, server: ServerProcess, deadline: float) -> None:
    assert time.monotonic() < deadline, f"the fuzz took longer than {BUDGET_S} s"
    call_and_validate(case, server.url, AUTH)


def test_inbox_stream_is_an_event_stream(server: ServerProcess) -> None:
    with httpx.stream("GET", f"{server.url}/ui/api/inbox/events", headers=AUTH, timeout=10) as r:
        assert r.status_code == 200
        documented = DOCUMENT["paths"]["/ui/api/inbox/events"]["get"]["responses"]["200"]["content"]
        assert r.headers["content-type"].split(";")[0] in documented
    r = httpx.get(f"{server.url}/ui/api/inbox/events")
    assert r.status_code == 401 and r.json()["error"] == "unauthenticated"


def test_a_cursor_this_host_did_not_issue_is_a_400(server: ServerProcess) -> None:
    # Schema-valid (a cursor is an opaque string), so the fuzz may draw one: call_and_validate allows its 400.
    for cursor in ("\U00104f1f\U00047947", "bm90IGEgY3Vyc29y", "WzEsMl0"):
        r = httpx.get(f"{server.url}/v1/interrupts", params={"cursor": cursor, "status": "expired"}, headers=AUTH)
        assert r.status_code == 400 and r.json() == {"error": "validation_error", "message": "malformed cursor"}
