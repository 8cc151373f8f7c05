"""Derived adapter state on SQLite: held for the next transaction, read at once, kept across a clean stop."""

from __future__ import annotations

from pathlib import Path

import pytest

from openwop_bridge import SqliteStore
from openwop_bridge.core.errors import ValidationError


async def test_a_derived_value_rides_on_the_next_commit(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "kv.db")
    await store.open()
    try:
        before = store.commits
        value = {"cursor": 3, "messages": ["a"]}
        await store.kv_put_soon("ns", "run-1", value, 1_000)
        value["messages"].append("changed after the put")  # the held value is the one put
        assert store.commits == before  # no commit of its own
        assert await store.kv_get("ns", "run-1") == {"cursor": 3, "messages": ["a"]}
        with pytest.raises(ValidationError, match="U\\+0000"):
            await store.kv_put_soon("ns", "k\x00", 1, 1_000)
        assert await store.kv_put("ns", "other", 1, 2_000) is True
        assert store.commits == before + 1  # it went with this commit
        # A durable write after a held one on the same key wins.
        await store.kv_put_soon("ns", "run-1", {"cursor": 4}, 3_000)
        await store.kv_put("ns", "run-1", {"cursor": 9}, 4_000)
        assert await store.kv_get("ns", "run-1") == {"cursor": 9}
        await store.kv_put_soon("ns", "run-2", {"cursor": 7}, 5_000)
    finally:
        await store.close()
    reopened = SqliteStore(tmp_path / "kv.db")
    await reopened.open()
    try:
        # A clean stop writes what was held.
        assert await reopened.kv_get("ns", "run-1") == {"cursor": 9}
        assert await reopened.kv_get("ns", "run-2") == {"cursor": 7}
    finally:
        await reopened.close()


async def test_a_derived_value_that_fails_to_write_is_dropped_and_the_commit_goes_on(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "kv.db")
    await store.open()
    try:
        await store._write(
            lambda conn: conn.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON kv WHEN NEW.key = 'refused' "
                "BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
        )
        await store.kv_put_soon("ns", "refused", {"cursor": 1}, 1_000)
        await store.kv_put_soon("ns", "kept", {"cursor": 2}, 1_000)
        before = store.commits
        assert await store.kv_put("ns", "durable", 3, 2_000) is True
        assert store.commits == before + 1
        assert await store.kv_get("ns", "durable") == 3
        assert await store.kv_get("ns", "refused") is None  # dropped: it will be derived again
        assert await store.kv_get("ns", "kept") == {"cursor": 2}
    finally:
        await store.close()
