"""What every decision shares: the answer being decided, who gives it, the events and refusals.

A decision takes records (:mod:`openwop_bridge.core.records`) and an :class:`Answer` and returns a
:class:`~openwop_bridge.core.records.Mutation`; it reads no clock and makes no id of its own (both are
passed in), so the same inputs always give the same outcome.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from openwop_bridge.core import approvals, assurance
from openwop_bridge.core.auth import LINK_ISSUER, Principal, Subject, subject_ref
from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.conversation_limits import ConversationLimits
from openwop_bridge.core.decision_record import DecisionDraft, digest, principal_subject
from openwop_bridge.core.delegations import Delegation
from openwop_bridge.core.errors import (
    AnswerAfterCancelError,
    ForbiddenError,
    InterruptAlreadyResolvedError,
    InterruptGoneError,
    ValidationError,
)
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord, Mutation, RunRecord
from openwop_bridge.core.statuses import InterruptStatus

AUTH_REQUIRED_PROFILE = "openwop-interrupt-auth-required"

_SENSITIVE = re.compile(r"(secret|token|password|passwd|authorization|api[_-]?key|credential)", re.I)

NewId = Callable[[str], str]

AnswerCheck = Callable[[Mapping[str, Any], dict[str, Any]], None]

"""Checks an approval answer beyond its schema: ``(payload, vote)``; raises ``ValidationError``.

Named by an approval's ``data.answerCheck`` and registered in
:attr:`openwop_bridge.runtime.engine.Engine.answer_checks` by whoever raises such approvals (an
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
    #: The principal is the link's person, vouched for by a delegate's link alone (no key was sent).
    link_principal: bool = False
    ask_answer: str | None = None
    idempotency_key: str | None = None
    checks: Mapping[str, AnswerCheck] = field(default_factory=dict)
    ask_limits: approvals.AskLimits = field(default_factory=approvals.AskLimits)
    conversation_limits: ConversationLimits = field(default_factory=ConversationLimits)
    #: How the answer is bound to its person: ``bearer``, or ``key-bound`` once the host verified a
    #: passkey assertion over this very decision (:mod:`openwop_bridge.core.assurance`).
    assurance: str = assurance.BEARER
    #: The delegation letting this principal answer in the named voter's place, when the host found one
    #: (:mod:`openwop_bridge.core.delegations`).
    delegation: Delegation | None = None

    def __post_init__(self) -> None:
        if self.assurance not in assurance.LEVELS:
            raise ValidationError(f"unknown assurance {self.assurance!r}")


def redact(value: Any) -> Any:
    """A copy with values under sensitive-looking keys replaced by ``[redacted]``."""
    if isinstance(value, Mapping):
        return {k: ("[redacted]" if _SENSITIVE.search(str(k)) else redact(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def event_draft(new_id: NewId, now: int, type_: str, payload: dict[str, Any], node_id: str) -> EventDraft:
    """An event a decision emits, stamped with a new id and the decision's time."""
    return EventDraft(new_id("evt"), type_, payload, now, node_id=node_id)


def resolved_payload(intr: InterruptRecord, now: int, by: str, value: Any, **extra: Any) -> dict[str, Any]:
    """The ``interrupt.resolved`` payload (``extra`` fields that are None are left out)."""
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


def resolved_event(intr: InterruptRecord, now: int, by: str, value: Any, **extra: Any) -> dict[str, Any]:
    """The ``interrupt.resolved`` event a settling decision emits at the interrupt's node (its payload is
    :func:`resolved_payload`)."""
    payload = resolved_payload(intr, now, by, value, **extra)
    return {"type": "interrupt.resolved", "payload": payload, "nodeId": intr.node_id}


def closed_error(intr: InterruptRecord, surface: str) -> Exception:
    """The error for answering an interrupt that is no longer open, by how it closed and where it was answered."""
    if intr.status == "gone":
        return InterruptGoneError(
            "this interrupt was invalidated when its parent run was cancelled",
            details={"interruptId": intr.interrupt_id},
        )
    if intr.status == "cancelled":
        if surface == "token":
            return InterruptAlreadyResolvedError("this link is no longer valid: the interrupt was cancelled")
        return AnswerAfterCancelError(
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
    record = DecisionDraft(
        record_id=new_id("dec"),
        decision="denial",
        by=principal.id,
        subject=principal_subject(principal),
        interrupt_id=intr.interrupt_id,
        node_id=intr.node_id,
        kind=intr.kind,
        action=scope,
        shown_hash=digest(intr.payload),
        reason=reason,
    )
    return Mutation(events=[event], audit=[audit], records=[record], error=ForbiddenError(reason))


def resolver_id(answer: Answer) -> str:
    """Who answers: a link's subject, else the authenticated principal, else an anonymous link."""
    if answer.token_subject:
        return answer.token_subject
    if answer.principal is not None:
        return answer.principal.id
    return "signed-link"


def link_subject(person: str | None) -> Subject | None:
    """The subject of a signed link made out to ``person``: the host's link realm (API-key lane), else None."""
    return Subject(issuer=LINK_ISSUER, subject_id=person, lane="api-key") if person else None


def decider_subject(answer: Answer) -> dict[str, str] | None:
    """What a decision records beside ``decidedBy`` / ``resolvedBy``: ``{issuer, subjectId, lane}`` of the
    credential that gave ``answer`` (a token's issuer and ``sub``, a Slack click's user, a link's person).
    None for an API key (its subject is the key realm's, derived from the principal id) or an anonymous link."""
    if answer.principal is not None:
        return subject_ref(answer.principal)
    found = link_subject(answer.token_subject)
    return found.ref() if found is not None else None


def subject_clash(answer: Answer) -> str | None:
    """Why a link made out to someone may not be answered with this principal's key, if it may not."""
    subject, principal = answer.token_subject, answer.principal
    if not subject or principal is None or principal.id == subject or principal.can_act_as:
        return None
    return (
        f"this link is for {subject!r}; answering it with another principal's key needs the operator/admin role "
        "or the approvals:act-as scope"
    )


def resolution_of(now: int, by: str, value: Any, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An interrupt's resolution: ``value`` given by ``by`` at ``now``, with ``extra`` fields."""
    return {"resumeValue": value, "resolvedBy": by, "resolvedAt": iso_ms(now), **(extra or {})}


def settle(
    intr: InterruptRecord,
    now: int,
    new_id: NewId,
    *,
    status: InterruptStatus,
    by: str,
    value: Any,
    emitted: list[dict[str, Any]],
    result: dict[str, Any],
    extra: Mapping[str, Any] | None = None,
    state: dict[str, Any] | None = None,
    events: Sequence[EventDraft] = (),
    audit: Sequence[dict[str, Any]] = (),
    records: Sequence[DecisionDraft] = (),
    rebuilt: bool = False,
) -> Mutation:
    """Close an interrupt: its resolution (``value`` by ``by`` now, with ``extra`` fields and the
    ``emitted`` events it replays), the events after any earlier ``events`` of the decision, and wake the run;
    ``records`` are the decision's drafts for the decision record.

    ``emitted`` are ``{type, payload, nodeId}`` documents; each becomes an event, in order. With
    ``rebuilt`` the resolution does not keep them: the decision builds them again from the
    resolution when a replay fork needs them.
    """
    resolution = resolution_of(now, by, value, extra)
    if not rebuilt:
        resolution["emitted"] = emitted
    drafts = [event_draft(new_id, now, e["type"], e["payload"], e["nodeId"]) for e in emitted]
    return Mutation(
        interrupt_status=status,
        interrupt_state=state,
        resolution=resolution,
        resolved_at_ms=now,
        events=[*events, *drafts],
        audit=list(audit),
        records=list(records),
        wake=True,
        result=result,
    )
