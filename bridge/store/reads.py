"""The read side both stores share: queries of the store contract that change nothing.

Each store supplies how one statement is run (:meth:`Reads._one`,
:meth:`Reads._all`) and its :class:`~openwop_bridge.store.codec.Dialect`; the queries
and the row mapping are written once here. The few queries that use a
database's own features (partial indexes, arrays, row locks) stay in the store.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from openwop_bridge.core.kinds import REGISTRY
from openwop_bridge.core.notices import (
    POLICY_CHANNEL,
    UNDELIVERABLE_NS,
    Audience,
    DeadLetter,
    InterruptNotices,
    NoticeState,
)
from openwop_bridge.core.records import InterruptRecord, RunRecord, has_nul
from openwop_bridge.store.base import KV_SCAN_MAX, InboxPage
from openwop_bridge.store.codec import EVENT_COLS, INT_COLS, RUN_COLS, Dialect, event_doc
from openwop_bridge.store.cursor import encode_cursor, page_cursor
from openwop_bridge.store.reads_analytics import AnalyticsReads
from openwop_bridge.store.reads_records import RecordReads

#: The kinds an inbox lists when no kind is asked for (the others are not listed among open interrupts).
LISTED_KINDS: tuple[str, ...] = tuple(name for name, k in REGISTRY.items() if k.listed)
_RUN_WIDTH = len(RUN_COLS.split(","))
#: A run's row and, joined to it, the latest interrupt at one of its addresses (NULLs when there is none).
_RUN_AND_INTERRUPT_AT = (
    f"SELECT {', '.join('r.' + c.strip() for c in RUN_COLS.split(','))}, "
    f"{', '.join('i.' + c.strip() for c in INT_COLS.split(','))} FROM runs r LEFT JOIN interrupts i "
    "ON i.interrupt_id=(SELECT interrupt_id FROM interrupts WHERE run_id=%s AND node_id=%s "
    "ORDER BY requested_at DESC, ordinal DESC LIMIT 1) WHERE r.run_id=%s"
)


class Reads(AnalyticsReads, RecordReads, ABC):
    """Queries of the :class:`~openwop_bridge.store.base.Store` contract written once for both dialects."""

    _dialect: Dialect

    @abstractmethod
    async def _one(self, sql: str, args: Sequence[Any] = ()) -> Sequence[Any] | None:
        """The first row of a statement in the dialect's own text (each store runs it its own way)."""

    @abstractmethod
    async def _all(self, sql: str, args: Sequence[Any] = ()) -> Sequence[Sequence[Any]]:
        """Every row of a statement in the dialect's own text (each store runs it its own way)."""

    async def _rows(self, neutral: str, args: Sequence[Any] = ()) -> Sequence[Sequence[Any]]:
        return await self._all(self._dialect.sql(neutral), args)

    async def _run(self, neutral: str, args: Sequence[Any]) -> RunRecord | None:
        row = await self._one(self._dialect.sql(neutral), args)
        return self._dialect.run(row) if row else None

    async def _interrupt(self, neutral: str, args: Sequence[Any]) -> InterruptRecord | None:
        row = await self._one(self._dialect.sql(neutral), args)
        return self._dialect.interrupt(row) if row else None

    async def _interrupts(self, neutral: str, args: Sequence[Any]) -> list[InterruptRecord]:
        return [self._dialect.interrupt(r) for r in await self._rows(neutral, args)]

    async def _docs(self, neutral: str, args: Sequence[Any]) -> list[dict[str, Any]]:
        """Event documents from rows of :data:`~openwop_bridge.store.codec.EVENT_COLS`."""
        parse = self._dialect.json_in
        return [event_doc(r, parse) for r in await self._rows(neutral, args)]

    async def load_run(self, run_id: str) -> RunRecord | None:
        return await self._run(f"SELECT {RUN_COLS} FROM runs WHERE run_id=%s", (run_id,))

    async def child_runs(self, parent_run_id: str) -> list[RunRecord]:
        rows = await self._rows(
            f"SELECT {RUN_COLS} FROM runs WHERE parent_run_id=%s ORDER BY created_at, child_ordinal", (parent_run_id,)
        )
        return [self._dialect.run(r) for r in rows]

    async def find_child(self, parent_run_id: str, node_id: str, visit: int, ordinal: int) -> str | None:
        row = await self._one(
            self._dialect.sql(
                "SELECT run_id FROM runs WHERE parent_run_id=%s AND parent_node_id=%s "
                "AND parent_visit=%s AND child_ordinal=%s"
            ),
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
            created, rid = page_cursor(cursor)
            # A row-value comparison, so that the page seeks into ``runs_tenant`` instead of walking to it.
            where.append("(created_at, run_id) < (%s, %s)")
            args += [created, rid]
        rows = await self._rows(
            f"SELECT {RUN_COLS} FROM runs WHERE {' AND '.join(where)} ORDER BY created_at DESC, run_id DESC LIMIT %s",
            (*args, limit + 1),
        )
        runs = [self._dialect.run(r) for r in rows[:limit]]
        nxt = encode_cursor(runs[-1].created_at_ms, runs[-1].run_id) if len(rows) > limit else None
        return runs, nxt

    async def read_events(self, run_id: str, after_seq: int = -1, limit: int = 1000) -> list[dict[str, Any]]:
        return await self._docs(
            f"SELECT {EVENT_COLS} FROM events WHERE run_id=%s AND seq>%s ORDER BY seq LIMIT %s",
            (run_id, after_seq, limit),
        )

    async def read_event_page(
        self, run_id: str, after_seq: int, limit: int, max_bytes: int
    ) -> tuple[list[dict[str, Any]], bool]:
        # The sizes first, then only the documents that fit (a store whose rows can be read one at a
        # time does it in one statement instead).
        sizes = await self.event_sizes(run_id, after_seq, limit)
        total = count = 0
        for size in sizes:
            if count and total + size > max_bytes:
                break
            total += size
            count += 1
        if not count:
            return [], False
        docs = await self.read_events(run_id, after_seq, count)
        return docs, len(sizes) == limit or count < len(sizes)

    @abstractmethod
    async def event_sizes(self, run_id: str, after_seq: int, limit: int) -> list[int]:
        """See :meth:`~openwop_bridge.store.base.Store.event_sizes`."""

    async def activation_events(self, run_id: str, node_id: str, visit: int) -> list[dict[str, Any]]:
        return await self._docs(
            f"SELECT {EVENT_COLS} FROM events WHERE run_id=%s AND node_id=%s AND visit=%s AND cmd IS NOT NULL "
            "ORDER BY cmd",
            (run_id, node_id, visit),
        )

    async def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        return await self._interrupt(f"SELECT {INT_COLS} FROM interrupts WHERE interrupt_id=%s", (interrupt_id,))

    async def interrupt_at(self, run_id: str, node_id: str) -> InterruptRecord | None:
        return await self._interrupt(
            f"SELECT {INT_COLS} FROM interrupts WHERE run_id=%s AND node_id=%s "
            "ORDER BY requested_at DESC, ordinal DESC LIMIT 1",
            (run_id, node_id),
        )

    async def run_and_interrupt_at(self, run_id: str, node_id: str) -> tuple[RunRecord | None, InterruptRecord | None]:
        if has_nul((node_id,)):
            return await self.load_run(run_id), None  # no address holds U+0000 (PostgreSQL refuses to compare it)
        row = await self._one(self._dialect.sql(_RUN_AND_INTERRUPT_AT), (run_id, node_id, run_id))
        if row is None:
            return None, None
        run = self._dialect.run(row[:_RUN_WIDTH])
        return run, None if row[_RUN_WIDTH] is None else self._dialect.interrupt(row[_RUN_WIDTH:])

    async def interrupt_by_key(self, run_id: str, key: str) -> InterruptRecord | None:
        return await self._interrupt(f"SELECT {INT_COLS} FROM interrupts WHERE run_id=%s AND key=%s", (run_id, key))

    async def interrupt_at_slot(self, run_id: str, exec_node: str, visit: int, ordinal: int) -> InterruptRecord | None:
        return await self._interrupt(
            f"SELECT {INT_COLS} FROM interrupts WHERE run_id=%s AND exec_node=%s AND visit=%s AND ordinal=%s",
            (run_id, exec_node, visit, ordinal),
        )

    async def node_interrupts(self, run_id: str, exec_node: str) -> list[InterruptRecord]:
        return await self._interrupts(
            f"SELECT {INT_COLS} FROM interrupts WHERE run_id=%s AND exec_node=%s ORDER BY visit, ordinal",
            (run_id, exec_node),
        )

    @abstractmethod
    async def unconsumed(self, run_id: str) -> list[InterruptRecord]:
        """Settled interrupts whose node has not yet seen the answer (each store's own query)."""

    async def run_interrupts(self, run_id: str, *, open_only: bool) -> list[InterruptRecord]:
        sql = f"SELECT {INT_COLS} FROM interrupts WHERE run_id=%s"
        if open_only:
            sql += " AND status='pending'"
        return await self._interrupts(sql + " ORDER BY requested_at, ordinal", (run_id,))

    async def inbox(self, tenant: str, *, kind: str | None, status: str, limit: int, cursor: str | None) -> InboxPage:
        where = "tenant=%s AND status=%s AND kind=%s"
        args: list[Any] = [tenant, status]
        if cursor:
            at, iid = page_cursor(cursor)
            # A row-value comparison, so that the page seeks into the inbox index instead of walking to it.
            where += " AND (requested_at, interrupt_id) > (%s, %s)"
            args += [at, iid]
        # Without a kind, the listed kinds' ranges of ``interrupts_inbox_kind`` merged in their order: each range
        # is read only as far as the page needs, and no second index is kept up to date for every interrupt.
        order = " ORDER BY requested_at, interrupt_id LIMIT %s"
        branch = f"SELECT {INT_COLS} FROM interrupts WHERE {where}"
        kinds = (kind,) if kind else LISTED_KINDS
        if len(kinds) > 1 and self._dialect.limited_branches:
            branch = f"({branch}{order})"
            args.append(limit + 1)
        rows = await self._rows(
            " UNION ALL ".join([branch] * len(kinds)) + order,
            (*(a for k in kinds for a in (*args[:2], k, *args[2:])), limit + 1),
        )
        items = [self._dialect.interrupt(r) for r in rows[:limit]]
        nxt = encode_cursor(items[-1].requested_at_ms, items[-1].interrupt_id) if len(rows) > limit else None
        return InboxPage(items, nxt)

    async def waiting_on(
        self, tenant: str, audience: Audience, *, limit: int, after: tuple[int, str] | None = None
    ) -> list[InterruptRecord]:
        d = self._dialect
        kinds = ",".join(["%s"] * len(LISTED_KINDS))
        where = f"tenant=%s AND status='pending' AND kind IN ({kinds})"
        args: list[Any] = [tenant, *LISTED_KINDS]
        if after is not None:
            where += " AND (requested_at, interrupt_id) > (%s, %s)"
            args += [after[0], after[1]]
        who = [d.data_array_holds.format(field="approversList")]
        args.append(audience.person)
        if audience.roles:
            who.append(f"{d.data_string.format(field='requiredRole')} IN ({','.join(['%s'] * len(audience.roles))})")
            args += sorted(audience.roles)
        for workflow_id, kind in audience.matches:
            parts = [f"{column}=%s" for column, value in (("workflow_id", workflow_id), ("kind", kind)) if value]
            who.append(f"({' AND '.join(parts)})" if parts else "1=1")
            args += [value for value in (workflow_id, kind) if value]
        return await self._interrupts(
            f"SELECT {INT_COLS} FROM interrupts WHERE {where} AND ({' OR '.join(who)}) "
            "ORDER BY requested_at, interrupt_id LIMIT %s",
            (*args, limit),
        )

    async def inbox_count(self, tenant: str, *, kind: str | None, status: str) -> int:
        kinds = (kind,) if kind else LISTED_KINDS
        marks = ",".join(["%s"] * len(kinds))
        row = await self._one(
            self._dialect.sql(f"SELECT COUNT(*) FROM interrupts WHERE tenant=%s AND status=%s AND kind IN ({marks})"),
            (tenant, status, *kinds),
        )
        return int(row[0]) if row else 0

    # --- the outbox (its writes: :mod:`openwop_bridge.store.plan_outbox`) ---------------------

    async def outbox_next_due(self, channels: Sequence[str] | None = None) -> int | None:
        if channels is None:
            row = await self._one("SELECT MIN(next_attempt) FROM outbox WHERE status='queued'")
        elif not channels:
            return None
        else:
            marks = ",".join(["%s"] * len(channels))
            rows = await self._rows(
                f"SELECT MIN(next_attempt) FROM outbox WHERE status='queued' AND channel IN ({marks})", tuple(channels)
            )
            row = rows[0] if rows else None
        return int(row[0]) if row and row[0] is not None else None

    async def outbox_of_interrupts(self, interrupt_ids: Sequence[str], per_interrupt: int = 100) -> InterruptNotices:
        if not interrupt_ids:
            return InterruptNotices([], frozenset())
        marks = ",".join(["%s"] * len(interrupt_ids))
        rows = await self._rows(
            "SELECT interrupt_id, channel, recipient, status, attempt, attempted_at, notice_id FROM outbox "
            f"WHERE interrupt_id IN ({marks}) AND channel NOT IN ('webhook', %s) ORDER BY notice_id LIMIT %s",
            (*interrupt_ids, POLICY_CHANNEL, per_interrupt * len(interrupt_ids)),
        )
        marked = await self._rows(
            f"SELECT key FROM kv WHERE namespace=%s AND key IN ({marks})", (UNDELIVERABLE_NS, *interrupt_ids)
        )
        notices = [NoticeState(r[0], r[1], r[2], r[3], int(r[4]), None if r[5] is None else int(r[5])) for r in rows]
        return InterruptNotices(notices, frozenset(str(r[0]) for r in marked))

    async def outbox_queued(self) -> int:
        row = await self._one("SELECT COUNT(*) FROM outbox WHERE status='queued'")
        return int(row[0]) if row else 0

    async def outbox_dead_letters(
        self, channel: str, recipient: str, tenant: str, *, limit: int, after: str | None = None
    ) -> list[DeadLetter]:
        before = " AND notice_id < %s" if after else ""
        rows = await self._rows(
            "SELECT notice_id, channel, recipient, run_id, interrupt_id, attempt, last_error, created_at, settled_at, "
            "payload->>'eventId', payload->>'eventType' FROM outbox "
            f"WHERE channel=%s AND recipient=%s AND status='dead' AND tenant=%s{before} "
            "ORDER BY notice_id DESC LIMIT %s",
            (channel, recipient, tenant, *((after,) if after else ()), limit),
        )
        return [DeadLetter(r[0], r[1], r[2], r[3], r[4], r[5], r[6] or "", r[7], r[8], r[9], r[10]) for r in rows]

    async def outbox_states(self, notice_ids: Sequence[str]) -> dict[str, tuple[str, int, str | None]]:
        found: dict[str, tuple[str, int, str | None]] = {}
        for notice_id in notice_ids:
            row = await self._one(
                self._dialect.sql("SELECT status, attempt, last_error FROM outbox WHERE notice_id=%s"), (notice_id,)
            )
            if row:
                found[notice_id] = (row[0], row[1], row[2])
        return found

    async def next_deadline(self) -> int | None:
        row = await self._one("SELECT MIN(deadline) FROM interrupts WHERE status='pending' AND deadline IS NOT NULL")
        return int(row[0]) if row and row[0] is not None else None

    async def pending_by_kind(self) -> list[tuple[str, int, int]]:
        rows = await self._rows(
            "SELECT kind, COUNT(*), MIN(requested_at) FROM interrupts WHERE status='pending' GROUP BY kind", ()
        )
        return [(str(r[0]), int(r[1]), int(r[2])) for r in rows]

    async def due_interrupts(self, now_ms: int, limit: int = 200) -> list[str]:
        rows = await self._rows(
            "SELECT interrupt_id FROM interrupts WHERE status='pending' AND deadline IS NOT NULL "
            "AND deadline <= %s ORDER BY deadline LIMIT %s",
            (now_ms, limit),
        )
        return [r[0] for r in rows]

    async def kv_get(self, namespace: str, key: str) -> Any:
        row = await self._one(self._dialect.sql("SELECT value FROM kv WHERE namespace=%s AND key=%s"), (namespace, key))
        return self._dialect.json_in(row[0]) if row else None

    async def kv_scan(
        self, namespace: str, prefix: str, *, limit: int, after: str | None = None, descending: bool = True
    ) -> list[tuple[str, Any]]:
        if limit < 1:
            return []
        where, args = ["namespace=%s", "key>=%s"], [namespace, prefix]
        end = prefix_end(prefix)
        if end is not None:
            where.append("key<%s")
            args.append(end)
        if after is not None:
            where.append("key<%s" if descending else "key>%s")
            args.append(after)
        rows = await self._rows(
            f"SELECT key, value FROM kv WHERE {' AND '.join(where)} ORDER BY key {'DESC' if descending else 'ASC'} "
            "LIMIT %s",
            (*args, min(limit, KV_SCAN_MAX)),
        )
        return [(r[0], self._dialect.json_in(r[1])) for r in rows]

    async def audit(self, run_id: str) -> list[dict[str, Any]]:
        rows = await self._rows(
            "SELECT at, principal, action, resource, details FROM audit WHERE run_id=%s ORDER BY id", (run_id,)
        )
        parse = self._dialect.json_in
        return [{"at": r[0], "principal": r[1], "action": r[2], "resource": r[3], "details": parse(r[4])} for r in rows]

    async def audit_page(self, run_id: str, after_id: int, limit: int) -> list[tuple[int, dict[str, Any]]]:
        rows = await self._rows(
            "SELECT id, at, principal, action, resource, details FROM audit WHERE run_id=%s AND id>%s "
            "ORDER BY id LIMIT %s",
            (run_id, after_id, limit),
        )
        parse = self._dialect.json_in
        return [
            (int(r[0]), {"at": r[1], "principal": r[2], "action": r[3], "resource": r[4], "details": parse(r[5])})
            for r in rows
        ]


def prefix_end(prefix: str) -> str | None:
    """The least string past every string that starts with ``prefix`` (None: there is none, or no prefix)."""
    while prefix:
        last = ord(prefix[-1])
        if last < 0x10FFFF:
            following = 0xE000 if 0xD800 <= last + 1 <= 0xDFFF else last + 1  # no surrogate is stored
            return prefix[:-1] + chr(following)
        prefix = prefix[:-1]
    return None
