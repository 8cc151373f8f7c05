"""``POST /v1/interrupts/batch``: several answers in one request, all or none, or each on its own."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from openwop_bridge import Engine, Workflow
from tests.conftest import auth
from tests.helpers import envelope, events, settle

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

BATCH = "/v1/interrupts/batch"


def _gate(engine: Engine, workflow_id: str, **config: Any) -> None:
    wf = Workflow(workflow_id)
    wf.node("gate", type_id="core.approvalGate", config={"title": "Ship?", "actions": ["accept", "reject"], **config})
    wf.node("after", type_id="core.noop", after="gate")
    wf.register(engine)


async def _waiting(client: httpx.AsyncClient, engine: Engine, workflow: str = "batch-gate", n: int = 1) -> list[str]:
    run_ids = []
    for _ in range(n):
        r = await client.post("/v1/runs", json={"workflowId": workflow}, headers=auth("admin"))
        assert r.status_code == 201, r.text
        run_ids.append(r.json()["runId"])
    for run_id in run_ids:
        await settle(engine, run_id)
    return run_ids


def _items(run_ids: list[str], value: Any = None, node: str = "gate") -> list[dict[str, Any]]:
    return [{"runId": r, "nodeId": node, "resumeValue": value or {"action": "accept"}} for r in run_ids]


async def _untouched(engine: Engine, run_ids: list[str]) -> None:
    for run_id in run_ids:
        record = await engine.store.interrupt_at(run_id, "gate")
        assert record is not None and record.open and not record.state.get("votes"), record
        assert await events(engine, run_id, "approval.received") == []


async def test_an_atomic_batch_applies_every_answer(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "batch-gate")
    run_ids = await _waiting(client, engine, n=3)
    r = await client.post(BATCH, json={"items": _items(run_ids)}, headers=auth("bob"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["atomic"] is True and body["applied"] == 3
    assert [(o["index"], o["runId"], o["status"]) for o in body["items"]] == [
        (i, run_id, "resolved") for i, run_id in enumerate(run_ids)
    ]
    assert all(o["resumeValue"]["action"] == "accept" and o["resumeValue"]["decidedBy"] == "bob" for o in body["items"])
    for run_id in run_ids:
        assert (await settle(engine, run_id)).status == "completed"


async def test_one_refused_item_applies_none(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "batch-gate")
    _gate(engine, "batch-listed", approversList=["carol"])
    open_ids = await _waiting(client, engine, n=2)
    (listed,) = await _waiting(client, engine, "batch-listed")
    items = [*_items(open_ids[:1]), *_items([listed]), *_items(open_ids[1:])]
    refused = envelope(await client.post(BATCH, json={"items": items}, headers=auth("bob")), 403, "forbidden")
    assert "item 1" in refused["message"] and "nothing in the batch was applied" in refused["message"]
    outcomes = refused["details"]["items"]
    assert [o["status"] for o in outcomes] == ["not-applied", "refused", "not-applied"]
    assert outcomes[1]["error"]["error"] == "forbidden" and "approvers" in outcomes[1]["error"]["message"]
    await _untouched(engine, [*open_ids, listed])
    # The preview wrote nothing either: no denial recorded for an item of a batch that was not applied.
    assert await events(engine, listed, "authorization.decided") == []


async def test_an_invalid_answer_or_an_unknown_interrupt_applies_none(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    _gate(engine, "batch-gate")
    run_ids = await _waiting(client, engine, n=2)
    items = [*_items(run_ids[:1]), *_items(run_ids[1:], {"action": "edit-accept"})]
    invalid = envelope(await client.post(BATCH, json={"items": items}, headers=auth("bob")), 400, "validation_error")
    assert [o["status"] for o in invalid["details"]["items"]] == ["not-applied", "refused"]
    unknown = [*_items(run_ids), {"runId": "run_nope", "nodeId": "gate", "resumeValue": {"action": "accept"}}]
    missing = await client.post(BATCH, json={"items": unknown}, headers=auth("bob"))
    assert missing.status_code == 404 and missing.json()["details"]["index"] == 2, missing.text
    await _untouched(engine, run_ids)


async def test_an_item_already_settled_applies_none(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "batch-gate")
    run_ids = await _waiting(client, engine, n=2)
    answered = await client.post(
        f"/v1/runs/{run_ids[1]}/interrupts/gate", json={"resumeValue": {"action": "reject"}}, headers=auth("admin")
    )
    assert answered.status_code == 200
    r = await client.post(BATCH, json={"items": _items(run_ids)}, headers=auth("bob"))
    assert r.status_code == 409 and r.json()["details"]["index"] == 1, r.text
    await _untouched(engine, run_ids[:1])


async def test_without_atomic_each_item_stands_alone(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "batch-gate")
    _gate(engine, "batch-listed", approversList=["carol"])
    (first,) = await _waiting(client, engine)
    (listed,) = await _waiting(client, engine, "batch-listed")
    items = [*_items([first]), *_items([listed]), {"runId": "run_nope", "nodeId": "gate", "resumeValue": True}]
    r = await client.post(BATCH, json={"items": items, "atomic": False}, headers=auth("bob"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["atomic"] is False and body["applied"] == 1
    assert [o["status"] for o in body["items"]] == ["resolved", "refused", "refused"]
    assert body["items"][1]["error"]["error"] == "forbidden"
    assert body["items"][2]["error"]["error"] == "run_not_found"
    assert (await settle(engine, first)).status == "completed"
    await _untouched(engine, [listed])


async def test_a_quorum_vote_in_a_batch_leaves_its_gate_pending(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "batch-pair", requiredApprovals=2)
    run_ids = await _waiting(client, engine, "batch-pair", n=2)
    r = await client.post(BATCH, json={"items": _items(run_ids)}, headers=auth("bob"))
    assert r.status_code == 200, r.text
    assert [o["status"] for o in r.json()["items"]] == ["pending", "pending"]
    again = await client.post(BATCH, json={"items": _items(run_ids)}, headers=auth("admin"))
    assert [o["status"] for o in again.json()["items"]] == ["resolved", "resolved"]


async def test_bounds_duplicates_and_scope(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "batch-gate")
    (run_id,) = await _waiting(client, engine)
    for body in (
        {"items": []},
        {"items": _items([run_id] * 101)},
        {"items": "all"},
        {},
        {"items": _items([run_id]), "atomic": 0},
        {"items": _items([run_id]), "atomic": "yes"},
    ):
        envelope(await client.post(BATCH, json=body, headers=auth("bob")), 400, "validation_error")
    twice = envelope(
        await client.post(BATCH, json={"items": _items([run_id, run_id])}, headers=auth("bob")), 400, "validation_error"
    )
    assert "same interrupt" in twice["message"]
    envelope(await client.post(BATCH, json={"items": _items([run_id])}, headers=auth("reader")), 403, "forbidden")
    other = await client.post(BATCH, json={"items": _items([run_id])}, headers=auth("other"))
    assert other.status_code == 404, other.text
    await _untouched(engine, [run_id])


async def test_a_batch_with_an_idempotency_key_replays_its_reply(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "batch-gate")
    run_ids = await _waiting(client, engine, n=2)
    headers = {**auth("bob"), "Idempotency-Key": "batch-1"}
    first = await client.post(BATCH, json={"items": _items(run_ids)}, headers=headers)
    second = await client.post(BATCH, json={"items": _items(run_ids)}, headers=headers)
    assert first.status_code == second.status_code == 200
    assert second.headers.get("OpenWOP-Idempotent-Replay") == "true" and second.json() == first.json()


async def test_fifty_items_with_one_invalid_apply_none(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "batch-gate")
    run_ids = await _waiting(client, engine, n=50)
    items = _items(run_ids)
    items[37] = {**items[37], "resumeValue": {"action": "maybe"}}
    refused = envelope(await client.post(BATCH, json={"items": items}, headers=auth("bob")), 400, "validation_error")
    assert refused["details"]["index"] == 37
    statuses = [o["status"] for o in refused["details"]["items"]]
    assert statuses.count("not-applied") == 49 and statuses[37] == "refused"
    await _untouched(engine, run_ids)
    assert (await client.post(BATCH, json={"items": _items(run_ids)}, headers=auth("bob"))).json()["applied"] == 50
