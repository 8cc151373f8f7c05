"""The SQLite writer thread: a transaction that fails undoes only itself, alone or in a group."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from openwop_bridge import SqliteStore


def _insert(key: str, *, fail: bool = False) -> Callable[[sqlite3.Connection], str]:
    def tx(conn: sqlite3.Connection) -> str:
        conn.execute("INSERT INTO kv(namespace, key, value, updated_at) VALUES('t', ?, '1', 0)", (key,))
        if fail:
            raise RuntimeError(f"{key} fails after writing")
        return key

    return tx


async def _keys(store: SqliteStore) -> list[str]:
    rows = await store._all("SELECT key FROM kv WHERE namespace='t' ORDER BY key")
    return [r[0] for r in rows]


async def test_a_lone_transaction_that_fails_leaves_nothing_and_makes_no_commit(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "w.db")
    await store.open()
    try:
        before = store.commits
        with pytest.raises(RuntimeError, match="a fails"):
            await store._write(_insert("a", fail=True))
        assert store.commits == before and await _keys(store) == []
        assert await store._write(_insert("b")) == "b"
        assert store.commits == before + 1 and await _keys(store) == ["b"]
    finally:
        await store.close()


async def _grouped(store: SqliteStore, keys: str, failing: str) -> list[object]:
    """The outcomes of one ``_insert`` per key, queued while the writer is busy so they share one commit."""
    gate = threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        gate.wait(10)  # the writer is busy here while the group queues behind

    held = asyncio.ensure_future(store._write(hold))
    await asyncio.sleep(0.05)
    before = store.commits
    group = [store._submit(_insert(k, fail=k in failing)) for k in keys]  # queued now, behind the held one
    gate.set()
    await held
    outcomes = await asyncio.gather(*group, return_exceptions=True)
    assert store.commits == before + 2  # the held transaction, then the group in one commit
    return outcomes


async def test_a_failing_transaction_in_a_group_undoes_only_itself(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "w.db")
    await store.open()
    try:
        outcomes = await _grouped(store, "xyz", failing="y")
        assert outcomes[0] == "x" and isinstance(outcomes[1], RuntimeError) and outcomes[2] == "z"
        assert await _keys(store) == ["x", "z"]
    finally:
        await store.close()


async def test_failing_transactions_first_and_in_a_row_in_a_group_undo_only_themselves(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "w.db")
    await store.open()
    try:
        outcomes = await _grouped(store, "abcdef", failing="acd")
        assert [o if isinstance(o, str) else type(o) for o in outcomes] == [
            RuntimeError,
            "b",
            RuntimeError,
            RuntimeError,
            "e",
            "f",
        ]
        assert await _keys(store) == ["b", "e", "f"]
    finally:
        await store.close()
