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

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bridge.core import approvals, kinds
from bridge.core.auth import Principal
from bridge.core.clock import iso_ms
from bridge.core.errors import (
    ForbiddenError,
    InterruptAlreadyResolvedError,
    InterruptCancelledStateError,
    InterruptGoneError,
    InterruptNotFoundError,
    UnauthenticatedError,
    ValidationError,
)
from bridge.core.events import EventDraft
from bridge.core.exchange import answer_exchange, timeout_close_events
from bridge.core.records import InterruptDecision, InterruptRecord, Mutation, RunRecord, cancel_committed

AUTH_REQUIRED_PROFILE = "openwop-interrupt-auth-required"
_SENSITIVE = re.compile(r"(secret|token|password|passwd|authorization|api[_-]?key|credential)", re.I)

NewId = Callable[[str], str]


AnswerCheck = Callable[[Mapping[str, Any], dict[str, Any]], None]
"""Checks an approval answer beyond its schema: ``(payload, vote)``; raises ``ValidationError``.

Named by an approval's ``data.answerCheck`` and registered in
:attr:`bridge.runtime.engine.Engine.answer_checks` by whoever raises such approvals (an
adapter that knows what its node will do with the answer), so a bad answer is a
400 while the interrupt stays open rather than a failure after it was accepted.
"""


@dataclass(frozen=True, slots=True)
class Answer:
    """One attempt to answer an interrupt."""

    principal: Principal | None  # None: an anonymous signed link
    value: Any
    surface: str = "run"  # "run" | "token"
    token_subject: str | None = None
    token_intent: str | None = None
    ask_answer: str | None = None
    idempotency_key: str | None = None
    checks: Mapping[str, AnswerCheck] = field(default_factory=dict)
    ask_limits: approvals.AskLimits = field(default_factory=approvals.AskLimits)


def redact(value: Any) -> Any:
    """A copy with values under sensitive-looking keys replaced by ``[redacted]``."""
    if isinstance(value, Mapping):
        return {k: ("[redacted]" if _SENSITIVE.search(str(k)) else redact(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def event_draft(new_id: NewId, now: int, type_: str, payload: dict[str, Any], node_id: str) -> EventDraft:
    return EventDraft(new_id("evt"), type_, payload, now, node_id=node_id)


def resolved_payload(intr: InterruptRecord, now: int, by: str, value: Any, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "nodeId": intr.node_id,
        "interruptId": intr.interrupt_id,
        "kind": intr.kind,
        "resumeValue": value,
        "resolvedAt": iso_ms(now),
        "resolvedBy": by,
    }
    payload.update({k: v for k, v in extra.items() if v is not None})
    return payload


def closed_error(intr: InterruptRecord, surface: str) -> Exception:
    if intr.status == "gone":
        return InterruptGoneError(
            "this interrupt was invalidated when its parent run was cancelled",
            details={"interruptId": intr.interrupt_id},
        )
    if intr.status == "cancelled":
        if surface == "token":
            return InterruptAlreadyResolvedError("this link is no longer valid: the interrupt was cancelled")
        return InterruptCancelledStateError(
            "the run was cancelled while this interrupt was pending", details={"interruptId": intr.interrupt_id}
        )
    return InterruptAlreadyResolvedError(
        "this interrupt was already resolved", details={"interruptId": intr.interrupt_id, "status": intr.status}
    )


def deny(
    intr: InterruptRecord,
    run: RunRecord,
    principal: Principal,
    now: int,
    new_id: NewId,
    reason: str,
    *,
    scope: str = "approvals:respond",
) -> Mutation:
    """Refuse with 403 but keep the audit trail (``authorization.decided {allowed:false}``)."""
    event = event_draft(
        new_id,
        now,
        "authorization.decided",
        {
            "principal": principal.id,
            "action": scope,
            "resource": f"{run.run_id}/{intr.node_id}",
            "allowed": False,
            "reason": reason,
        },
        intr.node_id,
    )
    audit = {
        "principal": principal.id,
        "action": "authorization.denied",
        "resource": f"{run.run_id}/{intr.node_id}",
        "details": {"interruptId": intr.interrupt_id, "reason": reason},
    }
    return Mutation(events=[event], audit=[audit], error=ForbiddenError(reason))


def gate_denial(
    intr: InterruptRecord, run: RunRecord, principal: Principal, now: int, new_id: NewId, voter: str | None = None
) -> Mutation | None:
    """The refusal when this principal may not decide this approval gate (role, scope and,
    given the ``voter``, ``approversList``), else None."""
    data = intr.payload.get("data", {})
    role = data.get("requiredRole")
    scope = data.get("requiredScope")
    approvers = list(data.get("approversList") or [])
    if role and not principal.has_role(str(role)):
        return deny(intr, run, principal, now, new_id, f"approving this gate needs the {role!r} role")
    if scope and not principal.has_scope(str(scope)):
        return deny(
            intr, run, principal, now, new_id, f"approving this gate needs the {scope!r} scope", scope=str(scope)
        )
    if voter is not None and approvers and voter not in approvers:
        return deny(intr, run, principal, now, new_id, f"{voter!r} is not among this gate's approvers")
    return None


def _resolver_id(answer: Answer) -> str:
    """Who answers: a link's subject, else the authenticated principal, else an anonymous link."""
    if answer.token_subject:
        return answer.token_subject
    if answer.principal is not None:
        return answer.principal.id
    return "signed-link"


def _subject_clash(answer: Answer) -> str | None:
    """Why a link made out to someone may not be answered with this principal's key, if it may not."""
    subject, principal = answer.token_subject, answer.principal
    if not subject or principal is None or principal.id == subject or principal.can_act_as:
        return None
    return (
        f"this link is for {subject!r}; answering it with another principal's key needs the operator/admin role "
        "or the approvals:act-as scope"
    )


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
            who = principal or Principal(id=_resolver_id(answer), tenant=run.tenant)
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
            return _approval(intr, run, answer, now, new_id)
        kinds.validate_against(intr.payload.get("resumeSchema"), answer.value, "resumeValue")
        clash = _subject_clash(answer)
        if clash is not None:
            assert principal is not None
            return deny(intr, run, principal, now, new_id, clash)
        return _resolve(intr, kind, answer, now, new_id)

    return decide


def _resolve(intr: InterruptRecord, kind: kinds.Kind, answer: Answer, now: int, new_id: NewId) -> Mutation:
    """Resolve an interrupt that takes one answer: the kind normalises it, the log may redact it."""
    by = _resolver_id(answer)
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


def _approval(intr: InterruptRecord, run: RunRecord, answer: Answer, now: int, new_id: NewId) -> Mutation:
    data = intr.payload["data"]
    raw = answer.value
    schema = intr.payload.get("resumeSchema")
    if schema:
        kinds.validate_against(schema, raw, "resumeValue")
    normalized = approvals.normalize_answer(data, raw)
    check_name = data.get("answerCheck")
    if check_name and normalized.action != "ask":
        check = answer.checks.get(str(check_name))
        if check is None:
            raise ValidationError(
                f"answers to this interrupt are checked by {check_name!r}, which this host has not loaded"
            )
        check(intr.payload, normalized.as_vote(_resolver_id(answer), iso_ms(now)))
    principal = answer.principal
    acting = principal.id if principal else _resolver_id(answer)
    named = normalized.voter
    if answer.token_subject:  # the link names its voter, and no one else
        if named and named != answer.token_subject:
            raise ForbiddenError(f"this link votes as {answer.token_subject!r} and cannot name anyone else")
        named = answer.token_subject
    voter = acting
    if named and named != acting:
        if principal is None or not principal.can_act_as:
            if principal is None:
                raise ForbiddenError("a signed link cannot vote on behalf of someone else")
            return deny(
                intr,
                run,
                principal,
                now,
                new_id,
                _subject_clash(answer)
                or "this key may not answer on behalf of another principal (needs the operator/admin role "
                "or the approvals:act-as scope)",
            )
        voter = named
    if principal is not None:
        denied = gate_denial(intr, run, principal, now, new_id, voter)  # role, scope, approvers
        if denied is not None:
            return denied
    elif data.get("approversList") and voter not in data["approversList"]:
        raise ForbiddenError(f"{voter!r} is not among this gate's approvers")
    events: list[EventDraft] = []
    audit: list[dict[str, Any]] = []
    gate = str(data.get("gateId") or intr.exec_node)
    resource = f"{run.run_id}/{intr.node_id}"
    state = dict(intr.state)
    if normalized.override:
        override = data.get("override") or {}
        needed = override.get("requiredRole") if isinstance(override, Mapping) else None
        if not needed or principal is None or not principal.has_role(str(needed)):
            if principal is None:
                raise ForbiddenError("a signed link cannot take the override path")
            return deny(
                intr,
                run,
                principal,
                now,
                new_id,
                "this gate has no override path" if not needed else f"the override needs the {needed!r} role",
            )
    if normalized.action == "ask":
        assert normalized.question is not None
        reply = answer.ask_limits.clip_answer(answer.ask_answer or "")
        # Bounded before anything is stored: a refusal leaves the interrupt as it was.
        answer.ask_limits.check_room(state.get("askExchanges", []), voter, normalized.question, reply)
        exchange = {
            "question": normalized.question,
            "answer": reply,
            "askedBy": voter,
            "at": iso_ms(now),
        }
        asks = [*state.get("askExchanges", []), exchange]
        state["askExchanges"] = asks
        events.append(
            event_draft(
                new_id,
                now,
                "bridge.approval.asked",
                {"nodeId": intr.node_id, "interruptId": intr.interrupt_id, **exchange},
                intr.node_id,
            )
        )
        return Mutation(
            interrupt_state=state, events=events, result={"status": "pending", "ask": exchange, "askExchanges": asks}
        )
    votes = list(state.get("votes", []))
    bypass = bool(normalized.override and data.get("overrideBypassesQuorum"))
    if bypass:
        # An override that closes the gate replaces the principal's earlier vote, if any.
        votes = [v for v in votes if v["voter"] != voter]
    if any(v["voter"] == voter for v in votes):
        audit.append(
            {
                "principal": voter,
                "action": "approval.duplicate-vote",
                "resource": resource,
                "details": {"interruptId": intr.interrupt_id, "action": normalized.action, "actingPrincipal": acting},
            }
        )
        events.append(
            event_draft(
                new_id,
                now,
                "bridge.approval.duplicate-vote",
                {"nodeId": intr.node_id, "interruptId": intr.interrupt_id, "voter": voter, "action": normalized.action},
                intr.node_id,
            )
        )
        t = approvals.tally(data, votes)
        return Mutation(
            events=events, audit=audit, result={"status": "pending", "duplicate": True, "votes": t.progress()}
        )
    if normalized.override:
        # Logged only when it takes effect; the principal is whoever holds the override role.
        events.append(
            event_draft(
                new_id,
                now,
                "approval.overridden",
                {"gateId": gate, "principal": acting, "reason": str(normalized.reason)},
                intr.node_id,
            )
        )
        details: dict[str, Any] = {"interruptId": intr.interrupt_id, "reason": normalized.reason}
        if voter != acting:
            details["onBehalfOf"] = voter
        audit.append({"principal": acting, "action": "approval.overridden", "resource": resource, "details": details})
    vote = normalized.as_vote(voter, iso_ms(now))
    if acting != voter:
        vote["actingPrincipal"] = acting
    votes.append(vote)
    t = approvals.tally(data, votes, bypass=bypass)
    why = normalized.reason or normalized.feedback or (normalized.refine_feedback or {}).get("text")
    if normalized.action in approvals.ACCEPTING:
        events.append(
            event_draft(
                new_id,
                now,
                "approval.granted",
                {"gateId": gate, "principal": voter, "quorumProgress": {"granted": t.accepts, "required": t.required}},
                intr.node_id,
            )
        )
    else:
        rejected: dict[str, Any] = {"gateId": gate, "principal": voter}
        if why:
            rejected["reason"] = str(why)
        events.append(event_draft(new_id, now, "approval.rejected", rejected, intr.node_id))
    vote_details: dict[str, Any] = {
        "interruptId": intr.interrupt_id,
        "progress": t.progress(),
        "actingPrincipal": acting,
    }
    if why:
        vote_details["reason"] = str(why)
    audit.append(
        {
            "principal": voter,
            "action": f"approval.vote.{normalized.action}",
            "resource": resource,
            "details": vote_details,
        }
    )
    state["votes"] = votes
    if t.outcome == "pending":
        return Mutation(
            interrupt_state=state, events=events, audit=audit, result={"status": "pending", "votes": t.progress()}
        )
    final = approvals.final_value(t, vote, iso_ms(now))
    return settle_approval(intr, now, new_id, final, state, events, audit, t.outcome)


def settle_approval(
    intr: InterruptRecord,
    now: int,
    new_id: NewId,
    final: dict[str, Any],
    state: dict[str, Any],
    events: list[EventDraft],
    audit: list[dict[str, Any]],
    outcome: str,
) -> Mutation:
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
    decision = "approved" if outcome == "accepted" else "rejected"
    resolved = resolved_payload(
        intr,
        now,
        final["decidedBy"],
        final,
        action=final["action"],
        decision=decision,
        reason=final.get("reason") if final["action"] == "timeout" else None,
    )
    emitted: list[dict[str, Any]] = [
        {"type": "approval.received", "payload": received, "nodeId": intr.node_id},
        {"type": "interrupt.resolved", "payload": resolved, "nodeId": intr.node_id},
    ]
    events = [*events, *(event_draft(new_id, now, e["type"], e["payload"], intr.node_id) for e in emitted)]
    resolution = {
        "resumeValue": final,
        "resolvedBy": final["decidedBy"],
        "resolvedAt": iso_ms(now),
        "action": final["action"],
        "decision": decision,
        "emitted": emitted,
    }
    return Mutation(
        interrupt_status="resolved",
        interrupt_state=state,
        resolution=resolution,
        resolved_at_ms=now,
        events=events,
        audit=audit,
        wake=True,
        result={"status": "resolved", "action": final["action"], "decision": decision},
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
