"""Every document the host emits validates against the official schemas."""

from __future__ import annotations

from typing import Any

from openwop_bridge import Engine, NodeContext, Workflow, custom, spec
from tests.helpers import ADMIN, settle


async def _all_events(engine: Engine) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for run_id in {
        r.run_id
        for r in (await engine.store.list_runs("default", workflow_id=None, status=None, limit=500, cursor=None))[0]
    }:
        docs += await engine.store.read_events(run_id)
    return docs


async def test_each_emitted_event_type_validates(engine: Engine) -> None:
    wf = Workflow("emit-all")

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        ctx.set_variable("stage", "asking")
        ctx.log("warn", "about to ask")
        await ctx.step("roll", lambda: 4)
        try:
            await ctx.interrupt(custom("quick", timeout_ms=50))
        except Exception:
            pass
        return {"x": 1}

    wf.register(engine)
    scenarios = [
        ("emit-all", None),
        ("conformance-approval", {"action": "accept"}),
        ("conformance-approval", {"action": "reject"}),
        ("conformance-approval-reject-routed", {"action": "accept"}),
        ("conformance-clarification", {"answers": {"q1": "red"}}),
        ("conformance-interrupt-external-event", {"orderId": "fixture-order-1", "status": "completed"}),
        ("conformance-conversation-lifecycle", None),
        ("conformance-agent-low-confidence", {"kind": "ratified"}),
        ("conformance-interrupt-quorum", "votes"),
        ("conformance-subworkflow-parent", None),
        ("conformance-approval-timeout", None),
    ]
    for workflow, answer in scenarios:
        run = await engine.create_run(ADMIN, workflow)
        snap = await settle(engine, run.run_id)
        if answer == "votes":
            node = "gate"
            for voter in ("v1", "v2", "v3"):
                await engine.resolve(ADMIN, {"action": "accept", "voter": voter}, run_id=run.run_id, node_id=node)
        elif answer is not None and snap.status.startswith("waiting"):
            node = (await engine.store.run_interrupts(run.run_id, open_only=True))[0].node_id
            await engine.resolve(ADMIN, answer, run_id=run.run_id, node_id=node)
        await settle(engine, run.run_id, statuses=("completed", "failed", "cancelled"), timeout=10)
    cancelled = await engine.create_run(ADMIN, "conformance-approval")
    await settle(engine, cancelled.run_id)
    await engine.cancel_run(cancelled.run_id, ADMIN, "test")
    await settle(engine, cancelled.run_id, statuses=("cancelled",))

    docs = await _all_events(engine)
    seen: dict[str, int] = {}
    for doc in docs:
        problems = spec.validate_event(doc)
        assert not problems, (doc["type"], problems, doc)
        seen[doc["type"]] = seen.get(doc["type"], 0) + 1
    expected = {
        "run.started",
        "run.completed",
        "run.failed",
        "run.cancelled",
        "node.started",
        "node.completed",
        "node.failed",
        "node.suspended",
        "node.resumed",
        "node.skipped",
        "node.cancelled",
        "interrupt.requested",
        "interrupt.resolved",
        "approval.received",
        "approval.granted",
        "agent.decided",
        "variable.changed",
        "log.appended",
        "conversation.opened",
        "conversation.exchanged",
        "conversation.closed",
    }
    assert expected <= set(seen), expected - set(seen)
    for doc in docs:
        if doc["type"] == "interrupt.requested":
            assert not list(spec.validator("suspend-request.schema.json").iter_errors(doc["payload"]))
