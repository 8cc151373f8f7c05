"""Cancelling an interrupt or a whole run.

Cancelling an approval fails closed: it is the canceller's rejection, so it
needs the same right to decide the gate as an answer would. Any other kind
raises ``InterruptCancelledError`` in its node. Cancelling a run invalidates its
open interrupts and leaves the rest (nodes, children) to its executor; an
interrupt the executor opens after the cancel committed is written closed by the
store (see :func:`openwop_bridge.core.records.cancel_committed`), and an answer to one still
pending on such a run is refused (:func:`openwop_bridge.core.decisions.answer.answer_decision`).

However an interrupt closes, its log says so: one closed with nobody answering it (its run
cancelled, or ended while it was open) gets the ``interrupt.resolved`` of
:func:`closed_unanswered`, as an answer, a timeout or cancelling it alone give theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from openwop_bridge.core import kinds
from openwop_bridge.core.auth import Principal, subject_ref
from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.decisions.approval import gate_denial
from openwop_bridge.core.decisions.approval_closing import settle_approval
from openwop_bridge.core.decisions.common import NewId, closed_error, event_draft, resolved_event, settle
from openwop_bridge.core.decisions.recording import host_record
from openwop_bridge.core.errors import InterruptNotFoundError, RunNotFoundError
from openwop_bridge.core.records import InterruptDecision, InterruptRecord, Mutation, RunRecord


def cancel_decision(principal: Principal, now: int, new_id: NewId, reason: str = "cancelled") -> InterruptDecision:
    """Cancel one interrupt. An approval fails closed (rejected with reason ``cancelled``);
    anything else raises ``InterruptCancelledError`` in its node."""

    who = subject_ref(principal)
    by_subject = {"resolvedBySubject": who} if who is not None else {}

    def decide(intr: InterruptRecord, run: RunRecord) -> Mutation:
        if principal.tenant not in (run.tenant, "*"):
            raise InterruptNotFoundError("no interrupt at this address")
        if not intr.open:
            raise closed_error(intr, "run")
        if kinds.kind_of(intr.kind).fails_closed:
            # Cancelling an approval rejects it, so only someone who may decide it may cancel it.
            denied = gate_denial(intr, run, principal, now, new_id, principal.id)
            if denied is not None:
                return denied
            final: dict[str, Any] = {
                "action": "reject",
                "decidedBy": principal.id,
                "decidedAt": iso_ms(now),
                "reason": reason,
            }
            vote: dict[str, Any] = {"voter": principal.id, "action": "reject", "at": iso_ms(now), "reason": reason}
            if who is not None:
                final["decidedBySubject"] = vote["subject"] = who
            state = dict(intr.state)
            state["votes"] = [*state.get("votes", []), vote]
            audit = [
                {
                    "principal": principal.id,
                    "action": "approval.cancelled",
                    "resource": f"{run.run_id}/{intr.node_id}",
                    "details": {"interruptId": intr.interrupt_id},
                }
            ]
            record = host_record(
                intr, new_id, decision="cancel", by=principal.id, principal=principal, action="reject", reason=reason
            )
            return settle_approval(intr, now, new_id, final, state, [], audit, "rejected", records=[record])
        record = host_record(intr, new_id, decision="cancel", by=principal.id, principal=principal, reason=reason)
        emitted = [
            resolved_event(
                intr,
                now,
                principal.id,
                None,
                reason=reason,
                cancelled=True,
                decisionRecordId=record.record_id,
                **by_subject,
            )
        ]
        return settle(
            intr,
            now,
            new_id,
            status="cancelled",
            by=principal.id,
            value=None,
            emitted=emitted,
            extra={"reason": reason, **by_subject},
            records=[record],
            result={"status": "cancelled"},
        )

    return decide


def closed_unanswered(
    intr: InterruptRecord,
    now: int,
    by: str,
    reason: str,
    by_subject: Mapping[str, str] | None = None,
    record_id: str | None = None,
) -> dict[str, Any]:
    """The ``interrupt.resolved`` of an interrupt closed with nobody answering it (no ``resumeValue``):
    ``by`` (whose recorded subject is ``by_subject``, if any) cancelled its run (the decision recorded as
    ``record_id``), or its run ended while it was open, for ``reason``."""
    who = dict(by_subject) if by_subject is not None else None
    return resolved_event(
        intr, now, by, None, reason=reason, cancelled=True, resolvedBySubject=who, decisionRecordId=record_id
    )


def cancel_request(control: Mapping[str, Any] | None) -> tuple[str, str]:
    """``(who, why)`` of a run's committed cancel, from its control requests."""
    cancel = (control or {}).get("cancel")
    if not isinstance(cancel, Mapping):
        return "system", "cancelled"
    return str(cancel.get("cancelledBy") or "system"), str(cancel.get("reason") or "cancelled")


def cancel_subject(control: Mapping[str, Any] | None) -> dict[str, str] | None:
    """The recorded subject of whoever requested a run's committed cancel (``cancelledBySubject``), if any."""
    cancel = (control or {}).get("cancel")
    found = cancel.get("cancelledBySubject") if isinstance(cancel, Mapping) else None
    return dict(found) if isinstance(found, Mapping) else None


def run_cancel_decision(
    principal: Principal, now: int, reason: str | None, new_id: NewId, *, parent_run_id: str | None = None
) -> Callable[[RunRecord, list[InterruptRecord]], Mutation]:
    """Cancel a run: close its open interrupts (each with its ``interrupt.resolved``) and hand the rest
    to its executor.

    Idempotent: a terminal (or already cancelling) run is left as it is.
    """

    def decide(run: RunRecord, open_interrupts: list[InterruptRecord]) -> Mutation:
        if principal.tenant not in (run.tenant, "*"):
            raise RunNotFoundError(f"run {run.run_id} does not exist")
        if run.terminal or run.status == "cancelling":
            return Mutation(result={"runId": run.run_id, "status": run.status, "changed": False})
        request: dict[str, Any] = {"reason": reason or "cancelled", "cancelledBy": principal.id}
        who = subject_ref(principal)
        if who is not None:
            request["cancelledBySubject"] = who
        if parent_run_id:
            request["parentRunId"] = parent_run_id
        records = [
            host_record(i, new_id, decision="cancel", by=principal.id, principal=principal, reason=request["reason"])
            for i in open_interrupts
        ]
        closed = [
            closed_unanswered(i, now, principal.id, request["reason"], who, r.record_id)
            for i, r in zip(open_interrupts, records, strict=True)
        ]
        return Mutation(
            records=records,
            events=[event_draft(new_id, now, e["type"], e["payload"], e["nodeId"]) for e in closed],
            run_status="cancelling",
            cancel_interrupts="gone" if parent_run_id else "cancelled",
            control={"cancel": request},
            wake=True,
            audit=[
                {
                    "principal": principal.id,
                    "action": "run.cancel",
                    "resource": run.run_id,
                    "details": {"reason": request["reason"], "openInterrupts": len(open_interrupts)},
                }
            ],
            result={"runId": run.run_id, "status": "cancelling", "changed": True},
        )

    return decide
