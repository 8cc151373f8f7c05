"""Delegation while away over v2: ``/delegations`` made, listed and ended, its refusals in the v2 envelope, and a
decision made in someone's place read through v2 as theirs with the one who acted as the Subject's ``actor``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from openwop_bridge import Engine, Principal, Workflow
from openwop_bridge.core.auth import Subject
from openwop_bridge.core.views import interrupt_view
from openwop_bridge.host.v2 import documents, ids, subjects
from openwop_bridge.spec import v2 as spec
from tests.conftest import auth
from tests.helpers import settle
from tests.host.test_v2_openapi_bodies import Document
from tests.host.test_v2_schemas import assert_envelope
from tests.host.v2_scenario import V2, enc, events, wait_status

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

HOUR_MS = 3_600_000
IDP = Subject(issuer="https://idp.example.com", subject_id="bob-248289761001", lane="oidc")


def _h(who: str = "admin") -> dict[str, str]:
    return {**auth(who), **V2}


def _until(ms: int = HOUR_MS) -> int:
    return int(time.time() * 1000) + ms


def _gate(engine: Engine, workflow_id: str, **config: Any) -> None:
    wf = Workflow(workflow_id)
    wf.node("gate", type_id="core.approvalGate", config={"title": "Pay?", "actions": ["accept", "reject"], **config})
    wf.register(engine)


async def _delegate(http: httpx.AsyncClient, who: str = "admin", **body: Any) -> httpx.Response:
    doc = {"delegate": "bob", "until": _until(), "reason": "on leave", **body}
    return await http.post("/delegations", json=doc, headers=_h(who))


async def _waiting(http: httpx.AsyncClient, engine: Engine, workflow_id: str) -> str:
    """A run of ``workflow_id`` started over v2 by the operator, waiting at its gate: its bound id."""
    made = await http.post("/runs", json={"workflowId": workflow_id}, headers=_h("operator"))
    assert made.status_code == 201, made.text
    run_id: str = made.json()["runId"]
    await settle(engine, ids.engine_id(run_id.split("/", 1)[1]))
    return run_id


async def _vote(http: httpx.AsyncClient, run_id: str, value: dict[str, Any], who: str = "bob") -> httpx.Response:
    return await http.post(f"/runs/{enc(run_id)}/interrupts/gate", json={"resumeValue": value}, headers=_h(who))


def _subject(principal_id: str, actor: dict[str, Any] | None = None) -> dict[str, Any]:
    """The v2 Subject of an API-key principal of the default tenant (acted for by ``actor``)."""
    return subjects.of("default", principal_id, None, actor)


def _valid_subject(subject: dict[str, Any]) -> dict[str, Any]:
    assert spec.problems("subject.schema.json", subject) == [], subject
    return subject


async def test_delegations_are_made_listed_and_ended_over_v2(live: tuple[str, httpx.AsyncClient]) -> None:
    _, http = live
    doc = Document((await http.get("/openapi.json", headers=V2)).json())
    made = await _delegate(http, workflows=["payments"])
    assert made.status_code == 201 and made.headers["openwop-version"] == "2.0", made.text
    delegation = made.json()
    assert doc.problems("/delegations", "post", delegation, "201") == []
    assert spec.problems("ids.schema.json", delegation["delegationId"], "/$defs/runId") == []  # tenant-bound
    assert delegation["delegationId"].startswith("default/dlg-")
    assert _valid_subject(delegation["delegator"]) == _subject("alice")
    assert (delegation["delegate"], delegation["createdBy"]) == (_subject("bob"), _subject("alice"))
    assert (delegation["workflows"], delegation["reason"], "endedAt" in delegation) == (["payments"], "on leave", False)
    assert delegation["until"].endswith("Z") and delegation["from"] <= delegation["createdAt"]
    # One delegation, two majors: /v1 lists it under its engine id.
    (v1,) = (await http.get("/v1/delegations", headers=auth("bob"))).json()["delegations"]
    assert ids.bind("default", v1["delegationId"]) == delegation["delegationId"]
    for who in ("bob", "admin"):
        listed = await http.get("/delegations", headers=_h(who))
        assert listed.status_code == 200 and doc.problems("/delegations", "get", listed.json()) == []
        assert [d["delegationId"] for d in listed.json()["delegations"]] == [delegation["delegationId"]]
    assert (await http.get("/delegations", headers=_h("operator"))).json() == {"delegations": []}
    path = f"/delegations/{ids.project(delegation['delegationId'])}"
    assert_envelope(await http.delete(path, headers=_h("bob")), 404, "not_found")  # only its delegator or an admin
    ended = await http.delete(path, headers=_h("admin"))
    assert ended.status_code == 200 and doc.problems("/delegations/{delegationId}", "delete", ended.json()) == []
    assert ended.json()["endedAt"] >= delegation["createdAt"]
    # Percent-encoded, or the v1 id: the same delegation; ending it again changes nothing.
    for spelled in (enc(delegation["delegationId"]), v1["delegationId"]):
        again = await http.delete(f"/delegations/{spelled}", headers=_h("admin"))
        assert again.status_code == 200 and again.json() == ended.json(), again.text
    # Major 1 on the root path is served by the /v1 twin.
    twin = await http.get("/delegations", headers={**auth("bob"), "OpenWOP-Version": "1"})
    assert twin.status_code == 200 and twin.json()["delegations"][0]["delegationId"] == v1["delegationId"]


async def test_v2_refuses_in_its_envelope(live: tuple[str, httpx.AsyncClient]) -> None:
    _, http = live
    now = int(time.time() * 1000)
    for body in (
        {"delegate": "alice"},
        {"until": now - 1000},
        {"until": now + 91 * 24 * HOUR_MS},
        {"until": "2026-12-24T09:00:00"},
        {"workflows": ["w"] * 51},
        {"colour": "blue"},
    ):
        assert_envelope(await _delegate(http, **body), 400, "validation_error")
    not_json = await http.post("/delegations", content=b"{", headers={**_h(), "Content-Type": "application/json"})
    assert_envelope(not_json, 400, "validation_error")
    assert_envelope(await _delegate(http, who="bob", delegate="carol", delegator="alice"), 403, "forbidden")
    assert_envelope(await _delegate(http, who="reader"), 403, "forbidden")
    assert_envelope(await http.get("/delegations", headers=_h("reader")), 403, "forbidden")
    assert_envelope(await http.get("/delegations", headers=V2), 401, "unauthenticated")
    made = (await _delegate(http)).json()
    opaque = made["delegationId"].split("/", 1)[1]
    assert_envelope(await http.delete(f"/delegations/other~2F{opaque}", headers=_h()), 403, "id_tenant_mismatch")
    assert_envelope(await http.delete("/delegations/default~2Fdlg-unknown0000000000", headers=_h()), 404, "not_found")
    listed = (await http.get("/delegations", headers=_h("other"))).json()["delegations"]
    assert listed == []  # another tenant's delegations are not seen, nor ended
    assert_envelope(await http.delete(f"/delegations/{opaque}", headers=_h("other")), 404, "not_found")


async def test_an_ended_or_amplified_delegation_is_refused_over_v2(
    live: tuple[str, httpx.AsyncClient], engine: Engine
) -> None:
    _, http = live
    _gate(engine, "plain")
    _gate(engine, "admins-only", requiredRole="admin")
    run_id = await _waiting(http, engine, "plain")
    made = (await _delegate(http)).json()
    await http.delete(f"/delegations/{ids.project(made['delegationId'])}", headers=_h())
    expired = await _vote(http, run_id, {"action": "accept", "voter": "alice"})
    assert_envelope(expired, 401, "delegation_expired")
    assert expired.json()["details"]["delegationId"] == ids.engine_id(made["delegationId"].split("/", 1)[1])
    short = await _delegate(http, until=_until(300))
    assert short.status_code == 201, short.text
    await asyncio.sleep(0.4)
    assert_envelope(await _vote(http, run_id, {"action": "accept", "voter": "alice"}), 401, "delegation_expired")
    # Made by an admin for carol, it carries approvals:respond and no role: a gate needing one refuses it.
    assert (await _delegate(http, delegate="bob", delegator="carol")).status_code == 201
    guarded = await _waiting(http, engine, "admins-only")
    amplified = await _vote(http, guarded, {"action": "accept", "voter": "carol"})
    assert_envelope(amplified, 403, "delegation_scope_amplified")
    for waiting in (run_id, guarded):
        assert (await wait_status(http, waiting, ("waiting-approval",)))["status"] == "waiting-approval"


async def test_a_delegated_decision_reads_as_the_delegators_with_the_delegate_as_actor(
    live: tuple[str, httpx.AsyncClient], engine: Engine
) -> None:
    _, http = live
    _gate(engine, "pair", requiredApprovals=2, approversList=["alice", "carol", "dave"])
    made = (await _delegate(http)).json()
    run_id = await _waiting(http, engine, "pair")
    voted = await _vote(http, run_id, {"action": "accept", "voter": "alice"})
    assert voted.status_code == 200 and voted.json()["status"] == "pending", voted.text
    by_bob = _subject("alice", _subject("bob"))
    # The open gate's vote list, in the snapshot: alice's vote, cast by bob.
    snap = (await http.get(f"/runs/{enc(run_id)}", headers=_h())).json()
    doc = Document((await http.get("/openapi.json", headers=V2)).json())
    assert doc.problems("/runs/{runId}", "get", snap) == []
    (vote,) = snap["interrupt"]["votes"]["votes"]
    assert (vote["voter"], _valid_subject(vote["subject"]), vote["delegation"]) == (
        "alice",
        by_bob,
        made["delegationId"],
    )
    assert "actingPrincipal" not in vote and "actingSubject" not in vote
    (listed,) = snap["extensions"]["openwop-bridge.run"]["interrupts"]
    assert listed["votes"]["votes"] == [vote]
    inspected = await http.get(f"/interrupts/{snap['interrupt']['interruptToken']}", headers=V2)
    assert inspected.status_code == 200 and inspected.json()["votes"]["votes"] == [vote], inspected.text
    # An operator acting as dave settles it: dave's decision, the operator its actor, no delegation.
    settled = await _vote(http, run_id, {"action": "accept", "voter": "dave"}, who="operator")
    assert settled.json()["status"] == "resolved", settled.text
    by_opal = _subject("dave", _subject("opal"))
    assert (await wait_status(http, run_id, ("completed",)))["status"] == "completed"
    docs = await events(http, run_id)
    for doc in docs:
        assert spec.validate_event(doc) == [], doc
    granted = [d["payload"]["resolvedBy"] for d in docs if d["type"] == "approval.granted"]
    assert granted == [by_bob, by_opal]
    (resolved,) = [d["payload"] for d in docs if d["type"] == "interrupt.resolved"]
    assert _valid_subject(resolved["resolvedBy"]) == by_opal and "x-delegation" not in resolved
    (received,) = [d["payload"] for d in docs if d["type"] == "approval.received"]
    assert received["resolvedBy"] == by_opal
    # The resolved interrupt's view in v2 words: its resolution and each vote name who acted.
    record = await engine.store.interrupt_at(ids.engine_id(run_id.split("/", 1)[1]), "gate")
    assert record is not None
    view = documents.interrupt(interrupt_view(record), "default", "")
    assert _valid_subject(view["resolution"]["resolvedBy"]) == by_opal
    assert [v["subject"] for v in view["votes"]["votes"]] == [by_bob, by_opal]


async def test_a_delegate_signed_in_with_a_provider_is_the_actor_by_that_subject(
    live: tuple[str, httpx.AsyncClient], engine: Engine
) -> None:
    _, http = live
    _gate(engine, "single")
    made = (await _delegate(http)).json()
    run_id = await _waiting(http, engine, "single")
    engine_run = ids.engine_id(run_id.split("/", 1)[1])
    bob = Principal("bob", scopes=frozenset({"approvals:respond"}), subject=IDP)
    done = await engine.resolve(bob, {"action": "accept", "voter": "alice"}, run_id=engine_run, node_id="gate")
    assert done["status"] == "resolved"
    record = await engine.store.interrupt_at(engine_run, "gate")
    assert record is not None and record.resolution is not None
    (vote,) = record.state["votes"]
    assert (vote["actingPrincipal"], vote["actingSubject"], "subject" in vote) == ("bob", IDP.ref(), False)
    assert (record.resolution["resolvedBy"], record.resolution["actingSubject"]) == ("alice", IDP.ref())
    provider = {**IDP.ref(), "tenant": "default", "kind": "user"}
    expected = _subject("alice", provider)
    assert (await wait_status(http, run_id, ("completed",)))["status"] == "completed"
    docs = await events(http, run_id)
    (resolved,) = [d["payload"] for d in docs if d["type"] == "interrupt.resolved"]
    assert _valid_subject(resolved["resolvedBy"]) == expected
    assert resolved["x-delegation"] == made["delegationId"]
    assert all(spec.validate_event(d) == [] for d in docs)
    view = documents.interrupt(interrupt_view(record), "default", "")
    assert view["resolution"]["resolvedBy"] == expected and view["resolution"]["delegation"] == made["delegationId"]
    assert "actingSubject" not in view["resolution"] and "actingPrincipal" not in view["resolution"]
    assert [v["subject"] for v in view["votes"]["votes"]] == [expected]
