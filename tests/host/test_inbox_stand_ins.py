"""``GET /ui/api/inbox/for``: which listed approvals the caller may answer in someone else's place, as the
decision would take that answer (the delegator's rights, approvers, separation of duties, an empty slot)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from openwop_bridge import Engine, Principal, Workflow
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.host.app import create_app
from openwop_bridge.host.web import web_routes
from tests.conftest import KEYS, auth
from tests.helpers import envelope, settle

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

HOUR_MS = 3_600_000


@pytest.fixture
async def web(engine: Engine) -> AsyncIterator[httpx.AsyncClient]:
    """The host with the inbox's routes, in process."""
    app = create_app(engine, KeyRing(KEYS.values()), extra_routes=web_routes(), manage_engine=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test") as c:
        yield c


def _gate(engine: Engine, workflow_id: str, **config: Any) -> None:
    wf = Workflow(workflow_id)
    wf.node("gate", type_id="core.approvalGate", config={"title": workflow_id, **config})
    wf.register(engine)


async def _waiting(web: httpx.AsyncClient, engine: Engine, workflow: str, who: str = "operator") -> str:
    """Start a run as ``who``; the interrupt id of the gate it waits at."""
    r = await web.post("/v1/runs", json={"workflowId": workflow}, headers=auth(who))
    assert r.status_code == 201, r.text
    run_id = r.json()["runId"]
    await settle(engine, run_id)
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None and record.open
    return record.interrupt_id


async def _for(web: httpx.AsyncClient, ids: list[str], who: str = "bob") -> dict[str, Any]:
    r = await web.get("/ui/api/inbox/for", params=[("id", i) for i in ids], headers=auth(who))
    assert r.status_code == 200, r.text
    items: dict[str, Any] = r.json()["items"]
    return items


async def test_the_inbox_learns_whom_a_delegate_may_answer_for(web: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "alone", approversList=["alice"])
    _gate(engine, "pair", approversList=["alice", "bob"], requiredApprovals=2)
    _gate(engine, "bobs", approversList=["bob"])
    _gate(engine, "separated", separationOfDuties=True)
    alone = await _waiting(web, engine, "alone")
    pair = await _waiting(web, engine, "pair")
    bobs = await _waiting(web, engine, "bobs")
    separated = await _waiting(web, engine, "separated", who="admin")  # alice asked: her delegate may not decide
    ids = [alone, pair, bobs, separated, "intr_none"]
    assert await _for(web, ids) == {}  # nothing delegated yet

    until = int(time.time() * 1000) + HOUR_MS
    made = await web.post("/v1/delegations", json={"delegate": "bob", "until": until}, headers=auth("admin"))
    assert made.status_code == 201, made.text
    delegation = made.json()
    slot = [{"delegator": "alice", "delegationId": delegation["delegationId"], "until": delegation["until"]}]
    assert await _for(web, ids) == {alone: {"own": False, "for": slot}, pair: {"own": True, "for": slot}}
    assert await _for(web, ids, who="admin") == {}  # alice stands in for no one

    # Once alice's slot is filled (bob answering for her), bob no longer answers for her there.
    voted = await web.post(
        f"/v1/runs/{(await engine.store.get_interrupt(pair)).run_id}/interrupts/gate",  # type: ignore[union-attr]
        json={"resumeValue": {"action": "accept", "voter": "alice"}},
        headers=auth("bob"),
    )
    assert voted.status_code == 200 and voted.json()["status"] == "pending", voted.text
    assert set(await _for(web, ids)) == {alone}

    ended = await web.delete(f"/v1/delegations/{delegation['delegationId']}", headers=auth("admin"))
    assert ended.status_code == 200, ended.text
    assert await _for(web, ids) == {}


async def test_asking_is_checked(web: httpx.AsyncClient) -> None:
    too_many = await web.get("/ui/api/inbox/for", params=[("id", f"i{n}") for n in range(501)], headers=auth("bob"))
    envelope(too_many, 400, "validation_error")
    envelope(await web.get("/ui/api/inbox/for", params={"id": "x"}, headers=auth("reader")), 403, "forbidden")
    envelope(await web.get("/ui/api/inbox/for", params={"id": "x"}), 401, "unauthenticated")


async def test_a_delegate_is_offered_only_what_the_delegators_rights_and_workflows_allow(engine: Engine) -> None:
    _gate(engine, "finance-only", requiredRole="finance")
    _gate(engine, "elsewhere")
    dana = Principal("dana", scopes=frozenset({"approvals:respond", "runs:create", "runs:read"}))
    erin = Principal("erin", scopes=frozenset({"approvals:respond"}), roles=frozenset({"finance"}))
    until = int(time.time() * 1000) + HOUR_MS
    await engine.create_delegation(dana, delegate="erin", until_ms=until, workflows=["finance-only"])
    ids = []
    for workflow in ("finance-only", "elsewhere"):
        run = await engine.create_run(dana, workflow)
        await settle(engine, run.run_id)
        record = await engine.store.interrupt_at(run.run_id, "gate")
        assert record is not None
        ids.append(record.interrupt_id)
    # dana lacks the finance role (erin holds it, but answers for dana with dana's rights), and her
    # delegation does not cover the other workflow: erin answers neither for her.
    assert await engine.stand_ins(erin, ids) == []
    record = await engine.store.get_interrupt(ids[0])
    assert record is not None and await engine.may_answer(erin, record)  # as herself she may
