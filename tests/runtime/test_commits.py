"""Durable commits per cycle, counted by the store.

A run is created and run until its first suspension in one transaction, and
answers that arrive together share the SQLite writer's group commit.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from openwop_bridge import Engine, NodeContext, SqliteStore, Workflow, approval
from openwop_bridge.core.errors import InterruptAlreadyResolvedError
from tests.helpers import ADMIN, event_types, events, settle


def one_gate(engine: Engine) -> None:
    """A workflow of one approval gate."""
    wf = Workflow("one-gate")

    @wf.node("gate")
    async def gate(ctx: NodeContext) -> dict[str, Any]:
        return {"answer": await ctx.interrupt(approval("Ship it?"))}

    wf.register(engine)


async def test_create_and_run_to_the_first_suspension_is_one_commit(engine: Engine) -> None:
    one_gate(engine)
    before = engine.store.commits
    run = await engine.create_run(ADMIN, "one-gate")
    # create_run returns once the run and its first suspension are durable.
    suspended = await engine.store.load_run(run.run_id)
    assert suspended is not None and suspended.status == "waiting-approval"
    assert await engine.store.run_interrupts(run.run_id, open_only=True)
    await settle(engine, run.run_id)
    assert engine.store.commits - before == 1


async def test_answers_that_arrive_together_share_commits(tmp_path: Path) -> None:
    async with Engine(SqliteStore(tmp_path / "group.db")) as engine:
        one_gate(engine)
        runs = [await engine.create_run(ADMIN, "one-gate") for _ in range(16)]
        for run in runs:
            await settle(engine, run.run_id)
        before = engine.store.commits
        answers = [engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="gate") for run in runs]
        results = await asyncio.gather(*answers)
        assert [r["status"] for r in results] == ["resolved"] * 16
        for run in runs:
            assert (await settle(engine, run.run_id)).status == "completed"
        # 16 answers and 16 completions, in fewer commits than answers.
        assert engine.store.commits - before < 16


async def test_a_cycle_through_the_engine_makes_at_most_two_commits(engine: Engine) -> None:
    one_gate(engine)
    before = engine.store.commits
    run = await engine.create_run(ADMIN, "one-gate")
    await settle(engine, run.run_id)
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="gate")
    assert (await settle(engine, run.run_id)).status == "completed"
    assert engine.store.commits - before <= 2


async def test_answers_racing_on_one_interrupt_have_exactly_one_winner(engine: Engine) -> None:
    one_gate(engine)
    run = await engine.create_run(ADMIN, "one-gate")
    await settle(engine, run.run_id)
    values = [{"action": "accept"}, {"action": "reject"}] * 4
    outcomes = await asyncio.gather(
        *(engine.resolve(ADMIN, v, run_id=run.run_id, node_id="gate") for v in values), return_exceptions=True
    )
    won = [values[i] for i, o in enumerate(outcomes) if isinstance(o, dict) and o.get("status") == "resolved"]
    lost = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(won) == 1 and len(lost) == len(values) - 1, outcomes
    assert all(isinstance(e, InterruptAlreadyResolvedError) for e in lost), lost
    done = await settle(engine, run.run_id)
    assert done.status == "completed"
    types = await event_types(engine, run.run_id)
    assert types.count("interrupt.resolved") == 1 and types.count("node.resumed") == 1, types
    resumed = await events(engine, run.run_id, "node.resumed")
    assert resumed[0]["payload"]["resumeValue"]["action"] == won[0]["action"]
