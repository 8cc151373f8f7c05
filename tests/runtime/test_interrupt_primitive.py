"""The interrupt primitive in the engine: keys, replay, fan-out, timeouts, cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openwop_bridge import (
    Engine,
    InterruptCancelledError,
    InterruptTimeoutError,
    NodeContext,
    Workflow,
    approval,
    custom,
    external_event,
)
from openwop_bridge.core.errors import (
    AnswerAfterCancelError,
    CorrelationMismatchError,
    InterruptAlreadyResolvedError,
    ValidationError,
)
from openwop_bridge.runtime import executor, joint
from tests.helpers import ADMIN, event_types, events, settle


async def test_second_call_with_a_resolved_key_returns_the_persisted_value(engine: Engine) -> None:
    calls: list[Any] = []
    wf = Workflow("twice")

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        first = await ctx.interrupt(custom("pick", key="same-key"))
        second = await ctx.interrupt(custom("pick", key="same-key"))
        calls.append((first, second))
        return {"first": first, "second": second}

    wf.register(engine)
    run = await engine.create_run(ADMIN, "twice")
    await settle(engine, run.run_id)
    await engine.resolve(ADMIN, {"colour": "blue"}, run_id=run.run_id, node_id="n")
    done = await settle(engine, run.run_id)
    assert done.status == "completed"
    assert calls[-1] == ({"colour": "blue"}, {"colour": "blue"})
    assert (await event_types(engine, run.run_id)).count("interrupt.requested") == 1


async def test_sequential_interrupts_replay_in_order_without_new_requests(engine: Engine) -> None:
    wf = Workflow("seq")
    executions = 0

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        nonlocal executions
        executions += 1
        ctx.emit("acme.progress.started", {"step": "begin"})
        token = await ctx.step("mint", lambda: f"token-{executions}")
        a = await ctx.interrupt(custom("a"))
        b = await ctx.interrupt(custom("b"))
        return {"a": a, "b": b, "token": token}

    wf.register(engine)
    run = await engine.create_run(ADMIN, "seq")
    await settle(engine, run.run_id)
    await engine.resolve(ADMIN, 1, run_id=run.run_id, node_id="n")
    await settle(engine, run.run_id)
    await engine.resolve(ADMIN, 2, run_id=run.run_id, node_id="n")
    done = await settle(engine, run.run_id)
    assert done.state["outputs"] == {"n": {"a": 1, "b": 2, "token": "token-1"}}
    assert executions == 3
    types = await event_types(engine, run.run_id)
    assert types.count("interrupt.requested") == 2
    assert types.count("acme.progress.started") == 1
    assert types.count("bridge.step.recorded") == 1
    keys = [e["payload"]["key"] for e in await events(engine, run.run_id, "interrupt.requested")]
    assert keys == [f"{run.run_id}:n:0", f"{run.run_id}:n:1"]


async def test_suspend_alias_accepts_the_aliased_fields(engine: Engine) -> None:
    wf = Workflow("alias")

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        value = await ctx.suspend(
            {"reason": "custom", "resumeKey": "k", "answerSchema": {"type": "integer"}, "data": {"customKind": "n"}}
        )
        return {"value": value}

    wf.register(engine)
    run = await engine.create_run(ADMIN, "alias")
    await settle(engine, run.run_id)
    with pytest.raises(ValidationError):
        await engine.resolve(ADMIN, "seven", run_id=run.run_id, node_id="n")
    assert (await engine.store.interrupt_at(run.run_id, "n")).status == "pending"
    await engine.resolve(ADMIN, 7, run_id=run.run_id, node_id="n")
    assert (await settle(engine, run.run_id)).state["outputs"]["n"] == {"value": 7}
    requested = (await events(engine, run.run_id, "interrupt.requested"))[0]["payload"]
    assert requested["key"] == "k" and requested["resumeSchema"] == {"type": "integer"}


async def test_fan_out_holds_several_open_interrupts_addressed_by_node(engine: Engine) -> None:
    wf = Workflow("fan")
    wf.node("start", type_id="core.noop")

    for name in ("left", "right"):

        async def branch(ctx: NodeContext, name: str = name) -> dict[str, Any]:
            return {"answer": await ctx.interrupt(approval(f"{name}?"))}

        wf.node(name, branch, after="start")
    wf.node("join", type_id="core.noop", after=["left", "right"])
    wf.register(engine)
    run = await engine.create_run(ADMIN, "fan")
    await settle(engine, run.run_id)
    snap = await engine.snapshot(run.run_id, ADMIN)
    assert snap["status"] == "waiting-approval"
    assert sorted(i["nodeId"] for i in snap["interrupts"]) == ["left", "right"]
    assert snap["interrupt"]["nodeId"] == snap["interrupts"][0]["nodeId"]
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="right")
    await settle(engine, run.run_id)
    snap = await engine.snapshot(run.run_id, ADMIN)
    assert [i["nodeId"] for i in snap["interrupts"]] == ["left"]
    assert snap["nodeStates"]["right"]["status"] == "completed"
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="left")
    done = await settle(engine, run.run_id)
    assert done.status == "completed" and done.state["nodes"]["join"]["status"] == "completed"


def two_asks(engine: Engine, running: asyncio.Event, go_on: asyncio.Event) -> None:
    """Workflow ``two-asks``: node ``n`` asks ``a`` and ``b``; resumed with ``a`` alone, it sets
    ``running`` and holds on until ``go_on`` (``b`` is answered then, after it read its interrupts)."""
    wf = Workflow("two-asks")

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        a = await ctx.request(custom("a", key="a"), address="a")
        b = await ctx.request(custom("b", key="b"), address="b")
        if not a.settled and not b.settled:
            ctx.wait_any([a, b])
        if a.settled and not b.settled:
            running.set()
            await go_on.wait()
        return {"a": a.result(), "b": b.result()}

    wf.register(engine)


async def test_an_answer_arriving_while_its_node_runs_is_not_lost(engine: Engine) -> None:
    """The node resumes for one answer; the other lands mid-run and must still reach it."""
    running, go_on = asyncio.Event(), asyncio.Event()
    two_asks(engine, running, go_on)
    store: Any = engine.store
    real_unconsumed, absorbed = store.unconsumed, asyncio.Event()

    async def unconsumed(run_id: str) -> Any:  # the executor reading answers for its run
        found = await real_unconsumed(run_id)
        if running.is_set():
            absorbed.set()
        return found

    store.unconsumed = unconsumed
    run = await engine.create_run(ADMIN, "two-asks")
    await settle(engine, run.run_id)
    await engine.resolve(ADMIN, {"v": 1}, run_id=run.run_id, node_id="n:a")
    await asyncio.wait_for(running.wait(), 5)
    await engine.resolve(ADMIN, {"v": 2}, run_id=run.run_id, node_id="n:b")
    await asyncio.wait_for(absorbed.wait(), 5)  # the executor took b's wake-up while n still ran
    go_on.set()
    done = await settle(engine, run.run_id, statuses=("completed", "failed"), timeout=5)
    assert done.status == "completed", done.state["nodes"]
    assert done.state["nodes"]["n"]["outputs"] == {"a": {"v": 1}, "b": {"v": 2}}


async def test_an_answer_committed_before_the_resumed_step_is_seen_by_it(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer to ``a`` resumes ``n`` and commits alone while ``n`` runs; ``b`` is answered then.

    The executor has committed nothing yet when it looks at the run again: that look must read
    ``b`` from the store, not take the run for what it was when ``a`` was answered.
    """
    running, go_on = asyncio.Event(), asyncio.Event()
    two_asks(engine, running, go_on)
    # The answer to a commits without the step it woke, and the executor commits nothing until n ends.
    monkeypatch.setattr(joint, "BUDGET_S", 0.0)
    monkeypatch.setattr(executor, "FLUSH_AFTER_S", 30.0)
    run = await engine.create_run(ADMIN, "two-asks")
    await settle(engine, run.run_id)
    await engine.resolve(ADMIN, {"v": 1}, run_id=run.run_id, node_id="n:a")
    await asyncio.wait_for(running.wait(), 5)
    await engine.resolve(ADMIN, {"v": 2}, run_id=run.run_id, node_id="n:b")
    go_on.set()
    done = await settle(engine, run.run_id, statuses=("completed", "failed"), timeout=5)
    assert done.status == "completed", done.state["nodes"]
    assert done.state["nodes"]["n"]["outputs"] == {"a": {"v": 1}, "b": {"v": 2}}


async def test_timeout_raises_in_the_node(engine: Engine) -> None:
    wf = Workflow("to")

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        try:
            await ctx.interrupt(custom("slow", timeout_ms=150))
        except InterruptTimeoutError:
            return {"timedOut": True}
        return {"timedOut": False}

    wf.register(engine)
    run = await engine.create_run(ADMIN, "to")
    done = await settle(engine, run.run_id, statuses=("completed", "failed"))
    assert done.state["outputs"]["n"] == {"timedOut": True}
    resolved = (await events(engine, run.run_id, "interrupt.resolved"))[0]["payload"]
    assert resolved["reason"] == "timeout" and resolved["resolvedBy"] == "system:timeout"
    with pytest.raises(InterruptAlreadyResolvedError):
        await engine.resolve(ADMIN, 1, run_id=run.run_id, node_id="n")


async def test_unhandled_timeout_fails_the_run(engine: Engine) -> None:
    wf = Workflow("to2")
    wf.node("n", type_id="core.interrupt", config={"kind": "custom", "data": {"customKind": "x"}, "timeoutMs": 100})
    wf.register(engine)
    run = await engine.create_run(ADMIN, "to2")
    done = await settle(engine, run.run_id, statuses=("failed",))
    assert done.state["error"]["code"] == "interrupt_timeout"


async def test_cancel_raises_interrupt_cancelled_in_the_suspended_node(engine: Engine) -> None:
    wf = Workflow("cx")
    seen: list[str] = []

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        try:
            await ctx.interrupt(approval("Go?"))
        except InterruptCancelledError:
            seen.append("cancelled")
            ctx.emit("acme.cleanup.done", {"ok": True})
            raise
        return {}

    wf.register(engine)
    run = await engine.create_run(ADMIN, "cx")
    await settle(engine, run.run_id)
    record = await engine.store.interrupt_at(run.run_id, "n")
    token, _ = engine.mint_token(record)
    await engine.cancel_run(run.run_id, ADMIN, "no longer needed")
    done = await settle(engine, run.run_id, statuses=("cancelled",))
    assert seen == ["cancelled"]
    types = await event_types(engine, run.run_id)
    assert types[-1] == "run.cancelled" and "acme.cleanup.done" in types and "node.cancelled" in types
    assert (await engine.store.interrupt_at(run.run_id, "n")).status == "cancelled"
    with pytest.raises(AnswerAfterCancelError):
        await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="n")
    with pytest.raises(InterruptAlreadyResolvedError):
        await engine.resolve_token(token, {"action": "accept"})
    again = await engine.cancel_run(run.run_id, ADMIN)
    assert again == {"runId": run.run_id, "status": "cancelled"} and done.status == "cancelled"


async def test_approval_actions(engine: Engine) -> None:
    wf = Workflow("acts")
    wf.node(
        "gate",
        type_id="core.approvalGate",
        config={
            "title": "Publish?",
            "actions": ["accept", "reject", "refine", "edit-accept", "ask"],
            "artifactData": {"text": "draft"},
        },
    )
    wf.register(engine)

    async def start() -> str:
        run = await engine.create_run(ADMIN, "acts")
        await settle(engine, run.run_id)
        return run.run_id

    rid = await start()
    asked = await engine.resolve(ADMIN, {"action": "ask", "question": "Is it final?"}, run_id=rid, node_id="gate")
    assert asked["status"] == "pending" and asked["ask"]["question"] == "Is it final?" and asked["ask"]["answer"]
    assert (await engine.store.load_run(rid)).status == "waiting-approval"
    await engine.resolve(
        ADMIN, {"action": "edit-accept", "editedArtifactData": {"text": "final"}}, run_id=rid, node_id="gate"
    )
    done = await settle(engine, rid)
    assert done.state["outputs"]["gate"]["artifactData"] == {"text": "final"}
    received = (await events(engine, rid, "approval.received"))[0]["payload"]
    assert received["decidedBy"] == "alice" and received["action"] == "edit-accept"

    rid = await start()
    await engine.resolve(
        ADMIN,
        {"action": "refine", "refineFeedback": {"scope": "section", "sectionPath": "$.intro", "text": "shorter"}},
        run_id=rid,
        node_id="gate",
    )
    done = await settle(engine, rid)
    assert done.status == "failed"
    assert done.state["error"]["code"] == "approval_rejected"
    assert done.state["error"]["details"]["refineFeedback"]["text"] == "shorter"

    rid = await start()
    with pytest.raises(ValidationError):
        await engine.resolve(ADMIN, {"action": "refine"}, run_id=rid, node_id="gate")
    await engine.resolve(ADMIN, {"decision": "approved"}, run_id=rid, node_id="gate")
    assert (await settle(engine, rid)).status == "completed"


async def test_external_event_correlation_and_idempotency(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-interrupt-external-event")
    await settle(engine, run.run_id)
    assert (await engine.store.load_run(run.run_id)).status == "waiting-external"
    record = await engine.store.interrupt_at(run.run_id, "wait-for-external")
    token, _ = engine.mint_token(record)
    with pytest.raises(CorrelationMismatchError):
        await engine.resolve_token(token, {"orderId": "fixture-order-1", "status": "pending", "eventId": "e1"})
    assert (await engine.store.load_run(run.run_id)).status == "waiting-external"
    body = {"orderId": "fixture-order-1", "status": "completed", "eventId": "e2", "apiKey": "sk_live_123"}
    first = await engine.resolve_token(token, body)
    again = await engine.resolve_token(token, body)
    assert first["status"] == "resolved" and again == {**again, "status": "resolved", "idempotent": True}
    with pytest.raises(InterruptAlreadyResolvedError):
        await engine.resolve_token(token, {**body, "eventId": "e3"})
    done = await settle(engine, run.run_id)
    assert done.state["outputs"]["wait-for-external"]["resumeValue"]["apiKey"] == "sk_live_123"
    logged = (await events(engine, run.run_id, "interrupt.resolved"))[0]["payload"]["resumeValue"]
    assert logged["apiKey"] == "[redacted]"
    assert (await event_types(engine, run.run_id)).count("interrupt.resolved") == 1


async def test_clarification_fixture_accepts_both_shapes(engine: Engine) -> None:
    for answer in ({"answers": {"q1": "blue"}}, {"answers": [{"id": "q1", "answer": "green"}]}):
        run = await engine.create_run(ADMIN, "conformance-clarification")
        await settle(engine, run.run_id)
        assert (await engine.store.load_run(run.run_id)).status == "waiting-input"
        with pytest.raises(ValidationError):
            await engine.resolve(ADMIN, {"answers": {"q9": "x"}}, run_id=run.run_id, node_id="ask")
        await engine.resolve(ADMIN, answer, run_id=run.run_id, node_id="ask")
        done = await settle(engine, run.run_id)
        expected = answer["answers"]["q1"] if isinstance(answer["answers"], dict) else answer["answers"][0]["answer"]
        assert done.state["outputs"]["ask"] == {"answers": {"q1": expected}}


async def test_external_event_builder_and_concurrent_resolves_in_process(engine: Engine) -> None:
    wf = Workflow("ext")

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        return {"event": await ctx.interrupt(external_event("x.done", {"id": "7"}))}

    wf.register(engine)
    run = await engine.create_run(ADMIN, "ext")
    await settle(engine, run.run_id)
    results = await asyncio.gather(
        *(engine.resolve(ADMIN, {"id": "7", "eventId": f"e{i}"}, run_id=run.run_id, node_id="n") for i in range(20)),
        return_exceptions=True,
    )
    ok = [r for r in results if isinstance(r, dict)]
    assert len(ok) == 1
    assert all(isinstance(r, InterruptAlreadyResolvedError) for r in results if not isinstance(r, dict))
    await settle(engine, run.run_id)
    assert (await event_types(engine, run.run_id)).count("interrupt.resolved") == 1
