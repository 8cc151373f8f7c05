"""The interrupts an executor's commit closes with nobody answering them, and the events that say so.

A step closes interrupts in two ways: its run ends while they are open (the executor names them
in :attr:`~openwop_bridge.store.base.RunCommit.close_interrupts`), or the run's cancel committed before
the step, so what the step opens (and anything still pending) is closed at once. Either way each
interrupt the commit actually closes gets its ``interrupt.resolved``
(:func:`openwop_bridge.core.decisions.cancel.closed_unanswered`), so the log tells how every interrupt
ended; one already closed meanwhile (answered, timed out) keeps the single event it has.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core import statuses
from openwop_bridge.core.clock import ulid
from openwop_bridge.core.decisions.cancel import cancel_request, cancel_subject, closed_unanswered
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.core.statuses import OPEN_INTERRUPT, InterruptStatus
from openwop_bridge.store.base import RunCommit
from openwop_bridge.store.codec import INT_COLS, Dialect
from openwop_bridge.store.steps import Plan, Sql


def _draft(
    intr: InterruptRecord, now_ms: int, by: str, reason: str, by_subject: dict[str, str] | None = None
) -> EventDraft:
    event = closed_unanswered(intr, now_ms, by, reason, by_subject)
    return EventDraft(f"evt_{ulid(now_ms)}", event["type"], event["payload"], now_ms, node_id=event["nodeId"])


def closing(d: Dialect, c: RunCommit, closed_as: InterruptStatus | None, control: Any) -> Plan[list[EventDraft]]:
    """Close what the commit closes (``closed_as``: the status a committed cancel gives, see
    :func:`openwop_bridge.core.records.cancel_committed`; ``control``: the run's control requests) and return
    one ``interrupt.resolved`` draft for each interrupt closed here.

    The step's new interrupts are closed before they are inserted; the others by a guarded ``UPDATE``,
    under the run's lock, whose returned rows are the interrupts this commit closed.
    """
    now = c.now_ms
    who = cancel_subject(control) if closed_as else None
    if closed_as:
        by, reason = cancel_request(control)
    else:
        by, reason = "system", f"run-{c.status}" if c.terminal and c.status else "run-ended"
    drafts: list[EventDraft] = []
    new_ids = set()
    for intr in c.new_interrupts:
        new_ids.add(intr.interrupt_id)
        status = closed_as or c.close_interrupts.get(intr.interrupt_id)
        if status and intr.open:
            statuses.check_interrupt(intr.status, status)
            intr.status, intr.resolved_at_ms = status, now
            drafts.append(_draft(intr, now, by, reason, who))
    for iid, new_status in c.close_interrupts.items():
        if iid in new_ids:
            continue
        statuses.check_interrupt(OPEN_INTERRUPT, closed_as or new_status)
        rows = yield Sql(
            "UPDATE interrupts SET status=%s, resolved_at=%s WHERE interrupt_id=%s AND status='pending' "
            f"RETURNING {INT_COLS}",
            (closed_as or new_status, now, iid),
        )
        drafts += [_draft(d.interrupt(row), now, by, reason, who) for row in rows]
    if closed_as:
        statuses.check_interrupt(OPEN_INTERRUPT, closed_as)
        rows = yield Sql(
            "UPDATE interrupts SET status=%s, resolved_at=%s WHERE run_id=%s AND status='pending' "
            f"RETURNING {INT_COLS}",
            (closed_as, now, c.run_id),
        )
        drafts += [_draft(d.interrupt(row), now, by, reason, who) for row in rows]
    return drafts
