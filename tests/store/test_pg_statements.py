"""What one approval cycle costs on PostgreSQL, counted at the driver.

A cycle is a run created, suspended on one approval, answered and completed.
Every message the store sends goes through psycopg's cursor, and is answered
once: counting them counts the cycle's round trips, which bound its latency far
more than the work done on either side. A message may hold several statements
(bound on the client and sent together): the server answers each with a result
of its own, which counts the statements (a ``PREPARE`` a connection needs the
first time it runs a statement aside). Transactions open with
``Connection.transaction()`` or with a ``BEGIN`` at the head of a message; the
notices are counted as another session listening receives them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from openwop_bridge import Engine, NodeContext, Workflow, approval
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.store.pg_sql import CHANNEL
from openwop_bridge.store.postgres import PostgresStore
from tests.helpers import ADMIN

pytestmark = pytest.mark.postgres

LISTENER = "openwop-bridge-listen"
PREPARE = "PREPARE "


class Driver:
    """Counts the messages, statements and transactions the store's pooled connections send."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: Counter[str] = Counter()
        self.statements: list[str] = []
        execute, executemany = psycopg.AsyncCursor.execute, psycopg.AsyncCursor.executemany
        transaction = psycopg.AsyncConnection.transaction
        driver = self

        async def counted_execute(cur: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
            result = await execute(cur, query, *args, **kwargs)
            driver.sent(cur, str(query), len(cur._results))
            return result

        async def counted_executemany(cur: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
            driver.sent(cur, str(query), 1)
            return await executemany(cur, query, *args, **kwargs)

        def counted_transaction(conn: psycopg.AsyncConnection[Any], *args: Any, **kwargs: Any) -> Any:
            if driver.ours(conn):
                driver.counts["transactions"] += 1
            return transaction(conn, *args, **kwargs)

        monkeypatch.setattr(psycopg.AsyncCursor, "execute", counted_execute)
        monkeypatch.setattr(psycopg.AsyncCursor, "executemany", counted_executemany)
        monkeypatch.setattr(psycopg.AsyncConnection, "transaction", counted_transaction)

    @staticmethod
    def ours(conn: psycopg.AsyncConnection[Any]) -> bool:
        """A pooled connection of the store (the listener's only waits for notices)."""
        return conn.info.parameter_status("application_name") != LISTENER

    def sent(self, cur: psycopg.AsyncCursor[Any], query: str, results: int) -> None:
        """One message (answered once) of ``results`` statements; ``BEGIN`` and ``COMMIT`` are not counted as such."""
        if not self.ours(cur.connection):
            return
        self.counts["round_trips"] += 1
        statements = max(results, 1)
        if query == "BEGIN" or query.startswith("BEGIN;"):
            self.counts["transactions"] += 1
            statements -= 1
        if query == "COMMIT" or query.endswith(";COMMIT"):
            statements -= 1
        # Statements prepared on a connection the first time it runs them are not the cycle's own.
        prepared = query.startswith(PREPARE) + query.count(f";{PREPARE}")
        self.counts["statements"] += statements - prepared
        self.statements.append(query.removeprefix("BEGIN;")[:80])

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


async def test_a_cycle_is_two_transactions_and_few_statements(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    await _cycle(engine)  # warm-up: pool connections, prepared statements
    listening = await psycopg.AsyncConnection.connect(pg_url, autocommit=True)
    await listening.execute(f"LISTEN {CHANNEL}")
    driver = Driver(monkeypatch)
    before = engine.store.commits
    await _cycle(engine)
    counted = dict(driver.counts)
    counted["notify"] = len([n async for n in listening.notifies(timeout=0.5)])
    await listening.close()
    # An answer commits with the step it wakes, as on SQLite: create-and-suspend, answer-and-complete.
    assert engine.store.commits - before == 2, counted
    assert counted["transactions"] == 2, counted
    # One notice per transaction, whatever it touched.
    assert counted["notify"] == 2, counted
    # Reads of the answer and the executor included (26 before the answer joined its step and the
    # reads of rows the transaction had just written were folded, 20 before a new run's events and
    # its first step's were one INSERT, the answer read its run and interrupt together and each
    # INSERT of several rows became one; the answer's two guards take the place of its two reads; 15
    # while the executor an answer resumes read the run's unconsumed interrupts and its node's; 13
    # while the answer's events and its step's were two INSERTs). The decision record takes three more in the
    # answer's transaction: the tenant chain's advisory lock, the read of its last record, the record's INSERT.
    assert counted["statements"] <= 15, (counted, driver.statements)
    # Messages, each answered once: a transaction without reads is one message, and so is the
    # answer's, its rows compared on the server with those it decided on; the answer's read is one
    # (14 while each statement was sent on its own, with psycopg's pipeline syncs; 6 while the
    # answer's transaction read its rows before writing; 5 while the executor an answer resumes read
    # the run's unconsumed interrupts and its node's, one round trip each). The decision record's lock and read
    # are one more, sent together once the answer is decided: its record links to the chain's last one.
    assert counted["round_trips"] <= 4, (counted, driver.statements)


async def _prepared_alike(store: PostgresStore) -> None:
    """Every statement of ours prepared on the store's one connection is one its batches know, and back."""
    from openwop_bridge.store import pg_batch

    async with store._connection() as conn:
        cur = await conn.execute("SELECT name FROM pg_prepared_statements WHERE starts_with(name, 'owb_')")
        on_server = sorted(name for (name,) in await cur.fetchall())
        known = sorted(pg_batch._PREPARED[conn].values())
    assert on_server == known and known, (on_server, known)


async def test_statements_stay_prepared_alike_on_the_server_and_in_the_store_after_a_refusal(pg_url: str) -> None:
    from tests.store.test_store_contract import draft, make_run

    first, second = PostgresStore(pg_url), PostgresStore(pg_url, min_size=1, max_size=1)
    await first.open()
    await second.open()
    try:
        run = make_run()
        await first.create_run(run, [draft("run.started")])
        # The second store's one connection prepares the INSERT, which the database then refuses:
        # the PREPARE stays (a rollback does not undo it) though the store never learnt it worked.
        with pytest.raises(psycopg.errors.UniqueViolation):
            await second.create_run(run, [draft("run.started")])
        await second.create_run(make_run(), [draft("run.started")])
        await _prepared_alike(second)
        # psycopg prepares a read it repeats, and then deallocates every prepared statement when a
        # transaction rolls back: the store's must be prepared again, not executed as they were.
        for _ in range(8):
            await second.load_run(run.run_id)
        with pytest.raises(psycopg.errors.UniqueViolation):
            await second.create_run(run, [draft("run.started")])
        await second.create_run(make_run(), [draft("run.started")])
        await _prepared_alike(second)
    finally:
        await first.close()
        await second.close()


async def test_values_are_quoted_as_psycopg_quotes_them(pg_url: str) -> None:
    from openwop_bridge.store.pg_batch import Batch

    values = [0, 7, -1, -(2**63), 2**70, True, False, None, "", "it's", "back\\slash", "it's \\'both'\\"]
    values += ["ünï 🙂", "E'x'", "line\nbreak;--", ["a", "b'c"], 1.5]
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        batch, cur = Batch(conn), psycopg.AsyncClientCursor(conn)
        for value in values:
            assert batch._literal(value) == cur.mogrify("%s", (value,)), value
        # And the server reads them back as they were (the list as the text[] it is sent for).
        listed = ",".join(f"{batch._literal(v)}::text[]" if isinstance(v, list) else batch._literal(v) for v in values)
        row = await (await conn.execute(f"SELECT {listed}")).fetchone()
        assert list(row or ()) == values
        # A NUL, which no text value may hold, is refused as psycopg refuses it.
        with pytest.raises(psycopg.DataError):
            cur.mogrify("%s", ("a\x00b",))
        with pytest.raises(psycopg.DataError):
            batch._literal("a\x00b")


async def test_connections_kept_between_pieces_of_work_are_shared_and_replaced_once_dead(pg_url: str) -> None:
    from tests import pg
    from tests.store.test_store_contract import draft, make_run

    store = PostgresStore(pg_url, min_size=1, max_size=1)
    await store.open()
    try:
        run = make_run()
        await store.create_run(run, [draft("run.started")])
        # One connection, twenty readers at once: each hands it on to the next waiting for it.
        found = await asyncio.wait_for(asyncio.gather(*(store.load_run(run.run_id) for _ in range(20))), 10)
        assert all(r is not None and r.run_id == run.run_id for r in found)
        assert len(store._idle) == 1
        # The connection kept is killed: the next piece of work meets the outage, the one after a new connection.
        for (pid,) in pg.execute(
            pg_url,
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
        ):
            pg.execute(pg_url, "SELECT pg_terminate_backend(%s)", pid)
        with pytest.raises(store.transient_errors):
            await store.load_run(run.run_id)
        assert (await asyncio.wait_for(store.load_run(run.run_id), 10)) is not None
    finally:
        await store.close()
