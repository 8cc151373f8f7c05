"""What a hostile or broken client cannot do to the host: deep JSON, bad hosts, odd links, slow or huge requests."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from adapters.agui import agui_routes
from bridge import Engine
from bridge.auth import KeyRing
from bridge.http import create_app
from bridge.http.body import MAX_JSON_DEPTH
from tests.conftest import KEYS, auth
from tests.helpers import settle


def nested(depth: int) -> Any:
    """A JSON value ``depth`` containers deep (alternating arrays and objects)."""
    value: Any = 1
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def _envelope(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    assert body["error"] == code and body["message"]
    return body


async def test_json_nested_at_the_limit_is_accepted_and_its_run_reads_back(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    # The body itself is {"inputs": {"v": ...}}: two containers around the value.
    inputs = {"v": nested(MAX_JSON_DEPTH - 2)}
    r = await client.post(
        "/v1/runs", json={"workflowId": "conformance-approval", "inputs": inputs}, headers=auth("admin")
    )
    assert r.status_code == 201, r.text
    run_id = r.json()["runId"]
    await settle(engine, run_id)
    for path in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/events", f"/v1/runs/{run_id}/events/poll?timeout=0"):
        got = await client.get(path, headers={**auth("admin"), "accept": "application/json"})
        assert got.status_code == 200, (path, got.text)


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 250, 252, 600, 1023, 1100])
async def test_json_nested_deeper_than_the_limit_is_a_400(client: httpx.AsyncClient, depth: int) -> None:
    # Written by hand: the standard library's encoder would hit the recursion limit first.
    raw = b'{"workflowId": "conformance-approval", "inputs": {"v": ' + b"[" * (depth - 2) + b"]" * (depth - 2) + b"}}"
    r = await client.post("/v1/runs", content=raw, headers={**auth("admin"), "content-type": "application/json"})
    problem = _envelope(r, 400, "validation_error")
    assert problem["details"] == {"maxDepth": MAX_JSON_DEPTH}


async def test_deep_resume_values_are_refused_before_the_engine_sees_them(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    r = await client.post("/v1/runs", json={"workflowId": "conformance-approval"}, headers=auth("admin"))
    run_id = r.json()["runId"]
    await settle(engine, run_id)
    deep = {"resumeValue": {"action": "accept", "comment": nested(300)}}
    _envelope(
        await client.post(f"/v1/runs/{run_id}/interrupts/gate", json=deep, headers=auth("admin")),
        400,
        "validation_error",
    )
    assert (await engine.store.interrupt_at(run_id, "gate")).open


async def test_agui_bodies_share_the_nesting_limit(engine: Engine) -> None:
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False, extra_routes=agui_routes(engine))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test") as c:
        body = {"threadId": "t-deep", "runId": "r1", "messages": [], "state": nested(400)}
        r = await c.post("/agui/conformance-approval", json=body, headers=auth("admin"))
    _envelope(r, 400, "validation_error")
