"""A store refuses a write that would change a status in a way the table forbids, and writes nothing.

Both stores apply decisions through the one plan that calls
:func:`openwop_bridge.core.statuses.check_run` and :func:`~openwop_bridge.core.statuses.check_interrupt`.
"""

from __future__ import annotations

import pytest

from openwop_bridge import Engine
from openwop_bridge.core.errors import StatusTransitionError
from openwop_bridge.core.records import InterruptRecord, Mutation, RunRecord
from tests.helpers import ADMIN, settle


async def test_an_ended_run_is_not_made_live_again(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-noop")
    done = await settle(engine, run.run_id, statuses=("completed",))
    assert done.status == "completed"

    def revive(_: RunRecord, __: list[InterruptRecord]) -> Mutation:
        return Mutation(run_status="running", wake=True)

    with pytest.raises(StatusTransitionError, match="from 'completed' to 'running'"):
        await engine.store.mutate_run(run.run_id, revive, engine.clock.now_ms())
    after = await engine.store.load_run(run.run_id)
    assert after is not None and (after.status, after.wake) == ("completed", done.wake)


async def test_a_closed_interrupt_is_not_opened_again(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-approval")
    await settle(engine, run.run_id)
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="gate")
    await settle(engine, run.run_id, statuses=("completed",))

    def reopen(_: InterruptRecord, __: RunRecord) -> Mutation:
        return Mutation(interrupt_status="pending", wake=True)

    with pytest.raises(StatusTransitionError, match="from 'resolved' to 'pending'"):
        await engine.store.mutate_interrupt(reopen, engine.clock.now_ms(), run_id=run.run_id, node_id="gate")
    closed = await engine.store.interrupt_at(run.run_id, "gate")
    assert closed is not None and closed.status == "resolved"
