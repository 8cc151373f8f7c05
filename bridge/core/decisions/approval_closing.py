"""Closing an approval with its final value: the events it emits and the resolution it keeps.

A vote that settles the gate (:mod:`openwop_bridge.core.decisions.approval`), the cancel that rejects it
(:mod:`openwop_bridge.core.decisions.cancel`) and a timeout close it here, so its ``approval.received`` and
``interrupt.resolved`` say the same whoever closed it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openwop_bridge.core.decision_record import DecisionDraft
from openwop_bridge.core.decisions.common import NewId, resolved_event, settle
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord, Mutation

__all__ = ["settle_approval"]


def settle_approval(
    intr: InterruptRecord,
    now: int,
    new_id: NewId,
    final: dict[str, Any],
    state: dict[str, Any],
    events: list[EventDraft],
    audit: list[dict[str, Any]],
    outcome: str,
    used: str | None = None,
    records: Sequence[DecisionDraft] = (),
    acted: Mapping[str, Any] | None = None,
) -> Mutation:
    """Close an approval with its final value: ``approval.received`` and ``interrupt.resolved``, and wake the run.

    ``used``: the assurance of the answer that settled it (None for a timeout or a cancel); ``records``: the
    decision's drafts for the decision record, the last the one that settled it (``interrupt.resolved`` names it);
    ``acted``: the :data:`~openwop_bridge.core.decisions.approval.ON_BEHALF` fields of the deciding vote, when
    someone acted in its voter's place (the resolution and ``interrupt.resolved`` carry them)."""
    received: dict[str, Any] = {
        "nodeId": intr.node_id,
        "action": final["action"],
        "decidedBy": final["decidedBy"],
        "decidedAt": final["decidedAt"],
    }
    for name in ("feedback", "refineFeedback", "editedArtifactData"):
        if name in final:
            received[name] = final[name]
    if "quorum" in final:
        received["quorum"] = final["quorum"]
    who = final.get("decidedBySubject")
    if who is not None:
        received["decidedBySubject"] = who
    decision = "approved" if outcome == "accepted" else "rejected"
    timed_out = final["action"] == "timeout"
    emitted: list[dict[str, Any]] = [
        {"type": "approval.received", "payload": received, "nodeId": intr.node_id},
        resolved_event(
            intr,
            now,
            final["decidedBy"],
            final,
            action=final["action"],
            decision=decision,
            reason=final.get("reason") if timed_out else None,
            resolvedBySubject=who,
            decisionRecordId=records[-1].record_id if records else None,
            **(acted or {}),
        ),
    ]
    return settle(
        intr,
        now,
        new_id,
        status="resolved",
        by=final["decidedBy"],
        value=final,
        emitted=emitted,
        extra={
            "action": final["action"],
            "decision": decision,
            **({"resolvedBySubject": who} if who else {}),
            **({"assurance": used} if used else {}),
            **(acted or {}),
        },
        state=state,
        events=events,
        audit=audit,
        records=records,
        result={"status": "resolved", "action": final["action"], "decision": decision},
    )
