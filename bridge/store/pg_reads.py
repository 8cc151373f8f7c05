"""The read side of the PostgreSQL store: pooled connections and queries.

Each read takes a pooled connection in autocommit mode for one statement;
``json`` columns arrive parsed (by orjson, see ``PostgresStore.open``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from bridge.core.records import InterruptRecord, RunRecord, has_nul
from bridge.store import pg_sql as q
from bridge.store.base import InboxPage
from bridge.store.cursor import encode_cursor
from bridge.store.pg_tx import reraise_lost_cancellation

Conn = AsyncConnection[Any]


class PostgresReads:
    """Queries of the :class:`~bridge.store.base.Store` contract that change nothing."""

    _pool_: AsyncConnectionPool | None = None

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Conn]:
        assert self._pool_ is not None, "store is not open"
        async with self._pool_.connection() as conn:
            reraise_lost_cancellation()
            yield conn

    async def _one(self, sql: str, args: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        if has_nul(args):
            return None
        async with self._connection() as conn:
            cur = await conn.execute(sql, args)
            return await cur.fetchone()

    async def _all(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if has_nul(args):
            return []
        async with self._connection() as conn:
            cur = await conn.execute(sql, args)
            return await cur.fetchall()

    async def signing_keys(self) -> list[tuple[str, str, bool]]:
        rows = await self._all(
            "SELECT kid, secret, active FROM signing_keys WHERE retired_at IS NULL ORDER BY created_at, kid"
        )
        return [(r[0], r[1], bool(r[2])) for r in rows]

    async def load_run(self, run_id: str) -> RunRecord | None:
        row = await self._one(f"SELECT {q.RUN_COLS} FROM runs WHERE run_id=%s", (run_id,))
        return q.run_from_row(row) if row else None

    async def runs_needing_work(self, now_ms: int, limit: int = 500) -> list[str]:
        # Rows locked by a transaction in flight are being worked on right now;
        # skip them rather than wait: the next scan sees them settled.
        rows = await self._all(
            "SELECT run_id FROM runs WHERE needs_work AND (owner IS NULL OR lease_until < %s) "
            "ORDER BY updated_at LIMIT %s FOR UPDATE SKIP LOCKED",
            (now_ms, limit),
        )
        return [r[0] for r in rows]

    async def child_runs(self, parent_run_id: str) -> list[RunRecord]:
        rows = await self._all(
            f"SELECT {q.RUN_COLS} FROM runs WHERE parent_run_id=%s ORDER BY created_at, child_ordinal",
            (parent_run_id,),
        )
        return [q.run_from_row(r) for r in rows]

    async def find_child(self, parent_run_id: str, node_id: str, visit: int, ordinal: int) -> str | None:
        row = await self._one(
            "SELECT run_id FROM runs WHERE parent_run_id=%s AND parent_node_id=%s "
            "AND parent_visit=%s AND child_ordinal=%s",
            (parent_run_id, node_id, visit, ordinal),
        )
        return row[0] if row else None

    async def list_runs(
        self, tenant: str, *, workflow_id: str | None, status: str | None, limit: int, cursor: str | None
    ) -> tuple[list[RunRecord], str | None]:
        where = ["tenant=%s"]
        args: list[Any] = [tenant]
        if workflow_id:
            where.append("workflow_id=%s")
            args.append(workflow_id)
        if status:
            where.append("status=%s")
            args.append(status)
        if cursor:
            created, rid = q.page_cursor(cursor)
            where.append("(created_at < %s OR (created_at = %s AND run_id < %s))")
            args += [created, created, rid]
        rows = await self._all(
            f"SELECT {q.RUN_COLS} FROM runs WHERE {' AND '.join(where)} ORDER BY created_at DESC, run_id DESC LIMIT %s",
            (*args, limit + 1),
        )
        runs = [q.run_from_row(r) for r in rows[:limit]]
        nxt = encode_cursor(runs[-1].created_at_ms, runs[-1].run_id) if len(rows) > limit else None
        return runs, nxt

    async def read_events(self, run_id: str, after_seq: int = -1, limit: int = 1000) -> list[dict[str, Any]]:
        rows = await self._all(
            "SELECT doc FROM events WHERE run_id=%s AND seq>%s ORDER BY seq LIMIT %s", (run_id, after_seq, limit)
        )
        return [r[0] for r in rows]

    async def activation_events(self, run_id: str, node_id: str, visit: int) -> list[dict[str, Any]]:
        rows = await self._all(
            "SELECT doc FROM events WHERE run_id=%s AND node_id=%s AND visit=%s AND cmd IS NOT NULL ORDER BY cmd",
            (run_id, node_id, visit),
        )
        return [r[0] for r in rows]

    async def events_of_types(self, run_id: str, types: Sequence[str]) -> list[dict[str, Any]]:
        if has_nul(types):
            types = [t for t in types if "\x00" not in t]
        rows = await self._all(
            "SELECT doc FROM events WHERE run_id=%s AND type = ANY(%s::text[]) ORDER BY seq", (run_id, list(types))
        )
        return [r[0] for r in rows]

    async def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        row = await self._one(f"SELECT {q.INT_COLS} FROM interrupts WHERE interrupt_id=%s", (interrupt_id,))
        return q.interrupt_from_row(row) if row else None

    async def interrupt_at(self, run_id: str, node_id: str) -> InterruptRecord | None:
        row = await self._one(
            f"SELECT {q.INT_COLS} FROM interrupts WHERE run_id=%s AND node_id=%s "
            "ORDER BY requested_at DESC, ordinal DESC LIMIT 1",
            (run_id, node_id),
        )
        return q.interrupt_from_row(row) if row else None

    async def interrupt_by_key(self, run_id: str, key: str) -> InterruptRecord | None:
        row = await self._one(f"SELECT {q.INT_COLS} FROM interrupts WHERE run_id=%s AND key=%s", (run_id, key))
        return q.interrupt_from_row(row) if row else None

    async def interrupt_at_slot(self, run_id: str, exec_node: str, visit: int, ordinal: int) -> InterruptRecord | None:
        row = await self._one(
            f"SELECT {q.INT_COLS} FROM interrupts WHERE run_id=%s AND exec_node=%s AND visit=%s AND ordinal=%s",
            (run_id, exec_node, visit, ordinal),
        )
        return q.interrupt_from_row(row) if row else None

    async def node_interrupts(self, run_id: str, exec_node: str) -> list[InterruptRecord]:
        rows = await self._all(
            f"SELECT {q.INT_COLS} FROM interrupts WHERE run_id=%s AND exec_node=%s ORDER BY visit, ordinal",
            (run_id, exec_node),
        )
        return [q.interrupt_from_row(r) for r in rows]

    async def run_interrupts(self, run_id: str, *, open_only: bool) -> list[InterruptRecord]:
        sql = f"SELECT {q.INT_COLS} FROM interrupts WHERE run_id=%s"
        if open_only:
            sql += " AND status='pending'"
        rows = await self._all(sql + " ORDER BY requested_at, ordinal", (run_id,))
        return [q.interrupt_from_row(r) for r in rows]

    async def unconsumed(self, run_id: str) -> list[InterruptRecord]:
        rows = await self._all(
            f"SELECT {q.INT_COLS} FROM interrupts WHERE run_id=%s AND NOT consumed AND status <> 'pending' "
            "ORDER BY requested_at",
            (run_id,),
        )
        return [q.interrupt_from_row(r) for r in rows]

    async def inbox(self, tenant: str, *, kind: str | None, status: str, limit: int, cursor: str | None) -> InboxPage:
        where = ["tenant=%s", "status=%s"]
        args: list[Any] = [tenant, status]
        if kind:
            where.append("kind=%s")
            args.append(kind)
        else:
            where.append("kind NOT IN ('conversation.start','conversation.close')")
        if cursor:
            at, iid = q.page_cursor(cursor)
            where.append("(requested_at > %s OR (requested_at = %s AND interrupt_id > %s))")
            args += [at, at, iid]
        rows = await self._all(
            f"SELECT {q.INT_COLS} FROM interrupts WHERE {' AND '.join(where)} "
            "ORDER BY requested_at, interrupt_id LIMIT %s",
            (*args, limit + 1),
        )
        items = [q.interrupt_from_row(r) for r in rows[:limit]]
        nxt = encode_cursor(items[-1].requested_at_ms, items[-1].interrupt_id) if len(rows) > limit else None
        return InboxPage(items, nxt)

    async def next_deadline(self) -> int | None:
        row = await self._one("SELECT MIN(deadline) FROM interrupts WHERE status='pending' AND deadline IS NOT NULL")
        return int(row[0]) if row and row[0] is not None else None

    async def due_interrupts(self, now_ms: int, limit: int = 200) -> list[str]:
        rows = await self._all(
            "SELECT interrupt_id FROM interrupts WHERE status='pending' AND deadline IS NOT NULL "
            "AND deadline <= %s ORDER BY deadline LIMIT %s",
            (now_ms, limit),
        )
        return [r[0] for r in rows]

    async def kv_get(self, namespace: str, key: str) -> Any:
        row = await self._one("SELECT value FROM kv WHERE namespace=%s AND key=%s", (namespace, key))
        return row[0] if row else None

    async def audit(self, run_id: str) -> list[dict[str, Any]]:
        rows = await self._all(
            "SELECT at, principal, action, resource, details FROM audit WHERE run_id=%s ORDER BY id", (run_id,)
        )
        return [{"at": r[0], "principal": r[1], "action": r[2], "resource": r[3], "details": r[4]} for r in rows]
