"""Durable commits per cycle, counted by the store.

A run is created and run until its first suspension in one transaction, and
answers that arrive together share the SQLite writer's group commit.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bridge import Engine, NodeContext, SqliteStore, Workflow, approval
from tests.helpers import ADMIN, settle


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
