"""Governed approvals: quorum, roles and scopes, override, auth-required resume, audit."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from openwop_bridge import Engine, Workflow, spec
from openwop_bridge.core.auth import KeyRing, parse_key_spec
from openwop_bridge.core.errors import ForbiddenError, ValidationError
from openwop_bridge.host.app import create_app
from tests.conftest import KEYS, auth
from tests.helpers import event_types, events, settle


async def _start(client: httpx.AsyncClient, engine: Engine, workflow: str, who: str = "admin") -> str:
    r = await client.post("/v1/runs", json={"workflowId": workflow}, headers=auth(who))
    assert r.status_code == 201, r.text
    await settle(engine, r.json()["runId"])
    return str(r.json()["runId"])


async def _vote(
    client: httpx.AsyncClient, run_id: str, value: Any, who: str = "admin", node: str = "gate"
) -> httpx.Response:
    return await client.post(f"/v1/runs/{run_id}/interrupts/{node}", json={"resumeValue": value}, headers=auth(who))


def _gate(engine: Engine, workflow_id: str, **config: Any) -> None:
    wf = Workflow(workflow_id)
    wf.node("gate", type_id="core.approvalGate", config={"title": "Deploy?", "actions": ["accept", "reject"], **config})
    wf.node("after", type_id="core.noop", after="gate")
    wf.register(engine)


async def test_quorum_accepts_on_the_third_distinct_vote(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, "conformance-interrupt-quorum")
    first = await _vote(client, run_id, {"action": "accept", "voter": "v1"})
    assert first.status_code == 200
    assert first.json()["status"] == "pending"
    assert first.json()["votes"] == {"accept": 1, "reject": 0, "required": 3, "rejectionPolicy": "majority"}
    dup = await _vote(client, run_id, {"action": "accept", "voter": "v1"})
    assert dup.status_code == 200 and dup.json()["duplicate"] is True and dup.json()["votes"]["accept"] == 1
    second = await _vote(client, run_id, {"action": "accept", "decidedBy": "v2"})
    assert second.json()["votes"]["accept"] == 2
    assert (await engine.store.load_run(run_id)).status == "waiting-approval"
    snap = (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()
    assert snap["interrupt"]["votes"]["accept"] == 2 and len(snap["interrupt"]["votes"]["votes"]) == 2
    third = await _vote(client, run_id, {"action": "accept", "voter": "v3"})
    assert third.json()["status"] == "resolved"
    done = await settle(engine, run_id)
    assert done.status == "completed"
    received = await events(engine, run_id, "approval.received")
    assert len(received) == 1 and received[0]["payload"]["decidedBy"] == "v3"
    resolved = (await events(engine, run_id, "interrupt.resolved"))[0]["payload"]
    assert resolved["resolvedBy"] == "v3" and resolved["resumeValue"]["quorum"] == "quorum:3-of-3"
    granted = [e["payload"] for e in await events(engine, run_id, "approval.granted")]
    assert [g["quorumProgress"]["granted"] for g in granted] == [1, 2, 3]
    audit = (await client.get(f"/v1/runs/{run_id}/audit", headers=auth("admin"))).json()["entries"]
    actions = [a["action"] for a in audit]
    assert actions.count("approval.vote.accept") == 3 and actions.count("approval.duplicate-vote") == 1
    assert {a["details"]["actingPrincipal"] for a in audit} == {"alice"}
    for doc in await engine.store.read_events(run_id):
        assert not spec.validate_event(doc)


async def test_quorum_majority_reject_and_single_veto(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, "conformance-interrupt-quorum")
    await _vote(client, run_id, {"action": "reject", "voter": "v1", "reason": "not ready"})
    assert (await engine.store.load_run(run_id)).status == "waiting-approval"
    await _vote(client, run_id, {"action": "accept", "voter": "v2"})
    last = await _vote(client, run_id, {"action": "reject", "voter": "v3"})
    assert last.json()["status"] == "resolved" and last.json()["decision"] == "rejected"
    done = await settle(engine, run_id)
    assert done.status == "failed" and done.state["error"]["code"] == "approval_rejected"
    rejected = [e["payload"] for e in await events(engine, run_id, "approval.rejected")]
    assert rejected[0] == {"gateId": "gate", "principal": "v1", "reason": "not ready"}

    _gate(engine, "veto", requiredApprovals=3)
    run_id = await _start(client, engine, "veto")
    await _vote(client, run_id, {"action": "accept", "voter": "a"})
    veto = await _vote(client, run_id, {"action": "reject", "voter": "b"})
    assert veto.json()["status"] == "resolved"
    assert (await settle(engine, run_id)).status == "failed"


async def test_voting_for_someone_else_needs_permission(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, "conformance-interrupt-quorum")
    denied = await _vote(client, run_id, {"action": "accept", "voter": "somebody-else"}, who="bob")
    assert denied.status_code == 403 and denied.json()["error"] == "forbidden"
    decided = (await events(engine, run_id, "authorization.decided"))[0]["payload"]
    assert decided["allowed"] is False and decided["principal"] == "bob"
    own = await _vote(client, run_id, {"action": "accept"}, who="bob")
    assert own.json()["votes"]["accept"] == 1
    operator = await _vote(client, run_id, {"action": "accept", "voter": "carol"}, who="operator")
    assert operator.json()["votes"]["accept"] == 2


async def test_approvers_list_is_enforced(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "listed", approversList=["bob", "carol"])
    run_id = await _start(client, engine, "listed")
    stranger = await _vote(client, run_id, {"action": "accept"}, who="admin")
    assert stranger.status_code == 403
    assert (await engine.store.load_run(run_id)).status == "waiting-approval"
    assert (await _vote(client, run_id, {"action": "accept"}, who="bob")).json()["status"] == "resolved"


def test_a_gate_that_lists_one_approver_twice_for_two_approvals_is_refused(engine: Engine) -> None:
    with pytest.raises(ValidationError) as caught:
        _gate(engine, "listed-twice", requiredApprovals=2, approversList=["alice", "alice"])
    assert "by the 1 distinct principal in approversList" in str(caught.value.details)
    _gate(engine, "listed-twice", requiredApprovals=2, approversList=["alice", "bob", "alice"])


async def test_required_role_and_scope(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "role-gated", requiredRole="operator")
    run_id = await _start(client, engine, "role-gated")
    refused = await _vote(client, run_id, {"action": "accept"}, who="bob")
    assert refused.status_code == 403 and "operator" in refused.json()["message"]
    assert (await engine.store.load_run(run_id)).status == "waiting-approval"
    decided = (await events(engine, run_id, "authorization.decided"))[0]["payload"]
    assert decided == {**decided, "allowed": False, "principal": "bob", "action": "approvals:respond"}
    assert (await _vote(client, run_id, {"action": "accept"}, who="operator")).json()["status"] == "resolved"
    assert (await settle(engine, run_id)).status == "completed"

    _gate(engine, "scope-gated", requiredScope="runs:fork")
    run_id = await _start(client, engine, "scope-gated")
    assert (await _vote(client, run_id, {"action": "accept"}, who="bob")).status_code == 403
    assert (await _vote(client, run_id, {"action": "accept"}, who="admin")).status_code == 200


async def test_a_signed_link_does_not_get_past_a_role_or_scope(client: httpx.AsyncClient, engine: Engine) -> None:
    for workflow, config in (
        ("role-linked", {"requiredRole": "operator"}),
        ("scope-linked", {"requiredScope": "runs:fork"}),
    ):
        _gate(engine, workflow, **config)
        run_id = await _start(client, engine, workflow)
        # bob may answer approvals, so he is shown a resolve link; the link must not stand in for the role.
        view = (await client.get(f"/v1/runs/{run_id}/interrupts/gate", headers=auth("bob"))).json()
        token = view["interruptToken"]
        body = {"resumeValue": {"action": "accept"}}
        anonymous = await client.post(f"/v1/interrupts/{token}", json=body)
        assert anonymous.status_code == 401 and anonymous.json()["error"] == "unauthenticated"
        as_bob = await client.post(f"/v1/interrupts/{token}", json=body, headers=auth("bob"))
        assert as_bob.status_code == 403, as_bob.text
        assert (await engine.store.load_run(run_id)).status == "waiting-approval"
        assert "interrupt.resolved" not in await event_types(engine, run_id)
        denied = (await events(engine, run_id, "authorization.decided"))[-1]["payload"]
        assert denied["allowed"] is False and denied["principal"] == "bob"
        allowed = "operator" if "requiredRole" in config else "admin"
        ok = await client.post(f"/v1/interrupts/{token}", json=body, headers=auth(allowed))
        assert ok.status_code == 200, ok.text
        assert (await settle(engine, run_id)).status == "completed"


async def test_only_who_may_decide_a_gate_may_cancel_it(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "cancel-listed", approversList=["opal"])
    run_id = await _start(client, engine, "cancel-listed")
    record = await engine.store.interrupt_at(run_id, "gate")
    with pytest.raises(ForbiddenError):
        await engine.cancel_interrupt(KEYS["bob"].principal, record.interrupt_id)
    assert (await engine.store.load_run(run_id)).status == "waiting-approval"
    denied = (await events(engine, run_id, "authorization.decided"))[-1]["payload"]
    assert denied["allowed"] is False and denied["principal"] == "bob"
    await engine.cancel_interrupt(KEYS["operator"].principal, record.interrupt_id)
    final = await settle(engine, run_id)
    assert final.status == "failed" and final.state["error"]["code"] == "approval_rejected"
    received = (await events(engine, run_id, "approval.received"))[0]["payload"]
    assert received["decidedBy"] == "opal" and received["action"] == "reject"


async def test_override_is_audited_and_counts_as_one_vote_unless_it_bypasses(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    _gate(engine, "override-counts", requiredApprovals=2, override={"requiredRole": "operator", "audited": True})
    run_id = await _start(client, engine, "override-counts")
    no_reason = await _vote(client, run_id, {"action": "accept", "override": True}, who="operator")
    assert no_reason.status_code == 400
    not_allowed = await _vote(client, run_id, {"action": "accept", "override": True, "reason": "hotfix"}, who="bob")
    assert not_allowed.status_code == 403
    counted = await _vote(client, run_id, {"action": "accept", "override": True, "reason": "hotfix"}, who="operator")
    assert counted.json()["status"] == "pending" and counted.json()["votes"]["accept"] == 1
    overridden = (await events(engine, run_id, "approval.overridden"))[0]["payload"]
    assert overridden == {"gateId": "gate", "principal": "opal", "reason": "hotfix"}
    audit = await engine.store.audit(run_id)
    assert any(a["action"] == "approval.overridden" and a["details"]["reason"] == "hotfix" for a in audit)

    _gate(
        engine,
        "override-bypass",
        requiredApprovals=3,
        overrideBypassesQuorum=True,
        override={"requiredRole": "operator", "audited": True},
    )
    run_id = await _start(client, engine, "override-bypass")
    closed = await _vote(
        client, run_id, {"action": "accept", "override": True, "reason": "incident 42"}, who="operator"
    )
    assert closed.json()["status"] == "resolved"
    assert (await settle(engine, run_id)).status == "completed"


async def test_override_after_an_own_vote_and_on_behalf_of_someone(client: httpx.AsyncClient, engine: Engine) -> None:
    override = {"requiredRole": "operator", "audited": True}
    _gate(engine, "override-counted-twice", requiredApprovals=3, override=override)
    run_id = await _start(client, engine, "override-counted-twice")
    assert (await _vote(client, run_id, {"action": "accept"}, who="operator")).json()["votes"]["accept"] == 1
    again = await _vote(client, run_id, {"action": "accept", "override": True, "reason": "hotfix"}, who="operator")
    assert again.json()["duplicate"] is True
    # Counted as one vote and already cast: nothing happened, so no override is logged.
    assert await events(engine, run_id, "approval.overridden") == []

    _gate(engine, "override-closes", requiredApprovals=3, overrideBypassesQuorum=True, override=override)
    run_id = await _start(client, engine, "override-closes")
    assert (await _vote(client, run_id, {"action": "accept"}, who="operator")).status_code == 200
    closed = await _vote(
        client, run_id, {"action": "accept", "override": True, "reason": "incident 7", "voter": "carol"}, who="operator"
    )
    assert closed.json()["status"] == "resolved"
    [overridden] = await events(engine, run_id, "approval.overridden")
    assert overridden["payload"] == {"gateId": "gate", "principal": "opal", "reason": "incident 7"}
    audit = {a["action"]: a for a in await engine.store.audit(run_id)}
    assert audit["approval.overridden"]["principal"] == "opal"
    assert audit["approval.overridden"]["details"]["onBehalfOf"] == "carol"


async def test_each_vote_is_audited_with_its_reason(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "reasons", requiredApprovals=2, rejectionPolicy="majority", approversList=["alice", "bob", "opal"])
    run_id = await _start(client, engine, "reasons")
    await _vote(client, run_id, {"action": "reject", "reason": "not ready"}, who="bob")
    await _vote(client, run_id, {"action": "accept", "feedback": "lgtm"}, who="operator")
    votes = [a for a in await engine.store.audit(run_id) if a["action"].startswith("approval.vote.")]
    assert [(a["principal"], a["action"], a["details"].get("reason")) for a in votes] == [
        ("bob", "approval.vote.reject", "not ready"),
        ("opal", "approval.vote.accept", "lgtm"),
    ]


async def test_malformed_resume_keeps_the_gate_suspended(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, "conformance-approval")
    for bad in ({"action": "edit-accept"}, {"action": 5}, [], "maybe"):
        r = await _vote(client, run_id, bad)
        assert r.status_code == 400 and r.json()["error"] == "validation_error"
    assert (await engine.store.load_run(run_id)).status == "waiting-approval"
    assert "interrupt.resolved" not in await event_types(engine, run_id)


async def test_auth_required_profile(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, "conformance-interrupt-auth-required")
    snap = (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()
    token = snap["interrupt"]["interruptToken"]
    body = {"resumeValue": {"action": "accept"}}
    anonymous = await client.post(f"/v1/interrupts/{token}", json=body)
    assert anonymous.status_code == 401 and anonymous.json()["error"] == "unauthenticated"
    reader = await client.post(f"/v1/interrupts/{token}", json=body, headers=auth("reader"))
    assert reader.status_code == 403
    other = await client.post(f"/v1/interrupts/{token}", json=body, headers=auth("other"))
    assert other.status_code == 404
    assert (await client.post(f"/v1/runs/{run_id}/interrupts/gate", json=body)).status_code == 401
    assert (
        await client.post(f"/v1/runs/{run_id}/interrupts/gate", json=body, headers=auth("reader"))
    ).status_code == 403
    assert (
        await client.post(f"/v1/runs/{run_id}/interrupts/gate", json=body, headers=auth("other"))
    ).status_code == 404
    ok = await client.post(f"/v1/interrupts/{token}", json=body, headers=auth("bob"))
    assert ok.status_code == 200
    used = await client.post(f"/v1/interrupts/{token}", json=body, headers=auth("bob"))
    assert used.status_code == 409
    assert (await settle(engine, run_id)).state["outputs"]["gate"]["decidedBy"] == "bob"


async def test_auth_rules_hold_for_clarifications_too(client: httpx.AsyncClient, engine: Engine) -> None:
    import asyncio

    run_id = await _start(client, engine, "conformance-clarification")
    body = {"resumeValue": {"answers": {"q1": "teal"}}}
    url = f"/v1/runs/{run_id}/interrupts/ask"
    assert (await client.post(url, json=body)).status_code == 401
    assert (await client.post(url, json=body, headers=auth("reader"))).status_code == 403
    assert (await client.post(url, json=body, headers=auth("other"))).status_code == 404
    record = await engine.store.interrupt_at(run_id, "ask")
    expired, _ = engine.mint_token(record, ttl_ms=1)
    await asyncio.sleep(0.01)
    assert (await client.post(f"/v1/interrupts/{expired}", json=body)).status_code == 410
    token, _ = engine.mint_token(record)
    assert (await client.post(f"/v1/interrupts/{token}", json=body)).status_code == 200
    assert (await client.post(f"/v1/interrupts/{token}", json=body)).status_code == 409


async def test_three_approvers_with_their_own_signed_links(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, "conformance-interrupt-quorum")
    links = {}
    for person in ("ana", "ben", "cy"):
        r = await client.post(
            f"/v1/runs/{run_id}/interrupts/gate/links", json={"subject": person}, headers=auth("operator")
        )
        assert r.status_code == 201
        links[person] = r.json()["token"]
    impersonation = await client.post(
        f"/v1/interrupts/{links['ana']}", json={"resumeValue": {"action": "accept", "voter": "zed"}}
    )
    assert impersonation.status_code == 403
    for token in links.values():
        r = await client.post(f"/v1/interrupts/{token}", json={"resumeValue": {"action": "accept"}})
        assert r.status_code == 200, r.text
    done = await settle(engine, run_id)
    assert done.status == "completed"
    votes = done.state["outputs"]["gate"]["votes"]
    assert [v["voter"] for v in votes] == ["ana", "ben", "cy"]


async def test_a_gate_scope_of_its_own_namespace(engine: Engine) -> None:
    _gate(engine, "deploy-gated", requiredScope="deploy:promote")
    deployer = parse_key_spec("dee=deploy-key-0001:runs:read,approvals:respond,deploy:promote")
    app = create_app(engine, KeyRing([*KEYS.values(), deployer]), manage_engine=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test") as client:
        run_id = await _start(client, engine, "deploy-gated")
        assert (await _vote(client, run_id, {"action": "accept"}, who="bob")).status_code == 403
        ok = await client.post(
            f"/v1/runs/{run_id}/interrupts/gate",
            json={"resumeValue": {"action": "accept"}},
            headers={"Authorization": "Bearer deploy-key-0001"},
        )
        assert ok.status_code == 200, ok.text
        received = (await events(engine, run_id, "approval.received"))[0]["payload"]
        assert received["decidedBy"] == "dee" and (await settle(engine, run_id)).status == "completed"


async def test_rfc_0051_names_and_shapes(client: httpx.AsyncClient, engine: Engine) -> None:
    wf = Workflow("rfc-0051")
    wf.node(
        "gate",
        type_id="core.openwop.governance.approvalGate",
        config={"title": "Promote?", "actions": ["accept", "reject"], "requiredScope": "runs:fork", "timeoutSec": 60},
    )
    wf.register(engine)
    run_id = await _start(client, engine, "rfc-0051")
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record.kind == "approval" and record.payload["timeoutMs"] == 60_000
    granted = await _vote(client, run_id, {"decision": "granted", "reason": "green build"})
    assert granted.status_code == 200, granted.text
    assert (await settle(engine, run_id)).status == "completed"

    for n, bad in enumerate(("10", 0, -5, True)):
        broken = Workflow(f"bad-timeout-{n}")
        broken.node("gate", type_id="core.approvalGate", config={"title": "?", "timeoutSec": bad})
        with pytest.raises(ValidationError) as refused:
            broken.register(engine)
        assert "'timeoutSec' must be a positive number" in str(refused.value.details)


@pytest.mark.parametrize("page", [None, 1], ids=["one-page", "an-entry-a-page"])
async def test_the_audit_document_is_the_stored_audit_byte_for_byte(
    client: httpx.AsyncClient, engine: Engine, monkeypatch: pytest.MonkeyPatch, page: int | None
) -> None:
    """``GET /v1/runs/{runId}/audit`` is written a page of entries at a time; the bytes are the whole document's."""
    import orjson

    from openwop_bridge.host.http import paged

    if page is not None:
        monkeypatch.setattr(paged, "STREAM_PAGE", page)
    _gate(engine, "audited", requiredApprovals=3, override={"requiredRole": "operator", "audited": True})
    run_id = await _start(client, engine, "audited")
    assert (await _vote(client, run_id, {"action": "accept"}, who="operator")).status_code == 200
    for _ in range(2):
        assert (await _vote(client, run_id, {"action": "accept"}, who="operator")).json()["duplicate"] is True
    stored = await engine.store.audit(run_id)
    assert len(stored) == 3
    r = await client.get(f"/v1/runs/{run_id}/audit", headers=auth("reader"))
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.content == orjson.dumps({"entries": stored})
