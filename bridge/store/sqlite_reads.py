"""The read side of the embedded store: row mapping and queries.

Reads run on the reader connection of the event loop thread; WAL lets them
run beside the writer thread's transactions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import orjson

from bridge.core.records import InterruptRecord, RunRecord
from bridge.store.base import InboxPage
from bridge.store.cursor import encode_cursor, page_cursor

RUN_COLS = (
    "run_id, tenant, workflow_id, status, created_at, updated_at, spec, state, parent_run_id, "
    "parent_node_id, parent_visit, child_ordinal, completed_at, next_seq, owner, lease_until, epoch, "
    "wake, needs_work, control"
)
INT_COLS = (
    "interrupt_id, run_id, tenant, workflow_id, node_id, exec_node, visit, ordinal, key, kind, status, "
    "payload, requested_at, deadline, resolved_at, consumed, resolution, state, requested_seq"
)


def dumps(value: Any) -> str:
    """JSON text for a column."""
    return orjson.dumps(value).decode("utf-8")


def loads(text: str | bytes | None) -> Any:
    """The value of a JSON column (``None`` stays ``None``)."""
    return None if text is None else orjson.loads(text)


def run_row(row: Sequence[Any]) -> RunRecord:
    """A run from a ``SELECT {RUN_COLS}`` row."""
    return RunRecord(
        run_id=row[0],
        tenant=row[1],
        workflow_id=row[2],
        status=row[3],
        created_at_ms=row[4],
        updated_at_ms=row[5],
        spec=loads(row[6]),
        state=loads(row[7]),
        parent_run_id=row[8],
        parent_node_id=row[9],
        parent_visit=row[10],
        child_ordinal=row[11],
        completed_at_ms=row[12],
        next_seq=row[13],
        owner=row[14],
        lease_until_ms=row[15],
        epoch=row[16],
        wake=row[17],
        needs_work=bool(row[18]),
        control=loads(row[19]),
    )


def interrupt_row(row: Sequence[Any], _loads: Any = orjson.loads) -> InterruptRecord:
    """An interrupt from a ``SELECT {INT_COLS}`` row.

    Positional, in :class:`InterruptRecord`'s field order: a replay reads every
    interrupt its node raised, so this runs once per earlier turn.
    """
    r = row
    return InterruptRecord(
        r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
        _loads(r[11]), r[12], r[13], r[14], bool(r[15]),
        None if r[16] is None else _loads(r[16]),
        (_loads(r[17]) if r[17] is not None else None) or {},
        r[18],
    )  # fmt: skip


class SqliteReads:
    """Queries of :class:`~bridge.store.sqlite.SqliteStore` that only read."""

    _reader: sqlite3.Connection | None = None

    def _read(self) -> sqlite3.Connection:
        assert self._reader is not None, "store is not open"
        return self._reader

    async def runs_needing_work(self, now_ms: int, limit: int = 500) -> list[str]:
        rows = (
            self._read()
            .execute(
                "SELECT run_id FROM runs WHERE needs_work=1 AND (owner IS NULL OR lease_until < ?) "
                "ORDER BY updated_at LIMIT ?",
                (now_ms, limit),
            )
            .fetchall()
        )
        return [r[0] for r in rows]

    async def child_runs(self, parent_run_id: str) -> list[RunRecord]:
        rows = (
            self._read()
            .execute(
                f"SELECT {RUN_COLS} FROM runs WHERE parent_run_id=? ORDER BY created_at, child_ordinal",
                (parent_run_id,),
            )
            .fetchall()
        )
        return [run_row(r) for r in rows]

    async def find_child(self, parent_run_id: str, node_id: str, visit: int, ordinal: int) -> str | None:
        row = (
            self._read()
            .execute(
                "SELECT run_id FROM runs WHERE parent_run_id=? AND parent_node_id=? "
                "AND parent_visit=? AND child_ordinal=?",
                (parent_run_id, node_id, visit, ordinal),
            )
            .fetchone()
        )
        return row[0] if row else None

    async def list_runs(
        self, tenant: str, *, workflow_id: str | None, status: str | None, limit: int, cursor: str | None
    ) -> tuple[list[RunRecord], str | None]:
        where = ["tenant=?"]
        args: list[Any] = [tenant]
        if workflow_id:
            where.append("workflow_id=?")
            args.append(workflow_id)
        if status:
            where.append("status=?")
            args.append(status)
        if cursor:
            created, rid = page_cursor(cursor)
            where.append("(created_at < ? OR (created_at = ? AND run_id < ?))")
            args += [created, created, rid]
        rows = (
            self._read()
            .execute(
                f"SELECT {RUN_COLS} FROM runs WHERE {' AND '.join(where)} "
                "ORDER BY created_at DESC, run_id DESC LIMIT ?",
                (*args, limit + 1),
            )
            .fetchall()
        )
        runs = [run_row(r) for r in rows[:limit]]
        nxt = encode_cursor(runs[-1].created_at_ms, runs[-1].run_id) if len(rows) > limit else None
        return runs, nxt

    async def read_events(self, run_id: str, after_seq: int = -1, limit: int = 1000) -> list[dict[str, Any]]:
        rows = (
            self._read()
            .execute("SELECT doc FROM events WHERE run_id=? AND seq>? ORDER BY seq LIMIT ?", (run_id, after_seq, limit))
            .fetchall()
        )
        return [orjson.loads(r[0]) for r in rows]

    async def activation_events(self, run_id: str, node_id: str, visit: int) -> list[dict[str, Any]]:
        rows = (
            self._read()
            .execute(
                "SELECT doc FROM events WHERE run_id=? AND node_id=? AND visit=? AND cmd IS NOT NULL ORDER BY cmd",
                (run_id, node_id, visit),
            )
            .fetchall()
        )
        return [orjson.loads(r[0]) for r in rows]

    async def events_of_types(self, run_id: str, types: Sequence[str]) -> list[dict[str, Any]]:
        marks = ",".join("?" for _ in types)
        rows = (
            self._read()
            .execute(f"SELECT doc FROM events WHERE run_id=? AND type IN ({marks}) ORDER BY seq", (run_id, *types))
            .fetchall()
        )
        return [orjson.loads(r[0]) for r in rows]

    async def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        row = (
            self._read().execute(f"SELECT {INT_COLS} FROM interrupts WHERE interrupt_id=?", (interrupt_id,)).fetchone()
        )
        return interrupt_row(row) if row else None

    async def interrupt_at(self, run_id: str, node_id: str) -> InterruptRecord | None:
        row = (
            self._read()
            .execute(
                f"SELECT {INT_COLS} FROM interrupts WHERE run_id=? AND node_id=? "
                "ORDER BY requested_at DESC, ordinal DESC LIMIT 1",
                (run_id, node_id),
            )
            .fetchone()
        )
        return interrupt_row(row) if row else None

    async def interrupt_by_key(self, run_id: str, key: str) -> InterruptRecord | None:
        row = (
            self._read()
            .execute(f"SELECT {INT_COLS} FROM interrupts WHERE run_id=? AND key=?", (run_id, key))
            .fetchone()
        )
        return interrupt_row(row) if row else None

    async def interrupt_at_slot(self, run_id: str, exec_node: str, visit: int, ordinal: int) -> InterruptRecord | None:
        row = (
            self._read()
            .execute(
                f"SELECT {INT_COLS} FROM interrupts WHERE run_id=? AND exec_node=? AND visit=? AND ordinal=?",
                (run_id, exec_node, visit, ordinal),
            )
            .fetchone()
        )
        return interrupt_row(row) if row else None

    async def node_interrupts(self, run_id: str, exec_node: str) -> list[InterruptRecord]:
        rows = (
            self._read()
            .execute(
                f"SELECT {INT_COLS} FROM interrupts WHERE run_id=? AND exec_node=? ORDER BY visit, ordinal",
                (run_id, exec_node),
            )
            .fetchall()
        )
        return [interrupt_row(r) for r in rows]

    async def run_interrupts(self, run_id: str, *, open_only: bool) -> list[InterruptRecord]:
        sql = f"SELECT {INT_COLS} FROM interrupts WHERE run_id=?"
        if open_only:
            sql += " AND status='pending'"
        rows = self._read().execute(sql + " ORDER BY requested_at, ordinal", (run_id,)).fetchall()
        return [interrupt_row(r) for r in rows]

    async def unconsumed(self, run_id: str) -> list[InterruptRecord]:
        rows = (
            self._read()
            .execute(
                f"SELECT {INT_COLS} FROM interrupts WHERE run_id=? AND consumed=0 AND status!='pending' "
                "ORDER BY requested_at",
                (run_id,),
            )
            .fetchall()
        )
        return [interrupt_row(r) for r in rows]

    async def inbox(self, tenant: str, *, kind: str | None, status: str, limit: int, cursor: str | None) -> InboxPage:
        where = ["tenant=?", "status=?"]
        args: list[Any] = [tenant, status]
        if kind:
            where.append("kind=?")
            args.append(kind)
        else:
            where.append("kind NOT IN ('conversation.start','conversation.close')")
        if cursor:
            at, iid = page_cursor(cursor)
            where.append("(requested_at > ? OR (requested_at = ? AND interrupt_id > ?))")
            args += [at, at, iid]
        rows = (
            self._read()
            .execute(
                f"SELECT {INT_COLS} FROM interrupts WHERE {' AND '.join(where)} "
                "ORDER BY requested_at, interrupt_id LIMIT ?",
                (*args, limit + 1),
            )
            .fetchall()
        )
        items = [interrupt_row(r) for r in rows[:limit]]
        nxt = encode_cursor(items[-1].requested_at_ms, items[-1].interrupt_id) if len(rows) > limit else None
        return InboxPage(items, nxt)

    async def next_deadline(self) -> int | None:
        row = (
            self._read()
            .execute("SELECT MIN(deadline) FROM interrupts WHERE status='pending' AND deadline IS NOT NULL")
            .fetchone()
        )
        return int(row[0]) if row and row[0] is not None else None

    async def due_interrupts(self, now_ms: int, limit: int = 200) -> list[str]:
        rows = (
            self._read()
            .execute(
                "SELECT interrupt_id FROM interrupts WHERE status='pending' AND deadline IS NOT NULL "
                "AND deadline <= ? ORDER BY deadline LIMIT ?",
                (now_ms, limit),
            )
            .fetchall()
        )
        return [r[0] for r in rows]

    async def kv_get(self, namespace: str, key: str) -> Any:
        row = self._read().execute("SELECT value FROM kv WHERE namespace=? AND key=?", (namespace, key)).fetchone()
        return orjson.loads(row[0]) if row else None

    async def audit(self, run_id: str) -> list[dict[str, Any]]:
        rows = (
            self._read()
            .execute("SELECT at, principal, action, resource, details FROM audit WHERE run_id=? ORDER BY id", (run_id,))
            .fetchall()
        )
        return [
            {"at": r[0], "principal": r[1], "action": r[2], "resource": r[3], "details": orjson.loads(r[4])}
            for r in rows
        ]
