"""Every interrupt that closes leaves its ``interrupt.resolved`` in the run's log.

An answer, a timeout and cancelling one interrupt always did; these are the other
ways an interrupt closes: its run is cancelled (directly, or by its parent's cancel),
its run ends while it is open (another gate's timeout failed the run), or the
executor opens it after the run's cancel committed. Each closed interrupt gets
exactly one ``interrupt.resolved`` naming the ``interruptId`` its
``interrupt.requested`` and ``node.suspended`` named.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openwop_bridge import Engine, NodeContext, RunRecord, Workflow, approval, spec
from openwop_bridge.core.workflow import load_workflow
from openwop_bridge.runtime import joint
from openwop_bridge.store.base import CommitResult, RunCommit
from tests.helpers import ADMIN, events, settle, workflow_doc

ENDED = ("completed", "failed", "cancelled")


def _gate(node_id: str, **config: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "typeId": "core.approvalGate",
        "name": node_id,
        "position": {"x": 0, "y": 0},
        "config": {"title": f"gate {node_id}", "actions": ["accept", "reject"], **config},
        "inputs": {},
    }


async def _waiting_child(engine: Engine, parent_id: str) -> RunRecord:
    """The parent's child run, once it waits for an approval."""
    for _ in range(500):
        children = await engine.store.child_runs(parent_id)
        if children and children[0].status == "waiting-approval":
            return await settle(engine, children[0].run_id)
        await asyncio.sleep(0.01)
    raise AssertionError(f"run {parent_id} has no child waiting for an approval")


async def assert_each_closed_interrupt_resolved_once(engine: Engine, run_id: str) -> list[dict[str, Any]]:
    """Every interrupt of the run is closed, and each has exactly one ``interrupt.resolved`` naming it,
    after the ``interrupt.requested`` and ``node.suspended`` that named it; returns those events."""
    records = await engine.store.run_interrupts(run_id, open_only=False)
    assert records, "the run opened no interrupt"
    docs = await events(engine, run_id)
    for doc in docs:
        assert not spec.validate_event(doc), (doc["type"], spec.validate_event(doc))
    resolved = [d for d in docs if d["type"] == "interrupt.resolved"]
    for record in records:
        assert record.status != "pending", record
        mine = [d for d in resolved if d["payload"]["interruptId"] == record.interrupt_id]
        assert len(mine) == 1, (record.interrupt_id, record.status, resolved)
        assert mine[0]["nodeId"] == record.node_id and mine[0]["payload"]["kind"] == record.kind
        requested = [
            d for d in docs if d["type"] == "interrupt.requested" and d.get("interruptId") == record.interrupt_id
        ]
        suspended = [
            d for d in docs if d["type"] == "node.suspended" and d["payload"]["interruptId"] == record.interrupt_id
        ]
        assert len(requested) == 1 and len(suspended) == 1, (record.interrupt_id, docs)
        assert requested[0]["sequence"] < mine[0]["sequence"]
    assert len(resolved) == len(records)
    return resolved


async def test_cancelling_a_run_resolves_its_open_interrupt(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-approval")
    await settle(engine, run.run_id)
    await engine.cancel_run(run.run_id, ADMIN, "no longer needed")
    await settle(engine, run.run_id, statuses=("cancelled",))
    (event,) = await assert_each_closed_interrupt_resolved_once(engine, run.run_id)
    assert event["payload"]["reason"] == "no longer needed"
    assert event["payload"]["resolvedBy"] == ADMIN.id
    cancelled = (await events(engine, run.run_id, "run.cancelled"))[0]
    assert event["sequence"] < cancelled["sequence"]


async def test_cancelling_a_quorum_with_a_vote_cast_resolves_it(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-interrupt-quorum")
    await settle(engine, run.run_id)
    await engine.resolve(ADMIN, {"action": "accept", "voter": "v1"}, run_id=run.run_id, node_id="gate")
    await settle(engine, run.run_id)
    await engine.cancel_run(run.run_id, ADMIN)
    await settle(engine, run.run_id, statuses=("cancelled",))
    (event,) = await assert_each_closed_interrupt_resolved_once(engine, run.run_id)
    assert event["payload"]["kind"] == "approval"


async def test_a_parents_cancel_resolves_the_childs_interrupt(engine: Engine) -> None:
    parent = await engine.create_run(ADMIN, "conformance-interrupt-parent-child-cancel")
    child = await _waiting_child(engine, parent.run_id)
    await engine.cancel_run(parent.run_id, ADMIN, "stop")
    await settle(engine, parent.run_id, statuses=("cancelled",))
    await settle(engine, child.run_id, statuses=("cancelled",))
    (event,) = await assert_each_closed_interrupt_resolved_once(engine, child.run_id)
    assert (event["payload"]["reason"], event["payload"]["resolvedBy"]) == ("parent-cancelled", "system")
    (record,) = await engine.store.run_interrupts(child.run_id, open_only=False)
    assert record.status == "gone"


async def test_a_timeout_that_fails_the_run_resolves_the_other_open_gate(engine: Engine) -> None:
    doc = workflow_doc("two-gates-one-deadline", [_gate("quick", timeoutMs=150), _gate("slow")], [])
    engine.add_workflow(load_workflow(doc))
    run = await engine.create_run(ADMIN, "two-gates-one-deadline")
    done = await settle(engine, run.run_id, statuses=ENDED)
    assert done.status == "failed"
    resolved = await assert_each_closed_interrupt_resolved_once(engine, run.run_id)
    by_node = {d["nodeId"]: d["payload"] for d in resolved}
    assert by_node["quick"]["reason"] == "timeout"
    assert by_node["slow"]["reason"] == "run-failed"


async def test_an_interrupt_opened_after_the_cancel_committed_is_resolved(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    wf = Workflow("two-gates-race")

    @wf.node("g1")
    async def g1(ctx: NodeContext) -> dict[str, Any]:
        return {"answer": await ctx.interrupt(approval("first gate"))}

    @wf.node("g2")
    async def g2(ctx: NodeContext) -> dict[str, Any]:
        return {"answer": await ctx.interrupt(approval("second gate"))}

    wf.edge("g1", "g2")
    wf.register(engine)
    run = await engine.create_run(ADMIN, "two-gates-race")
    await settle(engine, run.run_id)
    real_commit = engine.store.commit
    cancels: list[dict[str, Any]] = []

    async def cancel_first(commit: RunCommit) -> CommitResult:
        if any(i.node_id == "g2" for i in commit.new_interrupts) and not cancels:
            cancels.append(await engine.cancel_run(run.run_id, ADMIN, "changed my mind"))
        return await real_commit(commit)

    monkeypatch.setattr(engine.store, "commit", cancel_first)
    monkeypatch.setattr(joint, "BUDGET_S", 0)
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="g1")
    done = await settle(engine, run.run_id, statuses=ENDED)
    assert cancels and done.status == "cancelled"
    resolved = await assert_each_closed_interrupt_resolved_once(engine, run.run_id)
    second = next(d for d in resolved if d["nodeId"] == "g2")
    assert second["payload"]["reason"] == "changed my mind"
