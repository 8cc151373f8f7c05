"""Delegation while away: ``/v1/delegations``, and a delegate answering in the delegator's place."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from openwop_bridge import Engine, Principal, Workflow
from openwop_bridge.core.delegations import DelegationExpiredError, DelegationScopeAmplifiedError
from tests.conftest import auth
from tests.helpers import envelope, events, settle

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

HOUR_MS = 3_600_000


def _gate(engine: Engine, workflow_id: str, **config: Any) -> None:
    wf = Workflow(workflow_id)
    wf.node("gate", type_id="core.approvalGate", config={"title": "Pay?", "actions": ["accept", "reject"], **config})
    wf.register(engine)


async def _start(client: httpx.AsyncClient, engine: Engine, workflow: str, who: str = "admin") -> str:
    r = await client.post("/v1/runs", json={"workflowId": workflow}, headers=auth(who))
    assert r.status_code == 201, r.text
    await settle(engine, r.json()["runId"])
    return str(r.json()["runId"])


async def _delegate(client: httpx.AsyncClient, who: str = "admin", **body: Any) -> httpx.Response:
    doc = {"delegate": "bob", "until": int(time.time() * 1000) + HOUR_MS, "reason": "on leave", **body}
    return await client.post("/v1/delegations", json=doc, headers=auth(who))


async def _vote(client: httpx.AsyncClient, run_id: str, value: Any, who: str = "bob") -> httpx.Response:
    return await client.post(f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": value}, headers=auth(who))


async def _open(engine: Engine, run_id: str) -> None:
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None and record.open and not record.state.get("votes"), record


async def test_a_delegate_answers_in_the_delegators_place(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "listed", approversList=["alice", "carol"])
    run_id = await _start(client, engine, "listed", who="operator")
    # Without a delegation bob may not answer as alice.
    envelope(await _vote(client, run_id, {"action": "accept", "voter": "alice"}), 403, "forbidden")
    made = await _delegate(client)
    assert made.status_code == 201, made.text
    delegation = made.json()
    assert (delegation["delegator"], delegation["delegate"], delegation["reason"]) == ("alice", "bob", "on leave")
    seen = (await client.get("/v1/delegations", headers=auth("bob"))).json()["delegations"]
    assert [d["delegationId"] for d in seen] == [delegation["delegationId"]]
    voted = await _vote(client, run_id, {"action": "accept", "voter": "alice"})
    assert voted.status_code == 200 and voted.json()["status"] == "resolved", voted.text
    assert voted.json()["resumeValue"]["decidedBy"] == "alice"
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None
    (vote,) = record.state["votes"]
    assert (vote["voter"], vote["actingPrincipal"], vote["delegation"]) == ("alice", "bob", delegation["delegationId"])
    audit = [a for a in await engine.audit(run_id) if a["action"] == "approval.vote.accept"]
    assert [(a["principal"], a["details"]["actingPrincipal"], a["details"]["delegation"]) for a in audit] == [
        ("alice", "bob", delegation["delegationId"])
    ]
    assert (await settle(engine, run_id)).status == "completed"


async def test_an_ended_or_run_out_delegation_no_longer_answers(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "plain")
    run_id = await _start(client, engine, "plain", who="operator")
    delegation = (await _delegate(client)).json()
    others = await client.delete(f"/v1/delegations/{delegation['delegationId']}", headers=auth("bob"))
    envelope(others, 404, "not_found")  # only its delegator (or an admin) ends it
    ended = await client.delete(f"/v1/delegations/{delegation['delegationId']}", headers=auth("admin"))
    assert ended.status_code == 200 and "endedAt" in ended.json(), ended.text
    envelope(await _vote(client, run_id, {"action": "accept", "voter": "alice"}), 401, "delegation_expired")
    await _open(engine, run_id)
    short = await _delegate(client, until=int(time.time() * 1000) + 300)
    assert short.status_code == 201, short.text
    await asyncio.sleep(0.4)
    envelope(await _vote(client, run_id, {"action": "accept", "voter": "alice"}), 401, "delegation_expired")
    await _open(engine, run_id)


async def test_a_delegation_covers_only_its_workflows(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "covered")
    _gate(engine, "not-covered")
    assert (await _delegate(client, workflows=["covered"])).status_code == 201
    outside = await _start(client, engine, "not-covered", who="operator")
    envelope(await _vote(client, outside, {"action": "accept", "voter": "alice"}), 403, "forbidden")
    await _open(engine, outside)
    inside = await _start(client, engine, "covered", who="operator")
    # Named as decidedBy, the answer's other spelling of its voter, the delegation is found the same way.
    assert (await _vote(client, inside, {"action": "accept", "decidedBy": "alice"})).status_code == 200


async def test_one_human_one_vote(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "pair", requiredApprovals=2, approversList=["alice", "bob"])
    assert (await _delegate(client)).status_code == 201
    for first, second in (({"action": "accept"}, {"action": "accept", "voter": "alice"}),) * 1 + (
        ({"action": "accept", "voter": "alice"}, {"action": "accept"}),
    ):
        run_id = await _start(client, engine, "pair", who="operator")
        assert (await _vote(client, run_id, first)).json()["status"] == "pending"
        again = await _vote(client, run_id, second)
        assert again.status_code == 200 and again.json()["duplicate"] is True, again.text
        assert again.json()["votes"]["accept"] == 1


async def test_separation_of_duties_holds_for_the_delegate(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "separated", separationOfDuties=True)
    assert (await _delegate(client)).status_code == 201
    by_alice = await _start(client, engine, "separated", who="admin")
    refused = envelope(await _vote(client, by_alice, {"action": "accept", "voter": "alice"}), 403, "forbidden")
    assert "separation of duties" in refused["message"]
    by_bob = await _start(client, engine, "separated", who="bob")
    refused = envelope(await _vote(client, by_bob, {"action": "accept", "voter": "alice"}), 403, "forbidden")
    assert "separation of duties" in refused["message"]
    for run_id in (by_alice, by_bob):
        await _open(engine, run_id)


async def test_a_delegate_never_holds_more_than_the_delegator(engine: Engine) -> None:
    _gate(engine, "finance-only", requiredRole="finance")
    dana = Principal("dana", scopes=frozenset({"approvals:respond", "runs:create", "runs:read"}))
    erin = Principal("erin", scopes=frozenset({"approvals:respond"}), roles=frozenset({"finance"}))
    await engine.create_delegation(dana, delegate="erin", until_ms=int(time.time() * 1000) + HOUR_MS)
    run = await engine.create_run(dana, "finance-only")
    await settle(engine, run.run_id)
    with pytest.raises(DelegationScopeAmplifiedError) as caught:
        await engine.resolve(erin, {"action": "accept", "voter": "dana"}, run_id=run.run_id, node_id="gate")
    assert caught.value.status == 403 and "finance" in caught.value.message
    await _open(engine, run.run_id)
    assert await events(engine, run.run_id, "approval.received") == []
    done = await engine.resolve(erin, {"action": "accept"}, run_id=run.run_id, node_id="gate")  # as herself
    assert done["status"] == "resolved"


async def test_making_a_delegation_is_checked(client: httpx.AsyncClient) -> None:
    now = int(time.time() * 1000)
    for body in (
        {"delegate": "alice"},
        {"until": now - 1000},
        {"until": now + 91 * 24 * HOUR_MS},
        {"until": "next week"},
        {"until": "2026-12-24T09:00:00"},
        {"workflows": ["w"] * 51},
        {"colour": "blue"},
    ):
        envelope(await _delegate(client, **body), 400, "validation_error")
    envelope(await _delegate(client, who="bob", delegate="carol", delegator="alice"), 403, "forbidden")
    envelope(await _delegate(client, who="reader"), 403, "forbidden")
    made = await _delegate(client, delegate="dave", delegator="carol")  # an admin, for someone else
    assert made.status_code == 201 and made.json()["createdBy"] == "alice", made.text
    iso = await _delegate(client, until="2099-01-01T00:00:00Z", **{"from": "2098-12-24T00:00:00Z"})
    assert iso.status_code == 201 and iso.json()["from"].startswith("2098-12-24"), iso.text
    listed = (await client.get("/v1/delegations", headers=auth("admin"))).json()["delegations"]
    assert {d["delegator"] for d in listed} == {"alice", "carol"}
    assert (await client.get("/v1/delegations", headers=auth("other"))).json()["delegations"] == []


async def test_standing_delegations_are_read_again_within_seconds_and_run_out_at_once(engine: Engine) -> None:
    from openwop_bridge.core.delegations import Delegation
    from openwop_bridge.runtime.delegations import CACHE_MS, NAMESPACE

    alice = Principal("alice", scopes=frozenset({"approvals:respond"}))
    now = int(time.time() * 1000)

    async def standing() -> list[str]:
        return [d.delegation_id for d in await engine.standing_delegations("default", "alice")]

    assert await standing() == []
    # Made on another instance: in the shared store, not through this one.
    elsewhere = Delegation("dlg_elsewhere", "default", "alice", "bob", now, now + HOUR_MS, created_at_ms=now)
    await engine.adapter_state(NAMESPACE).put("default\x1falice\x1fdlg_elsewhere", elsewhere.as_json())
    assert await standing() == [], "read a moment ago"
    await asyncio.sleep(CACHE_MS / 1000 + 0.1)
    assert await standing() == ["dlg_elsewhere"]
    # Made here: counts at once, the newest first; running out stops it at once.
    made = await engine.create_delegation(alice, delegate="carol", until_ms=int(time.time() * 1000) + 400)
    assert await standing() == [made.delegation_id, "dlg_elsewhere"]
    await asyncio.sleep(0.5)
    assert await standing() == ["dlg_elsewhere"]
    # Ended here: at once.
    await engine.end_delegation(alice, "dlg_elsewhere")
    assert await standing() == []
    assert await engine.standing_delegations("default", "nobody") == []


async def test_a_preview_takes_the_delegation_as_the_answer_would(engine: Engine) -> None:
    _gate(engine, "previewed", approversList=["alice"])
    alice = Principal("alice", roles=frozenset({"admin"}))
    bob = Principal("bob", scopes=frozenset({"approvals:respond", "runs:read"}))
    run = await engine.create_run(alice, "previewed")
    await settle(engine, run.run_id)
    record = await engine.store.interrupt_at(run.run_id, "gate")
    assert record is not None
    value = {"action": "accept", "voter": "alice"}
    made = await engine.create_delegation(alice, delegate="bob", until_ms=int(time.time() * 1000) + HOUR_MS)
    await engine.preview_answer(bob, value, interrupt_id=record.interrupt_id)  # what resolve would take
    await engine.end_delegation(alice, made.delegation_id)
    with pytest.raises(DelegationExpiredError) as caught:
        await engine.preview_answer(bob, value, interrupt_id=record.interrupt_id)
    assert caught.value.details == {"delegationId": made.delegation_id}
    await _open(engine, run.run_id)
