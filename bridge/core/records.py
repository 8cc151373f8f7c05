"""The records the core decides on: a run row, an interrupt row, and a mutation.

A decision function (:mod:`openwop_bridge.core.decisions`)
takes records and returns a :class:`Mutation`; a store applies it atomically. These
types belong to the core so that decisions can be written and tested with no store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar

from openwop_bridge.core.decision_record import DecisionDraft
from openwop_bridge.core.errors import BridgeError
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.statuses import OPEN_INTERRUPT, TERMINAL_RUN, InterruptStatus, RunStatus

TERMINAL_RUN_STATUSES = TERMINAL_RUN


def has_nul(values: Sequence[Any]) -> bool:
    """True when a text value holds U+0000.

    Identifiers (run, workflow, tenant, node, stored keys) never may: PostgreSQL text
    cannot hold the character, and both stores refuse it alike so they keep one contract.
    Documents (payloads, answers, state) may, since they are stored as JSON.
    """
    return any(isinstance(v, str) and "\x00" in v for v in values)


@dataclass(slots=True)
class RunRecord:
    """One run row. ``spec`` is fixed at creation; ``state`` is the executor's projection; ``status`` is one of
    :data:`openwop_bridge.RunStatus`, changed only as ``core/statuses.py`` allows."""

    run_id: str
    tenant: str
    workflow_id: str
    status: RunStatus
    created_at_ms: int
    updated_at_ms: int
    spec: dict[str, Any]
    state: dict[str, Any]
    parent_run_id: str | None = None
    parent_node_id: str | None = None
    parent_visit: int | None = None
    child_ordinal: int | None = None
    completed_at_ms: int | None = None
    next_seq: int = 0
    owner: str | None = None
    lease_until_ms: int | None = None
    epoch: int = 0
    wake: int = 0
    needs_work: bool = True
    control: dict[str, Any] | None = None  # requests to the executor, e.g. {"cancel": {...}}

    @property
    def terminal(self) -> bool:
        """True once the run completed, failed or was cancelled."""
        return self.status in TERMINAL_RUN_STATUSES


@dataclass(slots=True)
class InterruptRecord:
    """One interrupt row: the request, its state (votes, asks) and its resolution; ``status`` is one of
    :data:`openwop_bridge.InterruptStatus` (``pending`` while open), changed only as ``core/statuses.py`` allows."""

    interrupt_id: str
    run_id: str
    tenant: str
    workflow_id: str
    node_id: str  # the address used on the wire (``nodeId``)
    exec_node: str  # the workflow node whose code raised it
    visit: int
    ordinal: int
    key: str
    kind: str
    status: InterruptStatus
    payload: dict[str, Any]
    requested_at_ms: int
    deadline_ms: int | None = None
    resolved_at_ms: int | None = None
    consumed: bool = False
    resolution: dict[str, Any] | None = None
    state: dict[str, Any] = field(default_factory=dict)
    requested_seq: int | None = None
    requested_event_id: str | None = None  # set while the record waits for its commit

    @property
    def open(self) -> bool:
        """Still waiting for an answer."""
        return self.status == OPEN_INTERRUPT


D = TypeVar("D")

#: Per dataclass: how to read its fields in ``__init__`` order, or ``None`` when ``__init__`` does not take
#: them all by position.
_POSITIONAL: dict[type, tuple[Callable[[Any], tuple[Any, ...]], dict[str, int]] | None] = {}


def _positional(cls: type) -> tuple[Callable[[Any], tuple[Any, ...]], dict[str, int]] | None:
    if cls not in _POSITIONAL:
        every = fields(cls)
        names = [f.name for f in every]
        plain = len(every) >= 2 and all(f.init and not f.kw_only for f in every)
        _POSITIONAL[cls] = (attrgetter(*names), {name: i for i, name in enumerate(names)}) if plain else None
    return _POSITIONAL[cls]


def replaced(record: D, **changes: Any) -> D:
    """:func:`dataclasses.replace`, several times cheaper for records ``__init__`` takes every field of by position.

    A shallow copy (documents shared) with the named fields changed; ``replaced(record)`` copies it to change
    fields of. Other dataclasses go through :func:`dataclasses.replace`.
    """
    how = _positional(type(record))
    if how is None:
        return dataclasses.replace(record, **changes)  # type: ignore[type-var]
    get, index = how
    if not changes:
        return type(record)(*get(record))
    values = list(get(record))
    for name, value in changes.items():
        values[index[name]] = value
    return type(record)(*values)


@dataclass(slots=True)
class Mutation:
    """What a decision function wants done, applied atomically by the store.

    ``error`` is raised to the caller *after* the transaction commits, so audit
    events (an authorization denial, a duplicate vote) are kept even when the
    request itself is refused.
    """

    interrupt_status: InterruptStatus | None = None
    interrupt_state: dict[str, Any] | None = None
    resolution: dict[str, Any] | None = None
    resolved_at_ms: int | None = None
    events: list[EventDraft] = field(default_factory=list)
    wake: bool = False
    run_status: RunStatus | None = None
    cancel_interrupts: InterruptStatus | None = None  # new status for every open interrupt of the run
    control: dict[str, Any] | None = None  # replaces the run's control requests
    audit: list[dict[str, Any]] = field(default_factory=list)
    #: The decisions taken, for the tenant's decision record (:mod:`openwop_bridge.core.decision_record`).
    records: list[DecisionDraft] = field(default_factory=list)
    result: Any = None
    error: BridgeError | None = None


InterruptDecision = Callable[[InterruptRecord, RunRecord], Mutation]
RunDecision = Callable[[RunRecord, list[InterruptRecord]], Mutation]


def cancel_committed(status: str, control: Mapping[str, Any] | None) -> InterruptStatus | None:
    """The status interrupts get on a run whose cancel has committed, else None.

    ``gone`` when a parent's cancel cascaded to the run, ``cancelled`` otherwise:
    the statuses the cancel itself gave the interrupts open at that moment. A
    store's commit applies it, under the run's lock, to interrupts the executor
    opens after the cancel, so none is ever pending on a cancelled run.
    """
    cancel = (control or {}).get("cancel")
    if status not in ("cancelling", "cancelled") and cancel is None:
        return None
    return "gone" if isinstance(cancel, Mapping) and cancel.get("parentRunId") else "cancelled"
