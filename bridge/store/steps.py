"""The steps of a plan: what a write transaction yields to the store that runs it.

A plan (:mod:`openwop_bridge.store.plan`, :mod:`openwop_bridge.store.plan_kv`) is a generator: it yields a
:class:`Sql` statement (or a :class:`Note`, or an :class:`Ahead`) and receives the rows the
statement returned. :class:`Note` steps run nothing: they tell the store what the transaction did
(a run's row is locked, a run gained events, a run was woken, a deadline was written), which PostgreSQL turns into its
return order and its notices to other instances. :class:`Ahead` steps announce statements to come,
which PostgreSQL sends at once; SQLite, which runs one statement at a time in process, skips both.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from openwop_bridge.core.decision_record import DecisionDraft
from openwop_bridge.core.records import InterruptRecord, RunRecord

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Sql:
    """One statement in neutral text; with ``many``, ``args`` is a list of parameter tuples."""

    text: str
    args: Sequence[Any] = ()
    many: bool = False


@dataclass(frozen=True, slots=True)
class Ahead:
    """A statement the plan yields next (or soon after): a store may send it now without waiting for it.

    The plan then yields ``sql`` itself and gets its rows as usual; a store that runs one statement at
    a time ignores this step.
    """

    sql: Sql


@dataclass(frozen=True, slots=True)
class Note:
    """What the transaction did to a run, for stores that tell other instances."""

    what: Literal["locked", "events", "wake", "deadline"]
    run_id: str
    owner: str | None = None
    at_ms: int | None = None  # "deadline": the earliest deadline the transaction wrote for the run


@dataclass(frozen=True, slots=True)
class Planned:
    """What the transaction commits for a run, offered to the notice planners (:mod:`openwop_bridge.store.plan_outbox`).

    A store with planners writes the notices they plan in its place, in the same transaction; a store
    without any skips it. ``run`` is a :class:`~openwop_bridge.core.records.RunRecord`, ``events`` the event
    documents appended, ``opened`` the interrupts opened.
    """

    run: RunRecord
    events: Sequence[dict[str, Any]]
    opened: Sequence[InterruptRecord]
    now_ms: int


@dataclass(frozen=True, slots=True)
class Recorded:
    """The decisions the transaction commits, for the decision record (:mod:`openwop_bridge.store.plan_records`).

    A store that keeps the record appends them to ``tenant``'s chain in its place, in the same
    transaction; a store that does not skips it.
    """

    tenant: str
    run_id: str | None
    drafts: Sequence[DecisionDraft]
    now_ms: int


Rows = list[tuple[Any, ...]]
Plan = Generator[Sql | Note | Ahead | Planned | Recorded, Rows, T]
