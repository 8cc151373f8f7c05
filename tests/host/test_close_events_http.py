"""Cancelling a run over ``/v1`` and over v2 closes its open interrupts with their events, read back from
each surface's own event log (v1 ``GET /v1/runs/{runId}/events``, v2 ``GET /runs/{runId}/events/poll``)."""

from __future__ import annotations

from typing import Any

import httpx

from openwop_bridge import Engine, spec
from tests.conftest import auth
from tests.helpers import settle
from tests.host import v2_scenario as v2
from tests.host.test_v2_schemas import assert_event


async def _v1_events(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    r = await client.get(f"/v1/runs/{run_id}/events", headers={**auth("admin"), "Accept": "application/json"})
    assert r.status_code == 200, r.text
    docs: list[dict[str, Any]] = r.json()["events"]
    return docs


async def test_a_v1_cancel_resolves_the_open_gate_in_the_v1_log(client: httpx.AsyncClient, engine: Engine) -> None:
    r = await client.post("/v1/runs", json={"workflowId": "conformance-approval"}, headers=auth("admin"))
    run_id = r.json()["runId"]
    await settle(engine, run_id)
    snap = (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()
    interrupt_id = snap["interrupt"]["interruptId"]
    r = await client.post(f"/v1/runs/{run_id}/cancel", json={"reason": "not needed"}, headers=auth("admin"))
    assert r.status_code == 200, r.text
    await settle(engine, run_id, statuses=("cancelled",))
    docs = await _v1_events(client, run_id)
    assert all(not spec.validate_event(d) for d in docs)
    (requested,) = [d for d in docs if d["type"] == "interrupt.requested"]
    (resolved,) = [d for d in docs if d["type"] == "interrupt.resolved"]
    assert requested["interruptId"] == resolved["payload"]["interruptId"] == interrupt_id
    assert resolved["payload"]["reason"] == "not needed" and resolved["payload"]["resolvedBy"] == "alice"
    order = [d["type"] for d in docs]
    assert order.index("interrupt.resolved") < order.index("run.cancelled")


async def test_a_v2_cancel_of_a_quorum_with_a_vote_resolves_it_in_the_v2_log(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    run_id = await v2.create(client, "conformance-interrupt-quorum")
    assert (await v2.wait_status(client, run_id, ("waiting-approval",)))["status"] == "waiting-approval"
    vote = {"resumeValue": {"action": "accept", "voter": "v1"}}
    r = await client.post(f"/runs/{v2.enc(run_id)}/interrupts/gate", json=vote, headers=v2.h())
    assert r.status_code == 200, r.text
    r = await client.post(f"/runs/{v2.enc(run_id)}/cancel", json={}, headers=v2.h())
    assert r.status_code == 200, r.text
    assert (await v2.wait_status(client, run_id, v2.TERMINAL))["status"] == "cancelled"
    docs = await v2.events(client, run_id)
    for doc in docs:
        assert_event(doc)
    (suspended,) = [d for d in docs if d["type"] == "node.suspended"]
    (resolved,) = [d for d in docs if d["type"] == "interrupt.resolved"]
    assert resolved["payload"]["interruptId"] == suspended["payload"]["interruptId"]
    assert resolved["payload"]["interruptId"].startswith(run_id.split("/", 1)[0] + "/")
    assert resolved["payload"]["reason"] == "cancelled"
    types = [d["type"] for d in docs]
    assert types.index("interrupt.resolved") < types.index("run.cancelled")
