"""The read side of the PostgreSQL store: pooled connections and PostgreSQL's own queries.

Each read takes a pooled connection in autocommit mode for one statement;
``json`` columns arrive parsed (by orjson, see ``PostgresStore.open``). The
queries both stores share are in :mod:`openwop_bridge.store.reads`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from psycopg import AsyncConnection
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool

from openwop_bridge.core.records import InterruptRecord, has_nul
from openwop_bridge.store.codec import EVENT_COLS, INT_COLS, POSTGRES, event_doc
from openwop_bridge.store.pg_batch import forget_prepared
from openwop_bridge.store.pg_tx import reraise_lost_cancellation
from openwop_bridge.store.reads import Reads

Conn = AsyncConnection[Any]

#: A connection kept by the store goes back to the pool this often (see ``PostgresReads._connection``).
RETURN_EVERY = 64


class PostgresReads(Reads):
    """Queries of the :class:`~openwop_bridge.store.base.Store` contract that change nothing."""

    _dialect = POSTGRES
    _pool_: AsyncConnectionPool | None = None
    #: Connections handed back in good order, kept for the store's next piece of work (see :meth:`_connection`).
    _idle: list[Conn]
    _waiting = 0  # tasks waiting for a connection of the pool
    _handed_back = 0

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Conn]:
        """A pooled connection for one piece of work (one statement, or one transaction).

        A connection handed back in good order is kept for the next piece instead of going back
        to the pool, whose checkout and return cost more than many a statement. It goes back to the
        pool when a task waits for one there, when its work failed or left a transaction open, and
        every :data:`RETURN_EVERY` times (the pool then replaces it when it is past its lifetime).
        """
        pool = self._pool_
        assert pool is not None, "store is not open"
        if self._idle:
            conn = self._idle.pop()
        else:
            self._waiting += 1
            try:
                conn = await pool.getconn()
            finally:
                self._waiting -= 1
        try:
            reraise_lost_cancellation()
            yield conn
        except BaseException:
            forget_prepared(conn)  # the rollback the pool makes may deallocate them
            await pool.putconn(conn)
            raise
        self._handed_back += 1
        if (
            self._waiting
            or self._pool_ is not pool
            or self._handed_back % RETURN_EVERY == 0
            or conn.closed
            or conn.info.transaction_status != TransactionStatus.IDLE
        ):
            await pool.putconn(conn)
        else:
            self._idle.append(conn)

    async def _return_idle(self) -> None:
        """Hand every connection kept back to the pool (before it closes)."""
        idle, self._idle = self._idle, []
        if self._pool_ is not None:
            for conn in idle:
                await self._pool_.putconn(conn)

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

    async def runs_needing_work(self, now_ms: int, limit: int = 500) -> list[str]:
        # Rows locked by a transaction in flight are being worked on right now;
        # skip them rather than wait: the next scan sees them settled.
        rows = await self._all(
            "SELECT run_id FROM runs WHERE needs_work AND (owner IS NULL OR lease_until < %s) "
            "ORDER BY updated_at LIMIT %s FOR UPDATE SKIP LOCKED",
            (now_ms, limit),
        )
        return [r[0] for r in rows]

    async def event_sizes(self, run_id: str, after_seq: int, limit: int) -> list[int]:
        rows = await self._all(
            "SELECT octet_length(doc::text) FROM events WHERE run_id=%s AND seq>%s ORDER BY seq LIMIT %s",
            (run_id, after_seq, limit),
        )
        return [int(r[0]) for r in rows]

    async def events_of_types(self, run_id: str, types: Sequence[str]) -> list[dict[str, Any]]:
        if has_nul(types):
            types = [t for t in types if "\x00" not in t]
        rows = await self._all(
            f"SELECT {EVENT_COLS} FROM events WHERE run_id=%s AND type = ANY(%s::text[]) ORDER BY seq",
            (run_id, list(types)),
        )
        return [event_doc(r) for r in rows]

    async def exchange_answers(self, run_id: str, exec_node: str, conversation_id: str) -> list[tuple[str, Any]]:
        rows = await self._all(
            "SELECT key, answer FROM interrupts WHERE run_id=%s AND exec_node=%s AND conversation=%s "
            "AND answer IS NOT NULL ORDER BY visit, ordinal",
            (run_id, exec_node, conversation_id),
        )
        return [(r[0], r[1]) for r in rows]

    async def unconsumed(self, run_id: str) -> list[InterruptRecord]:
        rows = await self._all(
            f"SELECT {INT_COLS} FROM interrupts WHERE run_id=%s AND NOT consumed AND status <> 'pending' "
            "ORDER BY requested_at",
            (run_id,),
        )
        return [POSTGRES.interrupt(r) for r in rows]
