"""What the timer does when an interrupt's deadline passes.

An approval fails closed (rejected with reason ``timeout``, never auto-approved); any other
kind resumes its node with no value. A conversation's exchange also closes the conversation
with a system turn.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core import approvals, kinds
from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.decisions.common import NewId, resolved_event, settle
from openwop_bridge.core.decisions.exchange import timeout_close_events
from openwop_bridge.core.decisions.recording import host_record
from openwop_bridge.core.records import InterruptDecision, InterruptRecord, Mutation, RunRecord

SYSTEM_TIMEOUT = "system:timeout"


def timeout_decision(now: int, new_id: NewId) -> InterruptDecision:
    """The decision for an interrupt whose deadline may have passed (nothing happens if it has not)."""

    def decide(intr: InterruptRecord, run: RunRecord) -> Mutation:
        if not intr.open or intr.deadline_ms is None or intr.deadline_ms > now:
            return Mutation(result={"status": intr.status, "fired": False})
        kind = kinds.kind_of(intr.kind)
        final, emitted = _fail_closed(intr, now) if kind.fails_closed else (None, [])
        action = None if final is None else "timeout"
        record = host_record(
            intr, new_id, decision="timeout", by=SYSTEM_TIMEOUT, value=final, action=action, reason="timeout"
        )
        recorded = {"decisionRecordId": record.record_id}
        if final is not None:
            fail_closed = {"action": "timeout", "decision": "rejected", "outcome": "rejected"}
            emitted.append(
                resolved_event(intr, now, SYSTEM_TIMEOUT, final, **fail_closed, reason="timeout", **recorded)
            )
        else:
            emitted.append(resolved_event(intr, now, SYSTEM_TIMEOUT, None, reason="timeout", **recorded))
        if kind.turn:
            emitted += timeout_close_events(intr, now, new_id)
        extra: dict[str, Any] = {"reason": "timeout"}
        if final is not None:
            extra.update({"action": "timeout", "decision": "rejected"})
        return settle(
            intr,
            now,
            new_id,
            status="expired",
            by=SYSTEM_TIMEOUT,
            value=final,
            emitted=emitted,
            extra=extra,
            records=[record],
            result={"status": "expired", "fired": True},
        )

    return decide


def _fail_closed(intr: InterruptRecord, now: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An approval's timeout value and its ``approval.received`` event."""
    received = {"nodeId": intr.node_id, "action": "timeout", "decidedBy": SYSTEM_TIMEOUT, "decidedAt": iso_ms(now)}
    return approvals.timeout_value(iso_ms(now)), [
        {"type": "approval.received", "payload": received, "nodeId": intr.node_id}
    ]
