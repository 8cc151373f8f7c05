"""Answering an interrupt: the answer prepared against its payload, then decided on the current rows.

:func:`prepare_answer` does everything that depends only on the interrupt's payload (its
kind, data and ``resumeSchema``, which never change once it is created) and the answer:
schema validation, normalisation and the gate's answer check. It runs before the write
transaction, not on the store's writer thread. :func:`answer_decision` returns a function of
the current interrupt and run rows that yields a :class:`~openwop_bridge.core.records.Mutation`; it
reads no clock and touches no database: ``now`` and id minting are handed in, so the same
decision is taken wherever it runs (SQLite thread, PostgreSQL transaction, a test).

Order of checks for an answer: tenant → the interrupt's state (already
resolved, cancelled, gone) → surface rules (inspect-only token, auth-required
profile) → the answer's shape and ``resumeSchema`` → governance (role, scope,
approvers, acting for someone else) → the kind's own rules. A prepared answer keeps
its errors, and the decision raises each where its check stands in this order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from openwop_bridge.core import kinds
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.decisions import recording
from openwop_bridge.core.decisions.approval import checked_answer, decide_approval
from openwop_bridge.core.decisions.common import (
    AUTH_REQUIRED_PROFILE,
    Answer,
    NewId,
    closed_error,
    decider_subject,
    deny,
    link_subject,
    redact,
    resolved_event,
    resolver_id,
    settle,
    subject_clash,
)
from openwop_bridge.core.decisions.exchange import PreparedExchange, decide_exchange, exchange_index, prepare_exchange
from openwop_bridge.core.errors import (
    ForbiddenError,
    InterruptNotFoundError,
    UnauthenticatedError,
    ValidationError,
)
from openwop_bridge.core.records import InterruptDecision, InterruptRecord, Mutation, RunRecord, cancel_committed


@dataclass(frozen=True, slots=True)
class PreparedAnswer:
    """An answer checked against one interrupt's payload, before the transaction.

    ``value`` is the answer's normal form: an :class:`~openwop_bridge.core.approvals.ApprovalAnswer`,
    a kind's normalised resume value, or a :class:`~openwop_bridge.core.decisions.exchange.PreparedExchange`.
    ``schema_error`` (the ``resumeSchema``, and for an approval its normal form and answer check)
    and ``value_error`` (a kind's normalisation) are raised by the decision in their place.
    """

    interrupt_id: str
    answer: Answer
    now: int
    value: Any = None
    schema_error: Exception | None = None
    value_error: Exception | None = None

    def fits(self, intr: InterruptRecord, answer: Answer, now: int) -> bool:
        """Whether this was prepared for this answer, at this time, to this interrupt (and exchange turn)."""
        if self.interrupt_id != intr.interrupt_id or self.answer is not answer or self.now != now:
            return False
        return not isinstance(self.value, PreparedExchange) or self.value.index == exchange_index(intr)


def prepare_answer(record: InterruptRecord, answer: Answer, now: int) -> PreparedAnswer:
    """Validate and normalise an answer against an interrupt's payload; pure, and never raises.

    ``now`` is the decision's time (an approval's answer check sees the vote it would cast, an
    exchange's turn its timestamp).
    """
    key = (record.interrupt_id, answer, now)
    kind = kinds.kind_of(record.kind)
    if kind.turn:
        who = answer.principal or Principal(
            id=resolver_id(answer), tenant=record.tenant, subject=link_subject(answer.token_subject)
        )
        return PreparedAnswer(*key, value=prepare_exchange(record, answer.value, who, now, answer.conversation_limits))
    if not kind.answerable:
        return PreparedAnswer(*key)
    try:
        if kind.votes:
            return PreparedAnswer(*key, value=checked_answer(record, answer, now))
        kinds.validate_against(record.payload.get("resumeSchema"), answer.value, "resumeValue")
    except Exception as exc:  # raised by the decision, in its place
        return PreparedAnswer(*key, schema_error=exc)
    try:
        return PreparedAnswer(*key, value=kind.normalize_resume(record.payload.get("data", {}), answer.value))
    except Exception as exc:  # raised by the decision, after the governance checks
        return PreparedAnswer(*key, value_error=exc)


def answer_decision(
    answer: Answer, now: int, new_id: NewId, prepared: PreparedAnswer | None = None
) -> InterruptDecision:
    """The decision for an answer (run-scoped or signed-link), on the answer ``prepared`` for
    the interrupt it finds (prepared again, inside the decision, when it finds another one)."""

    def decide(intr: InterruptRecord, run: RunRecord) -> Mutation:
        _surface_rules(intr, run, answer)
        closed_as = cancel_committed(run.status, run.control) if intr.open else None
        if closed_as:
            # The run's cancel has committed: its interrupts are closed, whatever this row still says.
            raise closed_error(replace(intr, status=closed_as), answer.surface)
        ready = prepared if prepared is not None and prepared.fits(intr, answer, now) else None
        ready = ready or prepare_answer(intr, answer, now)
        kind = kinds.kind_of(intr.kind)
        if kind.turn:
            if not intr.open and intr.status != "resolved":
                raise closed_error(intr, answer.surface)
            turn = ready.value
            record = recording.answer_record(
                intr, answer, new_id, decision="turn", by=turn.by or resolver_id(answer), action=turn.operation
            )
            return decide_exchange(intr, turn, new_id, record)
        if not kind.answerable:
            raise ValidationError(kind.refusal(intr.payload.get("data", {})))
        if not intr.open:
            previous = intr.resolution or {}
            if (
                kind.event_keyed
                and previous.get("eventId") is not None
                and previous.get("eventId") == (kind.event_id(answer.value) or answer.idempotency_key)
            ):
                return Mutation(result={"status": "resolved", "idempotent": True})
            raise closed_error(intr, answer.surface)
        if ready.schema_error is not None:
            raise ready.schema_error
        if kind.votes:
            return decide_approval(intr, run, answer, ready.value, now, new_id)
        clash = subject_clash(answer)
        if clash is not None:
            assert answer.principal is not None
            return deny(intr, run, answer.principal, now, new_id, clash)
        if ready.value_error is not None:
            raise ready.value_error
        return _resolve(intr, kind, answer, ready.value, now, new_id)

    return decide


def _governed(intr: InterruptRecord) -> bool:
    data = intr.payload.get("data", {})
    return bool(kinds.kind_of(intr.kind).votes and (data.get("requiredRole") or data.get("requiredScope")))


def link_alone_answers(intr: InterruptRecord) -> bool:
    """Whether a signed link, without a key, may answer ``intr``: not when it needs an authenticated answer
    (its profile) or a gate's role or scope."""
    return intr.payload.get("data", {}).get("profile") != AUTH_REQUIRED_PROFILE and not _governed(intr)


def _surface_rules(intr: InterruptRecord, run: RunRecord, answer: Answer) -> None:
    """The tenant, and what a signed link may do: look only, or answer a gate that needs someone named."""
    principal = answer.principal
    if answer.surface == "run" and (principal is None or principal.tenant not in (run.tenant, "*")):
        raise InterruptNotFoundError("no interrupt at this address")
    if answer.surface != "token":
        return
    if answer.token_intent != "resolve":
        raise ForbiddenError("this link only allows looking at the interrupt, not answering it")
    if not link_alone_answers(intr):
        # A link alone names no one, so it cannot satisfy a role or scope: fail closed.
        if principal is None or answer.link_principal:
            raise UnauthenticatedError(
                "this interrupt needs an authenticated answer (Authorization: Bearer)"
                + (" from a principal the gate allows" if _governed(intr) else "")
            )
        if principal.tenant not in (run.tenant, "*"):
            raise InterruptNotFoundError("no interrupt at this address")
        principal.require("approvals:respond")


def _resolve(intr: InterruptRecord, kind: kinds.Kind, answer: Answer, value: Any, now: int, new_id: NewId) -> Mutation:
    """Resolve an interrupt that takes one answer (``value``, normalised by its kind); the log may redact it."""
    by = resolver_id(answer)
    extra: dict[str, Any] = {}
    who = decider_subject(answer)
    if who is not None:
        extra["resolvedBySubject"] = who
    if kind.event_keyed:
        extra["eventId"] = kind.event_id(value) or answer.idempotency_key
    logged = redact(value) if kind.redacts_log else value
    record = recording.answer_record(intr, answer, new_id, decision="answer", by=by)
    emitted = [resolved_event(intr, now, by, logged, resolvedBySubject=who, decisionRecordId=record.record_id)]
    return settle(
        intr,
        now,
        new_id,
        status="resolved",
        by=by,
        value=value,
        emitted=emitted,
        extra=extra,
        records=[record],
        result={"status": "resolved"},
    )
