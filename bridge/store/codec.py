"""The row codec shared by both stores: column lists, statements, and rows ↔ records.

Statements are written once, in a neutral form with ``%s`` placeholders and
``%s::json`` for JSON parameters; each :class:`Dialect` turns them into its own
SQL. What truly differs between the databases stays in the dialect: how
placeholders look, whether JSON columns arrive parsed, and row locking.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from openwop_bridge.core.decisions.exchange import exchange_conversation, kept_answer
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord, RunRecord

R = TypeVar("R")

TERMINAL_SQL = "('completed','failed','cancelled')"

RUN_COLS = (
    "run_id, tenant, workflow_id, status, created_at, updated_at, spec, state, parent_run_id, "
    "parent_node_id, parent_visit, child_ordinal, completed_at, next_seq, owner, lease_until, epoch, "
    "wake, needs_work, control"
)
#: The names in :data:`RUN_COLS`, in order.
RUN_NAMES = tuple(RUN_COLS.split(", "))
_RUN_INDEX = {name: i for i, name in enumerate(RUN_NAMES)}
INT_COLS = (
    "interrupt_id, run_id, tenant, workflow_id, node_id, exec_node, visit, ordinal, key, kind, status, "
    "payload, requested_at, deadline, resolved_at, consumed, resolution, state, requested_seq"
)
INSERT_RUN = (
    f"INSERT INTO runs({RUN_COLS}) VALUES "
    "(%s,%s,%s,%s,%s,%s,%s::json,%s::json,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::json)"
)
#: With the two columns an exchange's row keeps for its conversation's close (see :func:`answer_text`).
INSERT_INTERRUPT = (
    f"INSERT INTO interrupts({INT_COLS}, conversation, answer) VALUES "
    "(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::json,%s,%s,%s,%s,%s::json,%s::json,%s,%s,%s::json)"
)
INSERT_EVENT = "INSERT INTO events(run_id, seq, type, node_id, visit, cmd, doc) VALUES (%s,%s,%s,%s,%s,%s,%s::json)"
INSERT_AUDIT = (
    "INSERT INTO audit(tenant, at, principal, action, resource, run_id, details) VALUES (%s,%s,%s,%s,%s,%s,%s::json)"
)


def dumps(value: Any) -> str:
    """JSON text for a JSON column."""
    return orjson.dumps(value).decode("utf-8")


def loads(text: str | bytes | None) -> Any:
    """The value of a JSON column stored as text (``None`` stays ``None``)."""
    return None if text is None else orjson.loads(text)


def parsed(value: Any) -> Any:
    """The value of a JSON column the driver already parsed."""
    return value


@functools.lru_cache(maxsize=256)
def _question_marks(sql: str) -> str:
    return sql.replace("%s::json", "?").replace("%s", "?")


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the databases when writing and reading rows."""

    #: The value of a JSON column as the driver returns it.
    json_in: Callable[[Any], Any]
    #: Appended to a ``SELECT`` that locks the rows it reads ("" where one writer excludes the others).
    lock: str
    #: ``?`` placeholders and JSON as plain text (SQLite) instead of ``%s``/``%s::json`` (PostgreSQL).
    question_marks: bool
    #: A ``UNION ALL`` whose merged order an index gives is written with each branch in parentheses with its
    #: own ``ORDER BY … LIMIT`` (PostgreSQL merges those in order); SQLite merges plain branches in order itself.
    limited_branches: bool = False
    #: A string field of an interrupt's ``payload.data`` (``{field}``), NULL when absent or not a string.
    data_string: str = ""
    #: Whether an array field of ``payload.data`` (``{field}``) holds the string parameter (one ``%s``); false when
    #: absent or not an array.
    data_array_holds: str = ""

    def sql(self, neutral: str) -> str:
        """The dialect's text of a neutral statement."""
        return _question_marks(neutral) if self.question_marks else neutral

    def run(self, row: Sequence[Any]) -> RunRecord:
        """A run from a row of :data:`RUN_COLS`."""
        return run_from_row(row, self.json_in)

    def interrupt(self, row: Sequence[Any]) -> InterruptRecord:
        """An interrupt from a row of :data:`INT_COLS`."""
        return interrupt_from_row(row, self.json_in)


SQLITE = Dialect(
    json_in=loads,
    lock="",
    question_marks=True,
    data_string=(
        "(CASE WHEN json_type(payload, '$.data.{field}') = 'text' THEN json_extract(payload, '$.data.{field}') END)"
    ),
    data_array_holds=(
        "(json_type(payload, '$.data.{field}') = 'array' AND EXISTS "
        "(SELECT 1 FROM json_each(payload, '$.data.{field}') j WHERE j.type = 'text' AND j.value = %s))"
    ),
)
POSTGRES = Dialect(
    json_in=parsed,
    lock=" FOR UPDATE",
    question_marks=False,
    limited_branches=True,
    data_string="(CASE WHEN json_typeof(payload->'data'->'{field}') = 'string' THEN payload->'data'->>'{field}' END)",
    data_array_holds=(
        "EXISTS (SELECT 1 FROM json_array_elements_text(CASE WHEN json_typeof(payload->'data'->'{field}') = 'array' "
        "THEN payload->'data'->'{field}' END) j(v) WHERE j.v = %s)"
    ),
)


def run_from_row(row: Sequence[Any], json_in: Callable[[Any], Any] = parsed) -> RunRecord:
    """A :class:`RunRecord` from a row of :data:`RUN_COLS`."""
    return RunRecord(
        run_id=row[0],
        tenant=row[1],
        workflow_id=row[2],
        status=row[3],
        created_at_ms=row[4],
        updated_at_ms=row[5],
        spec=json_in(row[6]),
        state=json_in(row[7]),
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
        control=json_in(row[19]),
    )


def interrupt_from_row(row: Sequence[Any], json_in: Callable[[Any], Any] = parsed) -> InterruptRecord:
    """An :class:`InterruptRecord` from a row of :data:`INT_COLS`.

    Positional, in :class:`InterruptRecord`'s field order: a replay reads every
    interrupt its node raised, so this runs once per earlier turn.
    """
    r = row
    return InterruptRecord(
        r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
        json_in(r[11]), r[12], r[13], r[14], bool(r[15]),
        None if r[16] is None else json_in(r[16]),
        (json_in(r[17]) if r[17] is not None else None) or {},
        r[18],
    )  # fmt: skip


def run_params(run: RunRecord, next_seq: int, sets: Mapping[str, Any] | None = None) -> tuple[Any, ...]:
    """Parameters of :data:`INSERT_RUN`; ``sets`` replaces columns by name (JSON ones as text)."""
    params = (
        run.run_id,
        run.tenant,
        run.workflow_id,
        run.status,
        run.created_at_ms,
        run.updated_at_ms,
        dumps(run.spec),
        None if sets and "state" in sets else dumps(run.state),
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
    if not sets:
        return params
    values = list(params)
    for name, value in sets.items():
        if name in _RUN_INDEX:
            values[_RUN_INDEX[name]] = value
    return tuple(values)


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
        exchange_conversation(i.kind, i.payload),
        answer_text(i.kind, i.status, i.resolution),
    )


def answer_text(kind: str, status: str, resolution: Mapping[str, Any] | None) -> str | None:
    """The ``answer`` column of an interrupt row: the JSON of an answered exchange's answer, else NULL
    (see :func:`~openwop_bridge.core.decisions.exchange.kept_answer`)."""
    kept = kept_answer(kind, status, resolution)
    return None if kept is None else dumps(kept[0])


def event_rows(
    run_id: str, start: int, drafts: Sequence[EventDraft]
) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """Event documents numbered from ``start`` and their :data:`INSERT_EVENT` parameters."""
    docs: list[dict[str, Any]] = []
    rows: list[tuple[Any, ...]] = []
    for seq, draft in enumerate(drafts, start=start):
        doc = draft.envelope(run_id, seq)
        act = draft.activation
        node = act[0] if act else draft.node_id
        stored = doc.copy()
        del stored["runId"], stored["type"], stored["sequence"]  # in columns of their own
        rows.append((run_id, seq, draft.type, node, act[1] if act else None, act[2] if act else None, dumps(stored)))
        docs.append(doc)
    return docs, rows


#: What :func:`event_doc` reads: the columns an event row's stored document leaves out (its ``runId``, ``sequence``
#: and ``type``, about a sixth of it; see :func:`event_rows`), then that document.
EVENT_COLS = "run_id, seq, type, doc"


def event_doc(row: Sequence[Any], json_in: Callable[[Any], Any] = parsed) -> dict[str, Any]:
    """An event's document from a row of :data:`EVENT_COLS`, its keys in the envelope's order (see
    :meth:`~openwop_bridge.core.events.EventDraft.envelope`); a document an older release stored whole, as it is."""
    run_id, seq, type_, text = row
    stored: dict[str, Any] = json_in(text)
    if "runId" in stored:
        return stored
    doc = {"eventId": stored.pop("eventId"), "runId": run_id, "type": type_}
    doc["payload"] = stored.pop("payload")
    doc["timestamp"] = stored.pop("timestamp")
    doc["sequence"] = seq
    doc.update(stored)
    return doc


def audit_params(tenant: str, run_id: str, now_ms: int, entries: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Parameters of :data:`INSERT_AUDIT` for a mutation's audit entries."""
    return [
        (tenant, now_ms, e["principal"], e["action"], e["resource"], run_id, dumps(e.get("details", {})))
        for e in entries
    ]
