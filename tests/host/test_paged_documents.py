"""Whole JSON documents of a run's events (``{events}``, long polls) are written a page at a time,
and are byte for byte the documents built whole."""

from __future__ import annotations

import httpx
import orjson
import pytest

from openwop_bridge import Engine
from openwop_bridge.host.http import paged
from openwop_bridge.host.v2 import documents, ids
from tests.conftest import auth
from tests.helpers import created_waiting, settle


async def _completed(client: httpx.AsyncClient, engine: Engine) -> str:
    """A run of ``conformance-approval`` answered and completed (its log ends with ``run.completed``)."""
    run_id = await created_waiting(client, engine, auth("admin"))
    r = await client.post(
        f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
    )
    assert r.status_code == 200, r.text
    assert (await settle(engine, run_id)).status == "completed"
    return run_id


async def test_a_read_of_large_events_holds_no_more_than_its_byte_budget(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    run_id = await _completed(client, engine)
    log = await engine.store.read_events(run_id, -1, 100)
    sizes = await engine.store.event_sizes(run_id, -1, 100)
    assert len(sizes) == len(log) > 3
    assert all(size >= len(orjson.dumps(doc)) * 0.5 for size, doc in zip(sizes, log, strict=True))
    assert await engine.run_events(run_id, -1, 100, max_bytes=1) == log[:1]  # at least one event
    assert await engine.run_events(run_id, -1, 100, max_bytes=sizes[0] + sizes[1]) == log[:2]
    assert await engine.run_events(run_id, 0, 100, max_bytes=sizes[1] + sizes[2] + sizes[3] - 1) == log[1:3]
    assert await engine.run_events(run_id, -1, 2, max_bytes=10**9) == log[:2]
    assert await engine.run_events(run_id, log[-1]["sequence"], 100, max_bytes=10) == []


@pytest.mark.parametrize("budget", [None, 1], ids=["one-page", "a-page-per-event"])
async def test_the_json_events_document_is_the_stored_log_byte_for_byte(
    client: httpx.AsyncClient, engine: Engine, monkeypatch: pytest.MonkeyPatch, budget: int | None
) -> None:
    if budget is not None:
        monkeypatch.setattr(paged, "PAGE_BYTES", budget)
    run_id = await _completed(client, engine)
    log = await engine.store.read_events(run_id, -1, 10_000)
    json_accept = {**auth("reader"), "accept": "application/json"}
    r = await client.get(f"/v1/runs/{run_id}/events", headers=json_accept)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.content == orjson.dumps({"events": log})
    r = await client.get(f"/v1/runs/{run_id}/events?limit=2", headers={**json_accept, "last-event-id": "1"})
    assert r.content == orjson.dumps({"events": log[2:4]})
    r = await client.get(f"/v1/runs/{run_id}/events", headers={**json_accept, "last-event-id": "999"})
    assert r.content == b'{"events":[]}'


async def test_pages_of_one_event_make_the_same_document(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _completed(client, engine)
    log = await engine.store.read_events(run_id, -1, 10_000)
    pieces = [
        chunk
        async for chunk in paged.array_document(
            {"runId": "r"}, "events", paged.StoredEvents(engine, run_id, -1, 10_000, budget=1).pages()
        )
    ]
    assert len(pieces) == len(log) + 1  # one event a page, then the end
    assert [more for _, more in pieces] == [True] * len(log) + [False]
    assert b"".join(data for data, _ in pieces) == orjson.dumps({"runId": "r", "events": log})


@pytest.mark.parametrize("budget", [None, 1], ids=["one-page", "a-page-per-event"])
async def test_long_polls_answer_the_documents_built_whole(
    client: httpx.AsyncClient, engine: Engine, monkeypatch: pytest.MonkeyPatch, budget: int | None
) -> None:
    if budget is not None:
        monkeypatch.setattr(paged, "PAGE_BYTES", budget)
    run_id = await _completed(client, engine)
    log = await engine.store.read_events(run_id, -1, 10_000)
    run = await engine.run_record(run_id)
    assert run is not None
    r = await client.get(f"/v1/runs/{run_id}/events/poll?lastSequence=0", headers=auth("reader"))
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    expected = {"events": log[1:], "isComplete": True, "lastSequence": log[-1]["sequence"], "status": "completed"}
    assert r.content == orjson.dumps(expected)
    r = await client.get(f"/v1/runs/{run_id}/events/poll?lastSequence={log[-1]['sequence']}", headers=auth("reader"))
    last = log[-1]["sequence"]
    assert r.content == orjson.dumps({"events": [], "isComplete": True, "lastSequence": last, "status": "completed"})

    v2 = {**auth("reader"), "openwop-version": "2"}
    bound = ids.bind(run.tenant, run_id)
    r = await client.get(f"/runs/{ids.project(bound)}/events/poll?afterSequence=0&timeout=1", headers=v2)
    assert r.status_code == 200, r.text
    body = r.json()
    assert list(body) == ["runId", "events", "lastSequence", "status", "isTerminal"]
    assert [e["sequence"] for e in body["events"]] == [d["sequence"] for d in log[1:]]
    assert body["events"][0] == documents.event(log[1], run.tenant)
    assert (body["runId"], body["lastSequence"], body["status"], body["isTerminal"]) == (
        bound,
        last,
        "completed",
        True,
    )
    assert r.content == orjson.dumps(body)
