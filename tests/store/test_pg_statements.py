"""What one approval cycle costs on PostgreSQL, counted at the driver.

A cycle is a run created, suspended on one approval, answered and completed.
Every statement the store sends goes through psycopg's cursor, and every
transaction opens with ``Connection.transaction()`` or, in pipeline mode, with a
``BEGIN`` sent through the cursor: counting them pins how many times a cycle
talks to the server, which bounds its latency far more than the work done on
either side. The waits for the server are counted too: a statement outside a
pipeline, a read of rows inside one, and each pipeline's sync (nested pipelines
included) is one round trip at most.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from bridge import Engine, NodeContext, Workflow, approval
from bridge.runtime.config import EngineConfig
from bridge.store.postgres import PostgresStore
from tests.helpers import ADMIN

pytestmark = pytest.mark.postgres

LISTENER = "openwop-bridge-listen"


class Driver:
    """Counts the statements and transactions the store's pooled connections send."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: Counter[str] = Counter()
        self.statements: list[str] = []
        execute, executemany = psycopg.AsyncCursor.execute, psycopg.AsyncCursor.executemany
        fetchall, fetchone = psycopg.AsyncCursor.fetchall, psycopg.AsyncCursor.fetchone
        transaction = psycopg.AsyncConnection.transaction
        pipeline_exit = psycopg.AsyncPipeline.__aexit__
        driver = self

        async def counted_execute(cur: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
            driver.sent(cur.connection, str(query))
            return await execute(cur, query, *args, **kwargs)

        async def counted_executemany(cur: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
            driver.sent(cur.connection, str(query))
            return await executemany(cur, query, *args, **kwargs)

        async def counted_fetchall(cur: psycopg.AsyncCursor[Any]) -> Any:
            driver.read(cur.connection)
            return await fetchall(cur)

        async def counted_fetchone(cur: psycopg.AsyncCursor[Any]) -> Any:
            driver.read(cur.connection)
            return await fetchone(cur)

        def counted_transaction(conn: psycopg.AsyncConnection[Any], *args: Any, **kwargs: Any) -> Any:
            if driver.ours(conn):
                driver.counts["transactions"] += 1
            return transaction(conn, *args, **kwargs)

        async def counted_pipeline_exit(pipeline: psycopg.AsyncPipeline, *args: Any) -> Any:
            if driver.ours(pipeline._conn):
                driver.counts["round_trips"] += 1  # every pipeline exit syncs and waits for the server
            return await pipeline_exit(pipeline, *args)

        monkeypatch.setattr(psycopg.AsyncCursor, "execute", counted_execute)
        monkeypatch.setattr(psycopg.AsyncCursor, "executemany", counted_executemany)
        monkeypatch.setattr(psycopg.AsyncCursor, "fetchall", counted_fetchall)
        monkeypatch.setattr(psycopg.AsyncCursor, "fetchone", counted_fetchone)
        monkeypatch.setattr(psycopg.AsyncConnection, "transaction", counted_transaction)
        monkeypatch.setattr(psycopg.AsyncPipeline, "__aexit__", counted_pipeline_exit)

    @staticmethod
    def ours(conn: psycopg.AsyncConnection[Any]) -> bool:
        """A pooled connection of the store (the listener's only waits for notices)."""
        return conn.info.parameter_status("application_name") != LISTENER

    def sent(self, conn: psycopg.AsyncConnection[Any], query: str) -> None:
        if not self.ours(conn):
            return
        if conn._pipeline is None:
            self.counts["round_trips"] += 1  # outside a pipeline, execute waits for the result
        if query in ("BEGIN", "COMMIT", "ROLLBACK"):
            # Sent in a pipeline instead of by ``Connection.transaction()``: the transaction, not a statement in it.
            self.counts["transactions"] += query == "BEGIN"
            return
        self.counts["statements"] += 1
        self.statements.append(query.split(" WHERE ")[0][:80])
        if query.lstrip().startswith("SELECT pg_notify"):
            self.counts["notify"] += 1

    def read(self, conn: psycopg.AsyncConnection[Any]) -> None:
        if self.ours(conn) and conn._pipeline is not None:
            self.counts["round_trips"] += 1  # in a pipeline, reading rows flushes and waits (at most once each)

    def reset(self) -> None:
        self.counts.clear()
        self.statements.clear()


@pytest.fixture
async def engine(pg_url: str) -> AsyncIterator[Engine]:
    # Leases long enough that no heartbeat falls inside a counted cycle.
    async with Engine(PostgresStore(pg_url), config=EngineConfig(lease_ms=3_600_000)) as eng:
        wf = Workflow("one-gate")

        @wf.node("gate")
        async def gate(ctx: NodeContext) -> dict[str, Any]:
            return {"answer": await ctx.interrupt(approval("Ship it?"))}

        wf.register(eng)
        yield eng


async def _cycle(engine: Engine) -> None:
    """Create, suspend, answer, complete; returns once ``run.completed`` is committed."""
    seen: dict[tuple[str, str], asyncio.Event] = {}

    def wanted(run_id: str, kind: str) -> asyncio.Event:
        return seen.setdefault((run_id, kind), asyncio.Event())

    def on_events(run_id: str, docs: list[dict[str, Any]]) -> None:
        for doc in docs:
            wanted(run_id, doc["type"]).set()

    engine.hub.add_listener(on_events)
    run = await engine.create_run(ADMIN, "one-gate")
    await asyncio.wait_for(wanted(run.run_id, "node.suspended").wait(), 10)
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="gate")
    await asyncio.wait_for(wanted(run.run_id, "run.completed").wait(), 10)
    # The executor has nothing left to send once its terminal commit published.
    while run.run_id in engine._executors:
        await asyncio.sleep(0.001)


async def test_a_cycle_is_two_transactions_and_few_statements(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    await _cycle(engine)  # warm-up: pool connections, prepared statements
    driver = Driver(monkeypatch)
    before = engine.store.commits
    await _cycle(engine)
    counted = dict(driver.counts)
    # An answer commits with the step it wakes, as on SQLite: create-and-suspend, answer-and-complete.
    assert engine.store.commits - before == 2, counted
    assert counted["transactions"] == 2, counted
    # One notice per transaction, whatever it touched.
    assert counted["notify"] == 2, counted
    # Reads of the answer and the executor included (26 before the answer joined its step and the
    # reads of rows the transaction had just written were folded).
    assert counted["statements"] <= 22, (counted, driver.statements)
    # Waits for the server: one per transaction (its pipeline's sync: 4 while psycopg's
    # ``Connection.transaction()`` opened it), one per read of rows, one per statement alone.
    assert counted["round_trips"] <= 8, (counted, driver.statements)
