"""What ``GET /v1/openapi.json`` promises, checked against the host, endpoint by endpoint."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from openwop_bridge import Engine
from tests.conftest import auth
from tests.helpers import settle

JSON = {**auth("admin"), "Content-Type": "application/json"}


async def _document(client: httpx.AsyncClient) -> dict[str, Any]:
    r = await client.get("/v1/openapi.json")
    assert r.status_code == 200
    doc: dict[str, Any] = r.json()
    return doc


async def _start(client: httpx.AsyncClient, engine: Engine, workflow: str = "conformance-approval") -> str:
    r = await client.post("/v1/runs", json={"workflowId": workflow}, headers=auth("admin"))
    assert r.status_code == 201, r.text
    run_id: str = r.json()["runId"]
    await settle(engine, run_id)
    return run_id


def _error(r: httpx.Response, status: int, code: str) -> None:
    assert r.status_code == status, r.text
    assert r.json()["error"] == code


async def test_optional_bodies_are_absent_or_an_object_never_null(client: httpx.AsyncClient, engine: Engine) -> None:
    doc = await _document(client)
    run_id = await _start(client, engine)
    for path in (f"/v1/runs/{run_id}:fork", f"/v1/runs/{run_id}/cancel", f"/v1/runs/{run_id}/interrupts/gate/cancel"):
        _error(await client.post(path, content=b"null", headers=JSON), 400, "validation_error")
        _error(await client.post(path, content=b"[]", headers=JSON), 400, "validation_error")
    for template in ("/v1/runs/{runId}:fork", "/v1/runs/{runId}/cancel", "/v1/runs/{runId}/interrupts/{nodeId}/cancel"):
        body = doc["paths"][template]["post"]["requestBody"]
        assert body["required"] is False
        ref = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        assert doc["components"]["schemas"][ref]["type"] == "object"
    # The interrupt's cancel body is the documented closed object.
    cancel = f"/v1/runs/{run_id}/interrupts/gate/cancel"
    _error(await client.post(cancel, json={"reason": "x", "extra": 1}, headers=auth("admin")), 400, "validation_error")
    _error(await client.post(cancel, json={"reason": "x" * 1001}, headers=auth("admin")), 400, "validation_error")
    r = await client.post(cancel, json={"reason": "no longer needed"}, headers=auth("admin"))
    assert r.status_code == 200, r.text
    # Absent bodies are fine.
    forked = await client.post(f"/v1/runs/{run_id}:fork", headers=auth("admin"))
    assert forked.status_code == 201, forked.text
    assert (await client.post(f"/v1/runs/{run_id}/cancel", headers=auth("admin"))).status_code == 200


async def test_405_names_every_method_of_the_path(client: httpx.AsyncClient) -> None:
    doc = await _document(client)
    for path, concrete in (
        ("/v1/runs", "/v1/runs"),
        ("/v1/interrupts/{token}", "/v1/interrupts/abc"),
        ("/v1/runs/{runId}/interrupts/{nodeId}", "/v1/runs/r/interrupts/n"),
        ("/v1/runs/{runId}", "/v1/runs/r"),
    ):
        r = await client.request("DELETE", concrete, headers=auth("admin"))
        _error(r, 405, "method_not_allowed")
        allowed = {m.strip().lower() for m in r.headers["allow"].split(",")}
        assert allowed - {"head"} == set(doc["paths"][path]), (path, allowed)


@pytest.mark.parametrize(("path", "name"), [("/v1/runs", "limit"), ("/v1/interrupts", "limit")])
async def test_documented_bounds_are_the_enforced_ones(client: httpx.AsyncClient, path: str, name: str) -> None:
    doc = await _document(client)
    (param,) = [p for p in doc["paths"][path]["get"]["parameters"] if p["name"] == name]
    low, high = param["schema"]["minimum"], param["schema"]["maximum"]
    for ok in (low, high):
        assert (await client.get(path, params={name: ok}, headers=auth("admin"))).status_code == 200
    for bad in (low - 1, high + 1):
        _error(await client.get(path, params={name: bad}, headers=auth("admin")), 400, "validation_error")


async def test_events_document_both_media_types_and_400(client: httpx.AsyncClient, engine: Engine) -> None:
    doc = await _document(client)
    op = doc["paths"]["/v1/runs/{runId}/events"]["get"]
    assert set(op["responses"]["200"]["content"]) == {"text/event-stream", "application/json"}
    assert "400" in op["responses"]
    run_id = await _start(client, engine)
    r = await client.get(f"/v1/runs/{run_id}/events", headers={**auth("admin"), "Last-Event-ID": "x"})
    _error(r, 400, "validation_error")


async def test_documented_statuses_that_the_host_returns(client: httpx.AsyncClient, engine: Engine) -> None:
    doc = await _document(client)
    run_id = await _start(client, engine)
    assert (await client.post(f"/v1/runs/{run_id}/cancel", headers=auth("admin"))).status_code == 200
    await settle(engine, run_id, statuses=("cancelled",))
    r = await client.post(f"/v1/runs/{run_id}/interrupts/gate/cancel", headers=auth("admin"))
    assert str(r.status_code) in doc["paths"]["/v1/runs/{runId}/interrupts/{nodeId}/cancel"]["post"]["responses"]
    for template in (
        "/v1/runs",
        "/v1/runs/{runId}/interrupts/{nodeId}",
        "/v1/interrupts/{token}",
        "/v1/runs/{runId}/approvals/{nodeId}",
    ):
        op = doc["paths"][template]["post"]
        assert "Idempotency-Key" in [p["name"] for p in op["parameters"]], template
        assert "idempotency_key_mismatch" in op["responses"]["409"]["description"], template
    assert {"200", "400", "404", "409"} <= set(doc["paths"]["/v1/runs/{runId}/approvals/{nodeId}"]["post"]["responses"])
    assert "/healthz" in doc["paths"]
