"""A capped put on SQLite and PostgreSQL: puts at once never store more than the cap of one group, whatever
instance makes them, and each group has its own cap."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from openwop_bridge.store import open_store
from openwop_bridge.store.base import Store
from openwop_bridge.store.sqlite import SqliteStore


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[list[Store]]:
    """One store, or on PostgreSQL two on one database (two instances)."""
    if request.param == "sqlite":
        opened: list[Store] = [SqliteStore(tmp_path / "kv.db")]
    else:
        url = request.getfixturevalue("pg_url")
        opened = [open_store(url), open_store(url)]
    for s in opened:
        await s.open()
    try:
        yield opened
    finally:
        for s in opened:
            await s.close()


async def test_puts_at_once_stay_within_the_cap_of_their_group(stores: list[Store]) -> None:
    async def put(i: int, tenant: str) -> bool:
        store = stores[i % len(stores)]
        return await store.kv_put_capped("subs", f"k{tenant}{i:03d}", {"tenant": tenant}, 1_000, field="tenant", cap=7)

    kept = await asyncio.gather(*(put(i, "acme") for i in range(60)), *(put(i, "other") for i in range(3)))
    assert sum(kept[:60]) == 7 and all(kept[60:])
    assert len(await stores[0].kv_scan("subs", "kacme", limit=100)) == 7
    # A key already stored is refused too, and stays as it was.
    [(key, _)] = await stores[0].kv_scan("subs", "kother", limit=1)
    assert not await stores[0].kv_put_capped("subs", key, {"tenant": "x"}, 2_000, field="tenant", cap=7)
    assert await stores[0].kv_get("subs", key) == {"tenant": "other"}
