"""Rows and messages of the PostgreSQL store: column lists, row mapping, notifications.

Kept apart from :mod:`bridge.store.postgres` so the store reads as its
transactions. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from bridge.core.events import EventDraft
from bridge.core.records import InterruptRecord, RunRecord
from bridge.store.cursor import page_cursor as page_cursor

CHANNEL = "openwop_bridge"
MIGRATION_LOCK = 0x6F77_6272  # pg_advisory_xact_lock key: "owbr"
TERMINAL_SQL = "('completed','failed','cancelled')"

RUN_COLS = (
    "run_id, tenant, workflow_id, status, created_at, updated_at, spec, state, parent_run_id, "
    "parent_node_id, parent_visit, child_ordinal, completed_at, next_seq, owner, lease_until, epoch, "
    "wake, needs_work, control"
)
INT_COLS = (
    "interrupt_id, run_id, tenant, workflow_id, node_id, exec_node, visit, ordinal, key, kind, status, "
    "payload, requested_at, deadline, resolved_at, consumed, resolution, state, requested_seq"
)
INSERT_RUN = (
    f"INSERT INTO runs({RUN_COLS}) VALUES "
    "(%s,%s,%s,%s,%s,%s,%s::json,%s::json,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::json)"
)
INSERT_INTERRUPT = (
    f"INSERT INTO interrupts({INT_COLS}) VALUES "
    "(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::json,%s,%s,%s,%s,%s::json,%s::json,%s)"
)
INSERT_EVENT = "INSERT INTO events(run_id, seq, type, node_id, visit, cmd, doc) VALUES (%s,%s,%s,%s,%s,%s,%s::json)"
INSERT_AUDIT = (
    "INSERT INTO audit(tenant, at, principal, action, resource, run_id, details) VALUES (%s,%s,%s,%s,%s,%s,%s::json)"
)


def dumps(value: Any) -> str:
    """JSON text for a ``json`` column."""
    return orjson.dumps(value).decode("utf-8")


def run_from_row(row: Sequence[Any]) -> RunRecord:
    """A :class:`RunRecord` from a row of :data:`RUN_COLS` (``json`` columns already parsed)."""
    return RunRecord(
        run_id=row[0],
        tenant=row[1],
        workflow_id=row[2],
        status=row[3],
        created_at_ms=row[4],
        updated_at_ms=row[5],
        spec=row[6],
        state=row[7],
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
        control=row[19],
    )


def interrupt_from_row(row: Sequence[Any]) -> InterruptRecord:
    """An :class:`InterruptRecord` from a row of :data:`INT_COLS`."""
    return InterruptRecord(
        interrupt_id=row[0],
        run_id=row[1],
        tenant=row[2],
        workflow_id=row[3],
        node_id=row[4],
        exec_node=row[5],
        visit=row[6],
        ordinal=row[7],
        key=row[8],
        kind=row[9],
        status=row[10],
        payload=row[11],
        requested_at_ms=row[12],
        deadline_ms=row[13],
        resolved_at_ms=row[14],
        consumed=bool(row[15]),
        resolution=row[16],
        state=row[17] or {},
        requested_seq=row[18],
    )


def run_params(run: RunRecord, next_seq: int) -> tuple[Any, ...]:
    """Parameters of :data:`INSERT_RUN`."""
    return (
        run.run_id,
        run.tenant,
        run.workflow_id,
        run.status,
        run.created_at_ms,
        run.updated_at_ms,
        dumps(run.spec),
        dumps(run.state),
        run.parent_run_id,
        run.parent_node_id,
        run.parent_visit,
        run.child_ordinal,
        run.completed_at_ms,
        next_seq,
        run.owner,
        run.lease_until_ms,
        run.epoch,
        run.wake,
        run.needs_work,
        dumps(run.control) if run.control else None,
    )


def interrupt_params(i: InterruptRecord) -> tuple[Any, ...]:
    """Parameters of :data:`INSERT_INTERRUPT`."""
    return (
        i.interrupt_id,
        i.run_id,
        i.tenant,
        i.workflow_id,
        i.node_id,
        i.exec_node,
        i.visit,
        i.ordinal,
        i.key,
        i.kind,
        i.status,
        dumps(i.payload),
        i.requested_at_ms,
        i.deadline_ms,
        i.resolved_at_ms,
        i.consumed,
        dumps(i.resolution) if i.resolution is not None else None,
        dumps(i.state) if i.state else None,
        i.requested_seq,
    )


def event_rows(
    run_id: str, start: int, drafts: Sequence[EventDraft]
) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """Event documents numbered from ``start`` and their :data:`INSERT_EVENT` parameters."""
    docs: list[dict[str, Any]] = []
    rows: list[tuple[Any, ...]] = []
    for seq, draft in enumerate(drafts, start=start):
        doc = draft.envelope(run_id, seq)
        act = draft.activation
        rows.append(
            (
                run_id,
                seq,
                draft.type,
                act[0] if act else draft.node_id,
                act[1] if act else None,
                act[2] if act else None,
                dumps(doc),
            )
        )
        docs.append(doc)
    return docs, rows


def audit_params(tenant: str, run_id: str, now_ms: int, entries: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Parameters of :data:`INSERT_AUDIT` for a mutation's audit entries."""
    return [
        (
            tenant,
            now_ms,
            e["principal"],
            e["action"],
            e["resource"],
            run_id,
            dumps(e.get("details", {})),
        )
        for e in entries
    ]


@dataclass(slots=True)
class Notice:
    """What one transaction tells the other instances about one run."""

    events: bool = False
    wake_owner: str | None = None


@dataclass(slots=True)
class Outbox:
    """Notifications collected during a transaction and sent from inside it.

    ``pg_notify`` delivers them only if the transaction commits, so a listener
    never hears of work that was rolled back.
    """

    notices: dict[str, Notice] = field(default_factory=dict)

    def events(self, run_id: str) -> None:
        """Events of ``run_id`` were appended."""
        self.notices.setdefault(run_id, Notice()).events = True

    def wake(self, run_id: str, owner: str | None) -> None:
        """``run_id`` was woken; only its current owner has anything to do."""
        if owner is not None:
            self.notices.setdefault(run_id, Notice()).wake_owner = owner

    def payloads(self, sender: str) -> list[str]:
        """One ``pg_notify`` payload per run."""
        out = []
        for run_id, notice in self.notices.items():
            msg: dict[str, Any] = {"from": sender, "run": run_id}
            if notice.events:
                msg["events"] = True
            if notice.wake_owner is not None:
                msg["wake"] = notice.wake_owner
            out.append(dumps(msg))
        return out


def parse_notice(payload: str) -> tuple[str, str, bool, str | None] | None:
    """``(sender, run_id, events, wake_owner)`` from a payload, or None if it is not ours."""
    try:
        msg = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(msg, dict) or not isinstance(msg.get("from"), str) or not isinstance(msg.get("run"), str):
        return None
    wake = msg.get("wake")
    return msg["from"], msg["run"], bool(msg.get("events")), wake if isinstance(wake, str) else None
