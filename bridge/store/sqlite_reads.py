"""The read side of the embedded store: the reader connection and SQLite's own queries.

Reads run on the reader connection of the event loop thread; WAL lets them
run beside the writer thread's transactions. The queries both stores share are
in :mod:`openwop_bridge.store.reads`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.store.codec import EVENT_COLS, INT_COLS, SQLITE, event_doc, loads
from openwop_bridge.store.reads import Reads


class SqliteReads(Reads):
    """Queries of :class:`~openwop_bridge.store.sqlite.SqliteStore` that only read."""

    _dialect = SQLITE
    _reader: sqlite3.Connection | None = None

    def _read(self) -> sqlite3.Connection:
        assert self._reader is not None, "store is not open"
        return self._reader

    async def _one(self, sql: str, args: Sequence[Any] = ()) -> Sequence[Any] | None:
        row: Sequence[Any] | None = self._read().execute(sql, args).fetchone()
        return row

    async def _all(self, sql: str, args: Sequence[Any] = ()) -> Sequence[Sequence[Any]]:
        return self._read().execute(sql, args).fetchall()

    async def signing_keys(self) -> list[tuple[str, str, bool]]:
        rows = await self._all(
            "SELECT kid, secret, active FROM signing_keys WHERE retired_at IS NULL ORDER BY created_at"
        )
        return [(r[0], r[1], bool(r[2])) for r in rows]

    async def runs_needing_work(self, now_ms: int, limit: int = 500) -> list[str]:
        # ``needs_work=1`` matches the partial index ``runs_needs_work``.
        rows = await self._all(
            "SELECT run_id FROM runs WHERE needs_work=1 AND (owner IS NULL OR lease_until < ?) "
            "ORDER BY updated_at LIMIT ?",
            (now_ms, limit),
        )
        return [r[0] for r in rows]

    async def event_sizes(self, run_id: str, after_seq: int, limit: int) -> list[int]:
        rows = await self._all(
            "SELECT length(CAST(doc AS BLOB)) FROM events WHERE run_id=? AND seq>? ORDER BY seq LIMIT ?",
            (run_id, after_seq, limit),
        )
        return [int(r[0]) for r in rows]

    async def read_event_page(
        self, run_id: str, after_seq: int, limit: int, max_bytes: int
    ) -> tuple[list[dict[str, Any]], bool]:
        # One statement, stepped a row at a time: the rows after the one that passes the bound are never
        # read, and that one is dropped at once, so no document beyond the page is held.
        rows = self._read().execute(
            f"SELECT length(CAST(doc AS BLOB)), {EVENT_COLS} FROM events WHERE run_id=? AND seq>? ORDER BY seq LIMIT ?",
            (run_id, after_seq, limit),
        )
        try:
            docs: list[dict[str, Any]] = []
            total = 0
            for row in rows:
                total += row[0]
                if docs and total > max_bytes:
                    return docs, True
                docs.append(event_doc(row[1:], loads))
            return docs, len(docs) == limit
        finally:
            rows.close()

    async def events_of_types(self, run_id: str, types: Sequence[str]) -> list[dict[str, Any]]:
        marks = ",".join("%s" for _ in types)
        return await self._docs(
            f"SELECT {EVENT_COLS} FROM events WHERE run_id=%s AND type IN ({marks}) ORDER BY seq", (run_id, *types)
        )

    async def exchange_answers(self, run_id: str, exec_node: str, conversation_id: str) -> list[tuple[str, Any]]:
        # One range of the covering index ``interrupts_answers``: no table page is read.
        rows = await self._all(
            "SELECT key, answer FROM interrupts WHERE run_id=? AND exec_node=? AND conversation=? "
            "AND answer IS NOT NULL ORDER BY visit, ordinal",
            (run_id, exec_node, conversation_id),
        )
        return [(key, loads(answer)) for key, answer in rows]

    async def unconsumed(self, run_id: str) -> list[InterruptRecord]:
        # ``consumed=0`` matches the partial index ``interrupts_unconsumed``.
        return await self._interrupts(
            f"SELECT {INT_COLS} FROM interrupts WHERE run_id=%s AND consumed=0 AND status!='pending' "
            "ORDER BY requested_at",
            (run_id,),
        )
