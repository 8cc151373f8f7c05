"""Resolving interrupts: the decisions applied inside the resolve transaction.

Each ``*_decision`` returns a function of the current interrupt and run rows
that yields a :class:`~bridge.core.records.Mutation`. They read no clock and
touch no database: ``now`` and id minting are handed in, so the same decision
is taken wherever it runs (SQLite thread, PostgreSQL transaction, a test).

Order of checks for an answer: tenant → the interrupt's state (already
resolved, cancelled, gone) → surface rules (inspect-only token, auth-required
profile) → the answer's shape and ``resumeSchema`` → governance (role, scope,
approvers, acting for someone else) → the kind's own rules.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from bridge.core import approvals, kinds
from bridge.core.auth import Principal
from bridge.core.clock import iso_ms
from bridge.core.decisions.approval import decide_approval
from bridge.core.decisions.common import (
    AUTH_REQUIRED_PROFILE,
    Answer,
    NewId,
    closed_error,
    deny,
    event_draft,
    redact,
    resolved_payload,
    resolver_id,
    subject_clash,
)
from bridge.core.errors import (
    ForbiddenError,
    InterruptNotFoundError,
    UnauthenticatedError,
    ValidationError,
)
from bridge.core.exchange import answer_exchange, timeout_close_events
from bridge.core.records import InterruptDecision, InterruptRecord, Mutation, RunRecord, cancel_committed


def answer_decision(answer: Answer, now: int, new_id: NewId) -> InterruptDecision:
    """The decision for an answer (run-scoped or signed-link)."""

    def decide(intr: InterruptRecord, run: RunRecord) -> Mutation:
        principal = answer.principal
        if answer.surface == "run" and (principal is None or principal.tenant not in (run.tenant, "*")):
            raise InterruptNotFoundError("no interrupt at this address")
        data = intr.payload.get("data", {})
        kind = kinds.kind_of(intr.kind)
        if answer.surface == "token":
            if answer.token_intent != "resolve":
                raise ForbiddenError("this link only allows looking at the interrupt, not answering it")
            governed = kind.votes and (data.get("requiredRole") or data.get("requiredScope"))
            if data.get("profile") == AUTH_REQUIRED_PROFILE or governed:
                # A link alone names no one, so it cannot satisfy a role or scope: fail closed.
                if principal is None:
                    raise UnauthenticatedError(
                        "this interrupt needs an authenticated answer (Authorization: Bearer)"
                        + (" from a principal the gate allows" if governed else "")
                    )
                if principal.tenant not in (run.tenant, "*"):
                    raise InterruptNotFoundError("no interrupt at this address")
                principal.require("approvals:respond")
        closed_as = cancel_committed(run.status, run.control) if intr.open else None
        if closed_as:
            # The run's cancel has committed: its interrupts are closed, whatever this row still says.
            raise closed_error(replace(intr, status=closed_as), answer.surface)
        if kind.turn:
            if not intr.open and intr.status != "resolved":
                raise closed_error(intr, answer.surface)
            who = principal or Principal(id=resolver_id(answer), tenant=run.tenant)
            return answer_exchange(intr, answer.value, who, now, new_id)
        if not kind.answerable:
            raise ValidationError(kind.refusal(data))
        if not intr.open:
            previous = intr.resolution or {}
            if (
                kind.event_keyed
                and previous.get("eventId") is not None
                and previous.get("eventId") == (kind.event_id(answer.value) or answer.idempotency_key)
            ):
                return Mutation(result={"status": "resolved", "idempotent": True})
            raise closed_error(intr, answer.surface)
        if kind.votes:
            return decide_approval(intr, run, answer, now, new_id)
        kinds.validate_against(intr.payload.get("resumeSchema"), answer.value, "resumeValue")
        clash = subject_clash(answer)
        if clash is not None:
            assert principal is not None
            return deny(intr, run, principal, now, new_id, clash)
        return _resolve(intr, kind, answer, now, new_id)

    return decide


def _resolve(intr: InterruptRecord, kind: kinds.Kind, answer: Answer, now: int, new_id: NewId) -> Mutation:
    """Resolve an interrupt that takes one answer: the kind normalises it, the log may redact it."""
    by = resolver_id(answer)
    value = kind.normalize_resume(intr.payload.get("data", {}), answer.value)
    extra: dict[str, Any] = {}
    if kind.event_keyed:
        extra["eventId"] = kind.event_id(value) or answer.idempotency_key
    logged = redact(value) if kind.redacts_log else value
    resolved = resolved_payload(intr, now, by, logged)
    emitted = [{"type": "interrupt.resolved", "payload": resolved, "nodeId": intr.node_id}]
    resolution = {"resumeValue": value, "resolvedBy": by, "resolvedAt": iso_ms(now), "emitted": emitted, **extra}
    return Mutation(
        interrupt_status="resolved",
        resolution=resolution,
        resolved_at_ms=now,
        events=[event_draft(new_id, now, "interrupt.resolved", resolved, intr.node_id)],
        wake=True,
        result={"status": "resolved"},
    )


def timeout_decision(now: int, new_id: NewId) -> InterruptDecision:
    """What the timer does when an interrupt's deadline passes. Approvals never auto-approve."""

    def decide(intr: InterruptRecord, run: RunRecord) -> Mutation:
        if not intr.open or intr.deadline_ms is None or intr.deadline_ms > now:
            return Mutation(result={"status": intr.status, "fired": False})
        emitted: list[dict[str, Any]] = []
        kind = kinds.kind_of(intr.kind)
        if kind.fails_closed:
            final = approvals.timeout_value(iso_ms(now))
            emitted.append(
                {
                    "type": "approval.received",
                    "payload": {
                        "nodeId": intr.node_id,
                        "action": "timeout",
                        "decidedBy": "system:timeout",
                        "decidedAt": iso_ms(now),
                    },
                    "nodeId": intr.node_id,
                }
            )
            resolved = resolved_payload(
                intr,
                now,
                "system:timeout",
                final,
                action="timeout",
                decision="rejected",
                outcome="rejected",
                reason="timeout",
            )
        else:
            final = None
            resolved = resolved_payload(intr, now, "system:timeout", None, reason="timeout")
        emitted.append({"type": "interrupt.resolved", "payload": resolved, "nodeId": intr.node_id})
        if kind.turn:
            emitted += timeout_close_events(intr, now, new_id)
        resolution = {
            "resumeValue": final,
            "resolvedBy": "system:timeout",
            "resolvedAt": iso_ms(now),
            "reason": "timeout",
            "emitted": emitted,
        }
        if final is not None:
            resolution.update({"action": "timeout", "decision": "rejected"})
        return Mutation(
            interrupt_status="expired",
            resolution=resolution,
            resolved_at_ms=now,
            events=[event_draft(new_id, now, e["type"], e["payload"], e["nodeId"]) for e in emitted],
            wake=True,
            result={"status": "expired", "fired": True},
        )

    return decide
