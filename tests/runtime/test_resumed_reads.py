"""What an executor an answer resumes reads before its first step, and what it must still see.

An answer that finds its run released resumes the run at once (``bridge.runtime.joint``). The
run was released with nothing left to do, so the answer's own interrupt is the only settled one
its first look can find: that look reads nothing, and neither does the node it resumes when that
interrupt is the node's only one. Anything committed after the answer is read again from the store.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bridge import Engine, NodeContext, Workflow, approval, custom
from bridge.runtime import executor, joint
from tests.helpers import ADMIN, settle

#: The store reads an executor makes for interrupts before it resumes a node.
INTERRUPT_READS = ("unconsumed", "unconsumed_and_node", "node_interrupts")


def count_reads(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the store's interrupt reads from now on."""
    counts = dict.fromkeys(INTERRUPT_READS, 0)
    for name in INTERRUPT_READS:
        real = getattr(engine.store, name)

        async def counted(*args: Any, _real: Any = real, _name: str = name) -> Any:
            counts[_name] += 1
            return await _real(*args)

        monkeypatch.setattr(engine.store, name, counted)
    return counts


async def test_an_answer_resuming_a_one_interrupt_node_reads_no_interrupts(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    wf = Workflow("one-gate")

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        return {"answer": await ctx.interrupt(approval("ok?"))}

    wf.register(engine)
    run = await engine.create_run(ADMIN, "one-gate")
    await settle(engine, run.run_id)
    counts = count_reads(engine, monkeypatch)
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="n")
    done = await settle(engine, run.run_id)
    assert done.status == "completed" and done.state["nodes"]["n"]["outputs"]["answer"]["action"] == "accept"
    assert counts == dict.fromkeys(INTERRUPT_READS, 0)


async def test_a_node_holding_earlier_interrupts_reads_them_when_an_answer_resumes_it(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    wf = Workflow("two-in-turn")

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        return {"a": await ctx.interrupt(custom("a")), "b": await ctx.interrupt(custom("b"))}

    wf.register(engine)
    run = await engine.create_run(ADMIN, "two-in-turn")
    await settle(engine, run.run_id)
    await engine.resolve(ADMIN, {"v": 1}, run_id=run.run_id, node_id="n")
    await settle(engine, run.run_id)
    counts = count_reads(engine, monkeypatch)
    await engine.resolve(ADMIN, {"v": 2}, run_id=run.run_id, node_id="n")
    done = await settle(engine, run.run_id)
    assert done.status == "completed" and done.state["nodes"]["n"]["outputs"] == {"a": {"v": 1}, "b": {"v": 2}}
    assert counts["unconsumed"] + counts["unconsumed_and_node"] == 0
    assert counts["node_interrupts"] == 1


async def test_an_answer_committed_before_the_resumed_step_is_seen_by_it(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer to ``a`` resumes ``n`` and commits alone while ``n`` runs; ``b`` is answered then.

    The executor has not committed anything yet when it looks at the run again: that look must
    read ``b`` from the store, not take the run for as it was when ``a`` was answered.
    """
    running, go_on = asyncio.Event(), asyncio.Event()
    wf = Workflow("two-asks-late")

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        a = await ctx.request(custom("a", key="a"), address="a")
        b = await ctx.request(custom("b", key="b"), address="b")
        if not a.settled and not b.settled:
            ctx.wait_any([a, b])
        if a.settled and not b.settled:
            running.set()
            await go_on.wait()  # b is answered now, after this activation read its interrupts
        return {"a": a.result(), "b": b.result()}

    wf.register(engine)
    # The answer to a commits without the step it woke, and the executor commits nothing until n ends.
    monkeypatch.setattr(joint, "BUDGET_S", 0.0)
    monkeypatch.setattr(executor, "FLUSH_AFTER_S", 30.0)
    run = await engine.create_run(ADMIN, "two-asks-late")
    await settle(engine, run.run_id)
    await engine.resolve(ADMIN, {"v": 1}, run_id=run.run_id, node_id="n:a")
    await asyncio.wait_for(running.wait(), 5)
    await engine.resolve(ADMIN, {"v": 2}, run_id=run.run_id, node_id="n:b")
    go_on.set()
    done = await settle(engine, run.run_id, statuses=("completed", "failed"), timeout=5)
    assert done.status == "completed", done.state["nodes"]
    assert done.state["nodes"]["n"]["outputs"] == {"a": {"v": 1}, "b": {"v": 2}}
