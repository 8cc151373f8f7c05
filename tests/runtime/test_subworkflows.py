"""Sub-workflows and the cascade-cancel profile."""

from __future__ import annotations

import asyncio

import httpx

from openwop_bridge import Engine, Workflow, spec
from openwop_bridge.core.decisions.cancel import run_cancel_decision
from openwop_bridge.core.records import RunRecord
from tests.conftest import auth
from tests.helpers import ADMIN, events, settle


async def _waiting_child(engine: Engine, parent_id: str) -> RunRecord:
    """The parent's first child run, once it waits for an approval (or after two seconds of waiting for that)."""
    children: list[RunRecord] = []
    for _ in range(200):
        children = await engine.store.child_runs(parent_id)
        if children and children[0].status == "waiting-approval":
            break
        await asyncio.sleep(0.01)
    assert children, f"run {parent_id} started no child run"
    return children[0]


async def test_parent_waits_for_child_and_maps_variables(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-subworkflow-parent")
    done = await settle(engine, run.run_id)
    assert done.status == "completed"
    assert done.state["variables"]["childOutcome"] == "child-completed"
    children = await engine.store.child_runs(run.run_id)
    assert len(children) == 1 and children[0].status == "completed"
    assert (children[0].parent_run_id, children[0].parent_node_id) == (run.run_id, "subwf-call")
    snap = await engine.snapshot(run.run_id, ADMIN)
    assert snap["childRuns"] == [
        {"runId": children[0].run_id, "status": "completed", "workflowId": "conformance-subworkflow-child"}
    ]
    child_snap = await engine.snapshot(children[0].run_id, ADMIN)
    assert child_snap["parentRunId"] == run.run_id and child_snap["parentNodeId"] == "subwf-call"


async def test_cancel_parent_cascades_and_child_interrupts_are_gone(client: httpx.AsyncClient, engine: Engine) -> None:
    r = await client.post(
        "/v1/runs", json={"workflowId": "conformance-interrupt-parent-child-cancel"}, headers=auth("admin")
    )
    parent = r.json()["runId"]
    child = (await _waiting_child(engine, parent)).run_id
    record = await engine.store.interrupt_at(child, "child-gate")
    token, _ = engine.mint_token(record)
    cancel = await client.post(f"/v1/runs/{parent}/cancel", headers=auth("admin"))
    assert cancel.status_code == 200
    await settle(engine, parent, statuses=("cancelled",))
    await settle(engine, child, statuses=("cancelled",))
    cascaded = (await events(engine, child, "run.cancelled"))[0]["payload"]
    assert cascaded["reason"] == "parent-cancelled" and cascaded["parentRunId"] == parent
    direct = (await events(engine, parent, "run.cancelled"))[0]["payload"]
    assert "parentRunId" not in direct
    gone = await client.post(
        f"/v1/runs/{child}/interrupts/child-gate", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
    )
    assert gone.status_code == 410 and gone.json()["error"] == "interrupt_gone"
    via_token = await client.post(f"/v1/interrupts/{token}", json={"resumeValue": {"action": "accept"}})
    assert via_token.status_code == 410 and via_token.json()["error"] == "interrupt_gone"
    again = await client.post(f"/v1/runs/{parent}/cancel", headers=auth("admin"))
    assert again.status_code == 200 and again.json()["status"] == "cancelled"
    for run_id in (parent, child):
        for doc in await engine.store.read_events(run_id):
            assert not spec.validate_event(doc)


async def test_the_cascade_is_durable_when_only_the_parent_cancel_was_committed(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-interrupt-parent-child-cancel")
    child_run = await _waiting_child(engine, run.run_id)
    # As if the process died right after committing the parent's cancel, before cascading:
    # the parent's executor, which finishes the cancellation, must cascade itself.
    now = engine.clock.now_ms()
    committed = await engine.store.mutate_run(
        run.run_id, run_cancel_decision(ADMIN, now, "stop", engine.clock.new_id), now, claim=engine.claim
    )
    assert committed.result["changed"] and (await engine.store.child_runs(run.run_id))[0].status == "waiting-approval"
    engine.dispatch(run.run_id)
    await settle(engine, run.run_id, statuses=("cancelled",))
    child = await settle(engine, child_run.run_id, statuses=("cancelled",))
    assert child.status == "cancelled"
    cascaded = (await events(engine, child.run_id, "run.cancelled"))[0]["payload"]
    assert cascaded["reason"] == "parent-cancelled" and cascaded["parentRunId"] == run.run_id


async def test_cancelling_a_child_gives_the_parent_a_deterministic_outcome(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-interrupt-parent-child-cancel")
    child_run = await _waiting_child(engine, run.run_id)
    await engine.cancel_run(child_run.run_id, ADMIN, "withdrawn")
    # Until the child's cancel ends it, the parent reports the child's waiting status: wait for the parent's end.
    done = await settle(engine, run.run_id, statuses=("completed", "failed", "cancelled"))
    assert done.status == "failed" and done.state["error"]["code"] == "child_cancelled"
    child_cancel = (await events(engine, child_run.run_id, "run.cancelled"))[0]["payload"]
    assert "parentRunId" not in child_cancel


async def test_concurrent_cancel_and_resolve_end_consistently(engine: Engine) -> None:
    for _ in range(10):
        run = await engine.create_run(ADMIN, "conformance-approval")
        await settle(engine, run.run_id)
        results = await asyncio.gather(
            engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="gate"),
            engine.cancel_run(run.run_id, ADMIN),
            return_exceptions=True,
        )
        done = await settle(engine, run.run_id, statuses=("completed", "cancelled"))
        resolved = isinstance(results[0], dict)
        types = [e["type"] for e in await engine.store.read_events(run.run_id)]
        assert types[-1] in ("run.completed", "run.cancelled")
        if done.status == "completed":
            assert resolved
        # Exactly one interrupt.resolved: the answer's, or the cancel's (no resumeValue).
        (closed,) = await events(engine, run.run_id, "interrupt.resolved")
        assert closed["payload"].get("cancelled", False) is not resolved
        record = await engine.store.interrupt_at(run.run_id, "gate")
        assert record.status == ("resolved" if resolved else "cancelled")


async def test_continue_on_child_failure(engine: Engine) -> None:
    wf = Workflow("lenient")
    wf.node(
        "child", type_id="core.subWorkflow", config={"workflowId": "conformance-approval", "onChildFailure": "continue"}
    )
    wf.register(engine)
    run = await engine.create_run(ADMIN, "lenient")
    child_run = await _waiting_child(engine, run.run_id)
    await engine.resolve(ADMIN, {"action": "reject"}, run_id=child_run.run_id, node_id="gate")
    done = await settle(engine, run.run_id)
    assert done.status == "completed" and done.state["outputs"]["child"]["status"] == "failed"
