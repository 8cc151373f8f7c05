"""``Store.kv_scan`` beyond the contract: a database from before it, and values held for the next commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from openwop_bridge.store import open_store
from openwop_bridge.store.migrations import POSTGRES_MIGRATIONS
from openwop_bridge.store.sqlite import SqliteStore
from tests import pg
from tests.store.schemas import postgres_at

#: The schema version before key-value keys compared bytewise on PostgreSQL.
BEFORE = 6
#: In this order by their bytes; a linguistic collation puts ``a`` before ``B`` and ignores punctuation first.
KEYS = ['["t1","B"]', '["t1","a"]', '["t1-x","c"]', '["t1,"]']


@pytest.mark.postgres
async def test_keys_stored_under_a_linguistic_collation_are_scanned_by_their_bytes_after_the_migration(
    pg_url: str,
) -> None:
    postgres_at(pg_url, BEFORE)
    # As in a database created with a linguistic default collation (the test cluster's is C.UTF-8).
    pg.execute(pg_url, 'ALTER TABLE kv ALTER COLUMN key TYPE TEXT COLLATE "und-x-icu"')
    for i, key in enumerate(KEYS):
        pg.execute(
            pg_url, "INSERT INTO kv(namespace, key, value, updated_at) VALUES('ns', %s, %s::json, 1)", key, str(i)
        )
    assert [r[0] for r in pg.execute(pg_url, "SELECT key FROM kv ORDER BY key")] != sorted(KEYS)

    store = open_store(pg_url)
    await store.open()
    try:
        assert await store.kv_scan("ns", '["t1",', limit=10, descending=False) == [(KEYS[0], 0), (KEYS[1], 1)]
        assert await store.kv_get("ns", KEYS[2]) == 2
    finally:
        await store.close()
    assert pg.execute(pg_url, "SELECT value FROM meta") == [(str(len(POSTGRES_MIGRATIONS)),)]
    assert [r[0] for r in pg.execute(pg_url, "SELECT key FROM kv ORDER BY key")] == sorted(KEYS)


async def test_a_value_held_for_the_next_commit_is_scanned_in_its_place(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "kv.db")
    await store.open()
    try:
        for key in ("a1", "a3", "a5"):
            await store.kv_put("ns", key, key, 1_000)
        await store.kv_put_soon("ns", "a4", "held", 2_000)
        await store.kv_put_soon("ns", "a3", "changed", 2_000)
        await store.kv_put_soon("ns", "b1", "elsewhere", 2_000)
        await store.kv_put_soon("other", "a2", "elsewhere", 2_000)
        assert await store.kv_scan("ns", "a", limit=2) == [("a5", "a5"), ("a4", "held")]
        assert await store.kv_scan("ns", "a", limit=2, after="a4") == [("a3", "changed"), ("a1", "a1")]
        assert await store.kv_scan("ns", "a", limit=10, descending=False, after="a3") == [("a4", "held"), ("a5", "a5")]
        await store.kv_put("ns", "a0", "a0", 3_000)  # the held values go with this commit
        assert await store.kv_scan("ns", "a", limit=3) == [("a5", "a5"), ("a4", "held"), ("a3", "changed")]
    finally:
        await store.close()
