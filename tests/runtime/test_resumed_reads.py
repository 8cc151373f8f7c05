"""What an executor an answer resumes reads before its first step, and what it must still see.

An answer that finds its run released resumes the run at once (``openwop_bridge.runtime.joint``). The
run was released with nothing left to do, so the answer's own interrupt is the only settled one
its first look can find: that look reads nothing, and neither does the node it resumes when that
interrupt is the node's only one. Anything committed after the answer is read again from the store
(``test_an_answer_committed_before_the_resumed_step_is_seen_by_it``, in test_interrupt_primitive.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from openwop_bridge import Engine, NodeContext, Workflow, approval, custom
from openwop_bridge.core.records import RunRecord
from openwop_bridge.runtime.nodes.base import NodeFunction
from tests.helpers import ADMIN, settle

#: The store reads an executor makes for interrupts before it resumes a node.
INTERRUPT_READS = ("unconsumed", "node_interrupts")


async def reads_of_last_answer(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, node: NodeFunction, answers: list[Any]
) -> tuple[RunRecord, dict[str, int]]:
    """Run node ``n`` (``node``), answer it with each of ``answers`` in turn; the finished run,
    and the interrupt reads the store made from the last answer on."""
    wf = Workflow("resumed")
    wf.node("n", node)
    wf.register(engine)
    run = await engine.create_run(ADMIN, "resumed")
    counts = dict.fromkeys(INTERRUPT_READS, 0)
    for i, answer in enumerate(answers):
        await settle(engine, run.run_id)
        if i == len(answers) - 1:
            for name in INTERRUPT_READS:
                real = getattr(engine.store, name)

                async def counted(*args: Any, _real: Any = real, _name: str = name) -> Any:
                    counts[_name] += 1
                    return await _real(*args)

                monkeypatch.setattr(engine.store, name, counted)
        await engine.resolve(ADMIN, answer, run_id=run.run_id, node_id="n")
    return await settle(engine, run.run_id), counts


async def test_an_answer_resuming_a_one_interrupt_node_reads_no_interrupts(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def n(ctx: NodeContext) -> dict[str, Any]:
        return {"answer": await ctx.interrupt(approval("ok?"))}

    done, counts = await reads_of_last_answer(engine, monkeypatch, n, [{"action": "accept"}])
    assert done.status == "completed" and done.state["nodes"]["n"]["outputs"]["answer"]["action"] == "accept"
    assert counts == dict.fromkeys(INTERRUPT_READS, 0)


async def test_a_node_holding_earlier_interrupts_reads_them_when_an_answer_resumes_it(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def n(ctx: NodeContext) -> dict[str, Any]:
        return {"a": await ctx.interrupt(custom("a")), "b": await ctx.interrupt(custom("b"))}

    done, counts = await reads_of_last_answer(engine, monkeypatch, n, [{"v": 1}, {"v": 2}])
    assert done.status == "completed" and done.state["nodes"]["n"]["outputs"] == {"a": {"v": 1}, "b": {"v": 2}}
    assert counts["unconsumed"] == 0
    assert counts["node_interrupts"] == 1
