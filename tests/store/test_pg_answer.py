"""An answer and the step it wakes in one message to PostgreSQL, guarded by the rows read before it.

Two instances share the database; the run's row is held locked by a third session while both
answers reach their transaction, so both wait in their guards at once. Whichever the server lets
through first applies; the other's guard then finds the rows changed and the shared two-message
plan decides again on what it finds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from openwop_bridge import Engine, NodeContext, Workflow, approval
from openwop_bridge.core.errors import InterruptAlreadyResolvedError
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.store import pg_answer, plan
from openwop_bridge.store.pg_tx import ReturnOrder, Tx
from openwop_bridge.store.postgres import PostgresStore
from tests.helpers import ADMIN, event_types, settle


def _workflow(engine: Engine) -> None:
    wf = Workflow("one-gate")

    @wf.node("gate")
    async def gate(ctx: NodeContext) -> dict[str, Any]:
        return {"answer": await ctx.interrupt(approval("Ship it?"))}

    wf.register(engine)


@pytest.fixture
async def engines(pg_url: str) -> AsyncIterator[tuple[Engine, Engine]]:
    """Two instances on one database."""
    first = Engine(PostgresStore(pg_url), config=EngineConfig(lease_ms=3_600_000))
    second = Engine(PostgresStore(pg_url), config=EngineConfig(lease_ms=3_600_000))
    _workflow(first)
    _workflow(second)
    async with first, second:
        yield first, second


@pytest.fixture
async def run_id(engines: tuple[Engine, Engine]) -> str:
    """A run of the first instance, suspended on its gate and released."""
    run = await engines[0].create_run(ADMIN, "one-gate")
    await settle(engines[0], run.run_id)
    return run.run_id


def _accept(engine: Engine, run_id: str) -> asyncio.Future[Any]:
    """An answer to the run's gate, under way."""
    return asyncio.ensure_future(engine.resolve(ADMIN, {"action": "accept"}, run_id=run_id, node_id="gate"))


class Paths:
    """Counts the guarded plans tried and the shared plans that followed a guard that missed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.guarded = 0
        self.shared = 0
        guarded, shared = pg_answer.answer_guarded, plan.answer_and_step

        def counted_guarded(*args: Any) -> Any:
            self.guarded += 1
            return guarded(*args)

        def counted_shared(*args: Any) -> Any:
            self.shared += 1
            return shared(*args)

        monkeypatch.setattr(pg_answer, "answer_guarded", counted_guarded)
        monkeypatch.setattr(plan, "answer_and_step", counted_shared)


async def _waiting_on_locks(url: str, count: int) -> None:
    """Returns once ``count`` sessions wait for a lock (the answers' guards, behind the held row)."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for _ in range(1000):
            cur = await conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%EXECUTE%'"
            )
            row = await cur.fetchone()
            if row is not None and row[0] >= count:
                return
            await asyncio.sleep(0.01)
    raise AssertionError(f"{count} answers never waited for the run's lock")


@contextlib.asynccontextmanager
async def _held(url: str, run_id: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """The run's row, locked by another session until the block ends (then that session commits)."""
    async with await psycopg.AsyncConnection.connect(url) as holder:
        await holder.execute("SELECT 1 FROM runs WHERE run_id=%s FOR UPDATE", (run_id,))
        yield holder
        await holder.commit()


@pytest.mark.postgres
async def test_two_instances_answering_at_once_have_exactly_one_winner(
    engines: tuple[Engine, Engine], run_id: str, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = engines
    paths = Paths(monkeypatch)
    async with _held(pg_url, run_id):
        answers = [_accept(engine, run_id) for engine in engines]
        await _waiting_on_locks(pg_url, 2)
    outcomes = await asyncio.gather(*answers, return_exceptions=True)
    lost = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(lost) == 1 and isinstance(lost[0], InterruptAlreadyResolvedError), outcomes
    # Both answers took the one-message transaction; the one that came second missed its guard.
    assert (paths.guarded, paths.shared) == (2, 1)
    winner = first if not isinstance(outcomes[0], BaseException) else second
    assert (await settle(winner, run_id)).status == "completed"
    types = await event_types(first, run_id)
    assert types.count("interrupt.resolved") == 1 and types.count("run.completed") == 1, types


@pytest.mark.postgres
async def test_a_guard_that_misses_leaves_the_decision_to_the_two_message_transaction(
    engines: tuple[Engine, Engine], run_id: str, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = engines
    paths = Paths(monkeypatch)
    async with _held(pg_url, run_id) as holder:
        answer = _accept(first, run_id)
        await _waiting_on_locks(pg_url, 1)
        # Another writer of the run commits first: the row the answer decided on is not the one it finds.
        await holder.execute("UPDATE runs SET updated_at=updated_at+1 WHERE run_id=%s", (run_id,))
    await answer
    assert (paths.guarded, paths.shared) == (1, 1)
    # Decided again on the rows found, the answer still applies, and the run goes on without the step.
    assert (await settle(first, run_id)).status == "completed"
    resolved = await first.store.interrupt_at(run_id, "gate")
    assert resolved is not None and resolved.status == "resolved"


def test_locks_taken_with_the_writes_take_their_place_in_the_return_order_once_answered() -> None:
    # The answer's message is queued first, but another transaction's lock read comes back before
    # the answer's message does: that one held the run's lock first, and its caller resumes first.
    order = ReturnOrder()
    answer, other = Tx(order, held_back=True), Tx(order)
    answer.locked("r")
    other.locked("r")
    answer.granted()
    assert other.tickets[0][1] < answer.tickets[0][1]
    # Without holding back, the ticket is taken as the lock is noted.
    plain = Tx(order)
    plain.locked("r")
    assert plain.tickets[0][1] > answer.tickets[0][1]
