"""The decision report's read (``settled_interrupts``) is one range of ``interrupts_settled``, on both stores:
no scan of the interrupts, no sort, and the outbox looked up by interrupt; migration 12 adds that index to a
database of schema 11, whose settled interrupts it then reports."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge import SqliteStore
from openwop_bridge.core.decision_stats import SettledInterrupt, SettledPage
from openwop_bridge.store import open_store
from openwop_bridge.store.base import Store
from openwop_bridge.store.codec import SQLITE
from tests import pg
from tests.store.schemas import postgres_at, sqlite_at
from tests.store.test_store_scale import plans_of


async def test_sqlite_reads_the_window_off_its_index(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "plans.db")
    await store.open()
    try:

        async def pages() -> None:
            await store.settled_interrupts("t", 0, 10, 100)
            await store.settled_interrupts("t", 0, 10, 100, after=(5, "int_x"))

        first, later = await plans_of(store, pages)
    finally:
        await store.close()
    for plan in (first, later):
        assert "SEARCH i USING INDEX interrupts_settled (tenant=? AND resolved_at>? AND resolved_at<?)" in plan, plan
        assert "SCAN i" not in plan and "TEMP B-TREE" not in plan, plan
        assert plan.count("SEARCH o USING INDEX outbox_interrupt (interrupt_id=?)") == 2, plan


@pytest.mark.postgres
async def test_postgres_reads_the_window_off_its_index(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from openwop_bridge.store.postgres import PostgresStore

    store = PostgresStore(pg_url)
    await store.open()
    sent: list[tuple[str, Sequence[Any]]] = []

    async def record(sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        sent.append((sql, args))
        return []

    monkeypatch.setattr(store, "_all", record)
    try:
        page = await store.settled_interrupts("t", 0, 10, 100)
        await store.settled_interrupts("t", 0, 10, 100, after=(5, "int_x"))
    finally:
        await store.close()
    assert page.rows == [] and not page.more
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_sort = off")
        # Statistics of an outbox that delivered many notices, each about its own interrupt (an empty table's
        # estimates would have any index do).
        conn.execute(
            "INSERT INTO outbox (notice_id, channel, tenant, run_id, interrupt_id, recipient, payload, next_attempt, "
            "status, created_at, attempted_at) SELECT 'ntc_' || n, 'email', 't', 'run_' || n, 'int_' || n, 'someone', "
            "'{}', 0, CASE WHEN n % 50 = 0 THEN 'dead' ELSE 'delivered' END, n, n FROM generate_series(1, 5000) n"
        )
        conn.execute("ANALYZE outbox")
        first, later = ("\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, args).fetchall()) for sql, args in sent)
    for plan in (first, later):
        assert "Index Scan using interrupts_settled" in plan, plan
        assert "Sort" not in plan and "Seq Scan" not in plan, plan
        assert plan.count("outbox_interrupt") == 2, plan
    assert "ROW(resolved_at, interrupt_id) > ROW" in later, later


#: An approval alice accepted (requested at 1 s, decided at 3 s) and one still open, as schema 11 stored them.
_OLD = (
    "INSERT INTO interrupts (interrupt_id, run_id, tenant, workflow_id, node_id, exec_node, visit, ordinal, key, kind, "
    "status, payload, requested_at, resolved_at, resolution, state) "
    "VALUES (%s, 'run_1', 'acme', 'wf', %s, %s, 0, 0, %s, 'approval', %s, '{\"kind\": \"approval\", \"data\": {}}', "
    "1000, %s, %s, %s)"
)
_SETTLED = (
    "int_1",
    "gate",
    "gate",
    "gate:0",
    "resolved",
    3000,
    '{"resumeValue": {"action": "accept"}, "resolvedBy": "alice", "action": "accept"}',
    '{"votes": [{"voter": "alice", "action": "accept", "at": "1970-01-01T00:00:03.000Z", "feedback": "ok"}]}',
)
_OPEN = ("int_2", "other", "other", "other:0", "pending", None, None, None)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_a_database_from_schema_11_reports_the_interrupts_it_settled(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if backend == "sqlite":
        with contextlib.closing(sqlite_at(tmp_path / "old.db", 11)) as conn, conn:
            for row in (_SETTLED, _OPEN):
                conn.execute(SQLITE.sql(_OLD), row)
        store: Store = SqliteStore(tmp_path / "old.db")
    else:
        url = request.getfixturevalue("pg_url")
        postgres_at(url, 11)
        for row in (_SETTLED, _OPEN):
            pg.execute(url, _OLD, *row)
        store = open_store(url)
    await store.open()
    try:
        page = await store.settled_interrupts("acme", 0, 10_000, 10)
        assert await store.settled_interrupts("other", 0, 10_000, 10) == SettledPage([], more=False)
    finally:
        await store.close()
    assert page == SettledPage(
        [
            SettledInterrupt(
                interrupt_id="int_1",
                workflow_id="wf",
                kind="approval",
                status="resolved",
                requested_at=1_000,
                resolved_at=3_000,
                resolved_by="alice",
                action="accept",
                reason=None,
                votes=[{"voter": "alice", "action": "accept", "at": "1970-01-01T00:00:03.000Z", "cancelled": False}],
                first_notice_at=None,
                undeliverable=False,
            )
        ],
        more=False,
    )
