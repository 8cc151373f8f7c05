"""The statuses of a run and of an interrupt, and the one table of how each may change.

A status changes only in a store's write transaction (:mod:`openwop_bridge.store.plan`,
:mod:`~openwop_bridge.store.plan_close`, :mod:`~openwop_bridge.store.plan_status`), and every such
change goes through :func:`check_run` or :func:`check_interrupt` first: a change the table does not
allow raises :class:`StatusTransitionError` and the transaction writes nothing. Keeping a status is
always allowed. The tables play the part :data:`openwop_bridge.core.graph.FIRES_ON` plays for edges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from openwop_bridge.core.errors import StatusTransitionError

#: What a run reports (the ``status`` of the OpenWOP run snapshot).
RunStatus = Literal[
    "pending",
    "running",
    "paused",
    "waiting-approval",
    "waiting-input",
    "waiting-external",
    "cancelling",
    "completed",
    "failed",
    "cancelled",
]
#: How an interrupt stands: ``pending`` (open) or how it closed; ``gone`` when a parent's cancel took its run.
InterruptStatus = Literal["pending", "resolved", "expired", "cancelled", "gone"]

RUN_STATUSES: frozenset[RunStatus] = frozenset(get_args(RunStatus))
INTERRUPT_STATUSES: frozenset[InterruptStatus] = frozenset(get_args(InterruptStatus))

#: A run that has ended: its status changes no more.
TERMINAL_RUN: frozenset[RunStatus] = frozenset({"completed", "failed", "cancelled"})
#: A run its executor drives (working, or waiting for a person or an event).
LIVE_RUN: frozenset[RunStatus] = frozenset(
    {"running", "paused", "waiting-approval", "waiting-input", "waiting-external"}
)
#: The status of an open interrupt.
OPEN_INTERRUPT: InterruptStatus = "pending"

#: For each run status, the statuses it may change to. A new run is ``pending`` until its first commit; a
#: live run moves between live statuses and ends; a cancel makes it ``cancelling`` until its executor ends it.
RUN_TRANSITIONS: Mapping[RunStatus, frozenset[RunStatus]] = {
    "pending": LIVE_RUN | TERMINAL_RUN | {"cancelling"},
    **{status: LIVE_RUN | TERMINAL_RUN | {"cancelling"} for status in LIVE_RUN},
    "cancelling": TERMINAL_RUN,
    **{status: frozenset() for status in TERMINAL_RUN},
}

#: For each interrupt status, the statuses it may change to: an open interrupt closes once, for good.
INTERRUPT_TRANSITIONS: Mapping[InterruptStatus, frozenset[InterruptStatus]] = {
    "pending": INTERRUPT_STATUSES - {"pending"},
    **{status: frozenset() for status in INTERRUPT_STATUSES - {"pending"}},
}


def _check(what: str, table: Mapping[Any, frozenset[Any]], old: str, new: str) -> None:
    allowed = table.get(old)
    if allowed is None or new not in table or (new != old and new not in allowed):
        raise StatusTransitionError(f"{what} status cannot change from {old!r} to {new!r}")


def check_run(old: str, new: str) -> None:
    """Refuse a run status change the table does not allow (:class:`StatusTransitionError`)."""
    _check("run", RUN_TRANSITIONS, old, new)


def check_interrupt(old: str, new: str) -> None:
    """Refuse an interrupt status change the table does not allow (:class:`StatusTransitionError`)."""
    _check("interrupt", INTERRUPT_TRANSITIONS, old, new)
