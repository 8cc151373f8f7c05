"""Against real uvicorn on loopback: live SSE, keep-alives, concurrent resolution."""

from __future__ import annotations

import asyncio

import httpx

from openwop_bridge import Engine
from tests.conftest import auth
from tests.helpers import event_types, settle


async def _start(client: httpx.AsyncClient, engine: Engine, workflow: str) -> str:
    r = await client.post("/v1/runs", json={"workflowId": workflow}, headers=auth("admin"))
    assert r.status_code == 201, r.text
    run_id: str = r.json()["runId"]
    await settle(engine, run_id)
    return run_id


async def test_sse_streams_live_with_keepalives_and_closes_at_the_end(
    live: tuple[str, httpx.AsyncClient], engine: Engine
) -> None:
    _, client = live
    run_id = await _start(client, engine, "conformance-approval")
    received: list[str] = []

    async def read() -> None:
        async with client.stream("GET", f"/v1/runs/{run_id}/events", headers=auth("admin")) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            async for line in response.aiter_lines():
                received.append(line)

    reader = asyncio.create_task(read())
    await asyncio.sleep(0.6)
    assert ": keep-alive" in received
    assert received.count("event: interrupt.requested") == 1
    await client.post(
        f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
    )
    await asyncio.wait_for(reader, 5)
    kinds = [line[7:] for line in received if line.startswith("event: ")]
    ids = [int(line[4:]) for line in received if line.startswith("id: ")]
    assert kinds[-1] == "run.completed" and "interrupt.resolved" in kinds
    assert ids == list(range(len(ids)))


async def test_a_dropped_sse_client_does_not_disturb_the_run(
    live: tuple[str, httpx.AsyncClient], engine: Engine
) -> None:
    url, client = live
    run_id = await _start(client, engine, "conformance-approval")
    async with (
        httpx.AsyncClient(base_url=url) as other,
        other.stream("GET", f"/v1/runs/{run_id}/events", headers=auth("admin")) as response,
    ):
        async for line in response.aiter_lines():
            if line.startswith("event: node.suspended"):
                break
    await asyncio.sleep(0.1)
    assert engine.hub.subscriber_count(run_id) == 0
    r = await client.post(
        f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
    )
    assert r.status_code == 200
    assert (await settle(engine, run_id)).status == "completed"


async def test_many_concurrent_resolves_exactly_one_wins(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    url, _ = live
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=20) as client:
        run_id = await _start(client, engine, "conformance-approval")
        responses = await asyncio.gather(
            *(
                client.post(
                    f"/v1/runs/{run_id}/interrupts/gate",
                    json={"resumeValue": {"action": "accept"}},
                    headers=auth("admin" if i % 2 else "bob"),
                )
                for i in range(64)
            )
        )
    statuses = sorted(r.status_code for r in responses)
    assert statuses.count(200) == 1 and statuses.count(409) == 63
    assert all(r.json()["error"] == "interrupt_already_resolved" for r in responses if r.status_code == 409)
    await settle(engine, run_id)
    types = await event_types(engine, run_id)
    assert types.count("interrupt.resolved") == 1 and types.count("approval.received") == 1
    assert types[-1] == "run.completed"
