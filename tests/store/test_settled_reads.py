"""The decision report's read (``settled_interrupts``) is one range of ``interrupts_settled``, on both stores:
no scan of the interrupts, no sort, and the outbox looked up by interrupt."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge import SqliteStore
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
