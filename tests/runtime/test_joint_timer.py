"""What happens to a run while an answer and the step it woke are being committed together.

A deadline passes: the answer arrived first and was taken, so the timer waits
for it, finds the interrupt answered, and fires nothing. A child run ends: its
wake-up waits for the answer too, so the step commits with the answer instead of
being dropped and run again. Either way the node runs once, with the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from openwop_bridge import Engine, NodeContext, Workflow, approval, custom
from openwop_bridge.core.errors import InterruptTimeoutError
from openwop_bridge.runtime import executor, joint
from tests.helpers import ADMIN, events, settle

DEADLINE_MS = 1000


async def test_a_deadline_inside_the_joint_window_lets_the_answer_win(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    wf = Workflow("joint-timer")
    seen: list[Any] = []
    due = asyncio.Event()

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        try:
            value = await ctx.interrupt(custom("slow", timeout_ms=DEADLINE_MS))
        except InterruptTimeoutError:
            seen.append("timeout")
            return {"value": "timeout"}
        seen.append(value)
        # The resumed step is still running when the deadline passes and the timer finds it due.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(due.wait(), 3)
        await asyncio.sleep(0.3)
        return {"value": value}

    wf.register(engine)
    real_due = engine.store.due_interrupts

    async def watched(now_ms: int, limit: int = 200) -> list[str]:
        found = await real_due(now_ms, limit)
        if found and seen:
            due.set()
        return found

    monkeypatch.setattr(engine.store, "due_interrupts", watched)
    # The answer waits for its step as long as the node takes (the executor commits what is done
    # only when the node ends): the deadline falls in that window.
    monkeypatch.setattr(joint, "BUDGET_S", 30.0)
    monkeypatch.setattr(executor, "FLUSH_AFTER_S", 30.0)
    run = await engine.create_run(ADMIN, "joint-timer")
    await settle(engine, run.run_id)
    answered = await engine.resolve(ADMIN, {"v": 1}, run_id=run.run_id, node_id="n")
    assert answered["status"] == "resolved"
    done = await settle(engine, run.run_id, statuses=("completed", "failed"), timeout=15)
    # The answer commits with its step: the deadline fell while both were in flight.
    assert due.is_set()
    assert seen == [{"v": 1}]
    assert done.status == "completed" and done.state["outputs"]["n"] == {"value": {"v": 1}}
    resolved = await events(engine, run.run_id, "interrupt.resolved")
    assert [e["payload"].get("reason") for e in resolved] == [None]


async def test_a_child_ending_inside_the_joint_window_does_not_run_the_step_again(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    child_wf, parent_wf = Workflow("joint-child"), Workflow("joint-parent")
    seen: list[Any] = []
    running, child_done = asyncio.Event(), asyncio.Event()

    @child_wf.node("c")
    async def c(ctx: NodeContext) -> dict[str, Any]:
        answer = await ctx.interrupt(approval("child gate"))
        child_done.set()
        return {"answer": answer}

    @parent_wf.node("a")
    async def a(ctx: NodeContext) -> dict[str, Any]:
        status, _ = await ctx.run_child("joint-child")
        return {"child": status}

    @parent_wf.node("b")
    async def b(ctx: NodeContext) -> dict[str, Any]:
        value = await ctx.interrupt(custom("parent gate"))
        seen.append(value)
        running.set()
        # Still running when the child ends and wakes this run.
        await asyncio.wait_for(child_done.wait(), 10)
        await asyncio.sleep(0.3)
        return {"value": value}

    child_wf.register(engine)
    parent_wf.register(engine)
    # Long enough for b to finish inside it (a woken executor waits for the answer, which then
    # commits alone once the budget ran out).
    monkeypatch.setattr(joint, "BUDGET_S", 3.0)
    monkeypatch.setattr(executor, "FLUSH_AFTER_S", 30.0)
    run = await engine.create_run(ADMIN, "joint-parent")
    await settle(engine, run.run_id)
    (child,) = await engine.store.child_runs(run.run_id)
    await settle(engine, child.run_id)
    answering = asyncio.create_task(engine.resolve(ADMIN, {"v": 2}, run_id=run.run_id, node_id="b"))
    await asyncio.wait_for(running.wait(), 10)
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=child.run_id, node_id="c")
    answered = await asyncio.wait_for(answering, 15)
    assert answered["status"] == "resolved"
    done = await settle(engine, run.run_id, statuses=("completed", "failed"), timeout=15)
    assert seen == [{"v": 2}]
    assert done.status == "completed"
    assert done.state["outputs"]["b"] == {"value": {"v": 2}} and done.state["outputs"]["a"] == {"child": "completed"}
