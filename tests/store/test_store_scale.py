"""What a server holding very many suspended runs must not pay for each of them (SQLite).

Two costs must not grow with the number of waiting runs: starting the server
(no statement run at start-up may scan the runs, interrupts or events tables)
and reading a page of the inbox or of the run list (a keyset cursor seeks into
its index; a page deep in the list costs what the first one does). Both are
checked without timing: start-up by the query plans of the statements it
actually runs, pages by the number of SQLite virtual-machine steps they take.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge.runtime.engine import Engine
from openwop_bridge.store import sqlite as sqlite_module
from openwop_bridge.store import sqlite_writer
from openwop_bridge.store.base import RunCommit
from openwop_bridge.store.cursor import encode_cursor
from openwop_bridge.store.sqlite import SqliteStore
from tests.store.test_store_contract import claimed, make_interrupt, make_run, started

WAITING = 3_000
#: Statements that change the schema or the transaction, whose plans say nothing about rows read.
NOT_QUERIES = ("PRAGMA", "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "CREATE", "DROP", "ALTER")
#: ``SCAN runs`` reads every row of the table; ``SCAN runs USING [COVERING] INDEX x`` reads one index.
FULL_SCAN = re.compile(r"\bSCAN (runs|interrupts|events)\b(?! USING)")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = SqliteStore(tmp_path / "scale.db")
    await s.open()
    try:
        yield s
    finally:
        await s.close()


async def waiting(store: SqliteStore, count: int = WAITING, tenant: str = "acme") -> None:
    """``count`` open interrupts (every tenth a clarification) and ``count`` suspended runs of ``tenant``."""
    for i in range(count):
        await store.create_run(make_run(tenant=tenant, created=1_000 + i), [])
    run = await started(store, make_run(tenant=tenant))
    own = await claimed(store, run)
    records = [
        make_interrupt(run, f"n{i}", kind="clarification" if i % 10 == 9 else "approval", requested=2_000 + i // 3)
        for i in range(count)
    ]
    await store.commit(RunCommit(run.run_id, "A", own.epoch, 3_000, new_interrupts=records))


class Steps:
    """Counts the virtual-machine steps the store's reader connection takes."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.count = 0
        conn.set_progress_handler(self._tick, 10)

    def _tick(self) -> int:
        self.count += 1
        return 0

    def take(self) -> int:
        """Steps (in tens) since the last call."""
        taken, self.count = self.count, 0
        return taken


async def test_a_deep_inbox_page_costs_what_the_first_does(store: SqliteStore) -> None:
    await waiting(store)
    assert store._reader is not None
    steps = Steps(store._reader)
    for kind in ("clarification", None):
        cursor, first, deepest, pages = None, 0, 0, 0
        while True:
            page = await store.inbox("acme", kind=kind, status="pending", limit=50, cursor=cursor)
            taken = steps.take()
            first, deepest, pages = first or taken, max(deepest, taken), pages + 1
            cursor = page.next_cursor
            if cursor is None:
                break
        assert pages >= 6, kind
        # Before keyset seeks, the last page walked every index entry before it: many times the first.
        assert deepest <= first * 1.5, (kind, first, deepest)


async def test_a_deep_run_list_page_costs_what_the_first_does(store: SqliteStore) -> None:
    await waiting(store)
    await waiting(store, 200, tenant="other")
    assert store._reader is not None
    steps = Steps(store._reader)
    cursor, first, deepest, pages = None, 0, 0, 0
    while True:
        runs, cursor = await store.list_runs("acme", workflow_id=None, status=None, limit=50, cursor=cursor)
        taken = steps.take()
        first, deepest, pages = first or taken, max(deepest, taken), pages + 1
        assert all(r.tenant == "acme" for r in runs)
        if cursor is None:
            break
    assert pages >= 60
    assert deepest <= first * 1.5, (first, deepest)


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every SQL statement the store's connections run from now on (bound values filled in)."""
    seen: list[str] = []

    def traced(path: str, synchronous: str) -> sqlite3.Connection:
        conn = sqlite_writer_connect(path, synchronous)
        conn.set_trace_callback(seen.append)
        return conn

    sqlite_writer_connect = sqlite_writer.connect
    monkeypatch.setattr(sqlite_writer, "connect", traced)
    monkeypatch.setattr(sqlite_module, "connect", traced)
    yield seen


async def test_start_up_and_housekeeping_scan_no_growing_table(tmp_path: Path, statements: list[str]) -> None:
    path = tmp_path / "scale.db"
    populated = SqliteStore(path)
    await populated.open()
    await waiting(populated, 50)
    await populated.close()
    statements.clear()
    engine = Engine(SqliteStore(path), workflows=[])
    await engine.start()
    # What the heartbeat and the timers then do every few seconds, whatever the runs.
    await engine.recover()
    await engine.store.next_deadline()
    await engine.store.due_interrupts(engine.clock.now_ms())
    await engine.stop()
    queries = [s for s in statements if not s.lstrip().upper().startswith(NOT_QUERIES)]
    assert any("runs" in q for q in queries)  # start-up does look at the runs: through indexes only
    with sqlite3.connect(path) as conn:
        for query in queries:
            plan = " / ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + query))
            assert not FULL_SCAN.search(plan), f"{query}\n  -> {plan}"


@pytest.mark.postgres
async def test_postgres_pages_seek_with_their_cursor(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from openwop_bridge.store.postgres import PostgresStore

    store = PostgresStore(pg_url)
    await store.open()
    sent: list[tuple[str, Sequence[Any]]] = []

    async def record(sql: str, args: Sequence[Any] = ()) -> list[Any]:
        sent.append((sql, args))
        return []

    monkeypatch.setattr(store, "_all", record)
    try:
        await store.inbox("t", kind="approval", status="pending", limit=50, cursor=encode_cursor(5, "x"))
        await store.list_runs("t", workflow_id=None, status=None, limit=50, cursor=encode_cursor(5, "x"))
    finally:
        await store.close()
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        inbox, runs = ("\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, args).fetchall()) for sql, args in sent)
    # Before: the cursor was a filter on rows read from the start of the (tenant, status, kind) range.
    assert "Index Cond" in inbox and "ROW(requested_at, interrupt_id) > ROW" in inbox and "Sort" not in inbox, inbox
    assert "Index Cond" in runs and "ROW(created_at, run_id) < ROW" in runs and "Sort" not in runs, runs


async def plans_of(store: SqliteStore, reads: Callable[[], Awaitable[object]]) -> list[str]:
    """The query plans of the statements ``reads`` runs on the store's reader connection."""
    assert store._reader is not None
    sent: list[str] = []
    store._reader.set_trace_callback(sent.append)
    try:
        await reads()
    finally:
        store._reader.set_trace_callback(None)
    return [" / ".join(row[3] for row in store._reader.execute("EXPLAIN QUERY PLAN " + sql)) for sql in sent]


async def test_a_runs_reads_seek_its_range_and_sort_nothing(store: SqliteStore) -> None:
    """An address's latest interrupt and a run's events of some types come off an index range in order."""

    async def reads() -> None:
        await store.interrupt_at("run_1", "gate")
        await store.run_and_interrupt_at("run_1", "gate")
        await store.events_of_types("run_1", ["node.suspended", "conversation.opened"])
        await store.read_events("run_1", 3)
        await store.activation_events("run_1", "gate", 0)
        await store.audit("run_1")

    plans = await plans_of(store, reads)
    assert len(plans) == 6
    for plan in plans:
        assert "SEARCH" in plan and "(run_id=?" in plan, plan
        # Before interrupts_addr held ``ordinal``, the latest interrupt at an address was sorted in a temp b-tree.
        assert "TEMP B-TREE" not in plan and not FULL_SCAN.search(plan), plan


async def test_a_nodes_interrupts_seek_the_runs_range(store: SqliteStore) -> None:
    """Without an index of their own, a node's interrupts are read from the run's range of another index."""

    async def reads() -> None:
        await store.node_interrupts("run_1", "gate")
        await store.interrupt_at_slot("run_1", "gate", 0, 0)
        await store.interrupt_by_key("run_1", "run_1:gate:0")

    plans = await plans_of(store, reads)
    assert len(plans) == 3
    for plan in plans:
        assert "SEARCH" in plan and "(run_id=?" in plan and not FULL_SCAN.search(plan), plan
