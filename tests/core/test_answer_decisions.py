"""Answers to the other kinds, timeouts and cancels, decided on records alone."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_bridge.core.decisions.answer import answer_decision
from openwop_bridge.core.decisions.cancel import cancel_decision, run_cancel_decision
from openwop_bridge.core.decisions.common import AUTH_REQUIRED_PROFILE, Answer
from openwop_bridge.core.decisions.timeout import timeout_decision
from openwop_bridge.core.errors import (
    AnswerAfterCancelError,
    CorrelationMismatchError,
    ForbiddenError,
    InterruptAlreadyResolvedError,
    InterruptGoneError,
    InterruptNotFoundError,
    RunNotFoundError,
    UnauthenticatedError,
    ValidationError,
)
from openwop_bridge.core.records import InterruptRecord, Mutation, RunRecord
from tests.core.build import NOW, applied, approval_data, event, ids, interrupt, principal, run, types

ALICE = principal("alice")
QUESTIONS = {
    "questions": [
        {"id": "env", "question": "Which environment?", "schema": {"enum": ["staging", "prod"]}},
        {"id": "why", "question": "Why?"},
    ]
}
CORRELATION = {"eventType": "payment.settled", "correlation": {"orderId": "o-7"}}


def answer(
    record: InterruptRecord, value: Any, who: Any = ALICE, on: RunRecord | None = None, **extra: Any
) -> Mutation:
    return answer_decision(Answer(who, value, **extra), NOW, ids())(record, on or run("waiting-input"))


# --- clarification -----------------------------------------------------------------


@pytest.mark.parametrize(
    "answers",
    [
        [{"id": "why", "answer": "load"}, {"id": "env", "answer": "prod"}],
        {"env": "prod", "why": "load"},
    ],
)
def test_clarification_takes_the_list_and_the_map_form(answers: Any) -> None:
    m = answer(interrupt("clarification", QUESTIONS), {"answers": answers})
    assert m.interrupt_status == "resolved" and m.wake
    assert types(m) == ["interrupt.resolved"]
    normalised = {"answers": [{"id": "env", "answer": "prod"}, {"id": "why", "answer": "load"}]}
    assert m.resolution is not None and m.resolution["resumeValue"] == normalised  # question order
    assert event(m, "interrupt.resolved")["resumeValue"] == normalised
    assert event(m, "interrupt.resolved")["resolvedBy"] == "alice"
    assert m.result == {"status": "resolved"}


@pytest.mark.parametrize(
    ("value", "details"),
    [
        ({"answers": {"env": "prod"}}, {"unknownQuestionIds": [], "unansweredQuestionIds": ["why"]}),
        (
            {"answers": {"env": "prod", "why": "x", "who": "me"}},
            {"unknownQuestionIds": ["who"], "unansweredQuestionIds": []},
        ),
    ],
)
def test_clarification_names_unknown_and_missing_ids(value: Any, details: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as caught:
        answer(interrupt("clarification", QUESTIONS), value)
    assert caught.value.details == details


@pytest.mark.parametrize(
    "value",
    [
        {"answers": {"env": "moon", "why": "x"}},  # the question's own schema
        {"answers": [{"id": "env"}]},
        {"answers": "prod"},
        ["prod"],
    ],
)
def test_clarification_refuses_bad_shapes_and_schema_misses(value: Any) -> None:
    with pytest.raises(ValidationError):
        answer(interrupt("clarification", QUESTIONS), value)


# --- external events ---------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        {"orderId": "o-7", "eventId": "e1"},
        {"correlation": {"orderId": "o-7"}, "eventId": "e1"},
        {"eventPayload": {"orderId": "o-7", "amount": 3}, "eventId": "e1"},
    ],
)
def test_an_event_matching_the_correlation_resolves(value: Any) -> None:
    m = answer(interrupt("external-event", CORRELATION), value, on=run("waiting-external"))
    assert m.interrupt_status == "resolved"
    assert m.resolution is not None and m.resolution["eventId"] == "e1"
    assert m.resolution["resumeValue"] == value


@pytest.mark.parametrize("value", [{"orderId": "o-8"}, {"correlation": {"order": "o-7"}}, "o-7", {}])
def test_an_event_of_another_correlation_leaves_the_run_waiting(value: Any) -> None:
    with pytest.raises(CorrelationMismatchError) as caught:
        answer(interrupt("external-event", CORRELATION), value)
    assert caught.value.details == {"expected": {"orderId": "o-7"}}


def test_an_events_secrets_stay_out_of_the_log_but_reach_the_node() -> None:
    value = {"orderId": "o-7", "apiKey": "s3cret", "nested": {"password": "p"}}
    m = answer(interrupt("external-event", CORRELATION), value, idempotency_key="idem-1")
    logged = event(m, "interrupt.resolved")["resumeValue"]
    assert logged == {"orderId": "o-7", "apiKey": "[redacted]", "nested": {"password": "[redacted]"}}
    assert m.resolution is not None and m.resolution["resumeValue"] == value
    assert m.resolution["eventId"] == "idem-1"  # no id in the body: the idempotency key


def test_a_redelivered_event_is_idempotent_and_another_is_refused() -> None:
    record = interrupt("external-event", CORRELATION)
    done = applied(record, answer(record, {"orderId": "o-7", "id": 42}))
    again = answer(done, {"orderId": "o-7", "id": 42})
    assert again.result == {"status": "resolved", "idempotent": True}
    assert not again.events and again.interrupt_status is None
    with pytest.raises(InterruptAlreadyResolvedError):
        answer(done, {"orderId": "o-7", "id": 43})


# --- custom and low-confidence -----------------------------------------------------


def test_a_custom_answer_is_checked_against_its_resume_schema() -> None:
    record = interrupt("custom", {"customKind": "budget"}, resumeSchema={"type": "integer", "minimum": 0})
    with pytest.raises(ValidationError):
        answer(record, -1)
    m = answer(record, 5)
    assert m.resolution is not None and m.resolution["resumeValue"] == 5


def test_a_link_for_someone_answered_with_another_key_is_denied() -> None:
    record = interrupt("custom", {"customKind": "budget"})
    bob = principal("bob", scopes=("approvals:respond",))
    m = answer(record, 1, bob, surface="token", token_intent="resolve", token_subject="carol")
    assert isinstance(m.error, ForbiddenError) and "this link is for 'carol'" in str(m.error)
    assert types(m) == ["authorization.decided"] and m.interrupt_status is None
    linked = answer(record, 1, None, surface="token", token_intent="resolve", token_subject="carol")
    assert linked.resolution is not None and linked.resolution["resolvedBy"] == "carol"
    anonymous = answer(record, 1, None, surface="token", token_intent="resolve")
    assert anonymous.resolution is not None and anonymous.resolution["resolvedBy"] == "signed-link"


def test_an_auth_required_profile_refuses_a_bare_link() -> None:
    record = interrupt("custom", {"customKind": "x", "profile": AUTH_REQUIRED_PROFILE})
    with pytest.raises(UnauthenticatedError):
        answer(record, 1, None, surface="token", token_intent="resolve")
    with pytest.raises(InterruptNotFoundError):
        answer(record, 1, principal("olga", tenant="other"), surface="token", token_intent="resolve")
    assert answer(record, 1, ALICE, surface="token", token_intent="resolve").interrupt_status == "resolved"


def test_a_low_confidence_answer_passes_through() -> None:
    data = {"agentId": "a", "observed": 0.2, "threshold": 0.5, "decision": {"x": 1}}
    m = answer(interrupt("low-confidence", data), {"action": "accept"})
    assert m.resolution is not None and m.resolution["resumeValue"] == {"action": "accept"}


# --- timeouts ----------------------------------------------------------------------


def timeout(record: InterruptRecord, at: int = NOW) -> Mutation:
    return timeout_decision(at, ids())(record, run())


def test_an_approval_times_out_as_a_rejection_never_an_approval() -> None:
    m = timeout(interrupt("approval", approval_data(requiredApprovals=2), deadline_ms=NOW))
    assert m.interrupt_status == "expired" and m.wake
    assert types(m) == ["approval.received", "interrupt.resolved"]
    assert event(m, "approval.received")["action"] == "timeout"
    resolved = event(m, "interrupt.resolved")
    assert (resolved["decision"], resolved["outcome"], resolved["reason"]) == ("rejected", "rejected", "timeout")
    assert m.resolution is not None
    assert m.resolution["resumeValue"]["decidedBy"] == "system:timeout"
    assert (m.resolution["action"], m.resolution["decision"]) == ("timeout", "rejected")
    assert m.result == {"status": "expired", "fired": True}


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("clarification", QUESTIONS),
        ("external-event", CORRELATION),
        ("custom", {"customKind": "x"}),
        ("low-confidence", {"agentId": "a", "observed": 0.1, "threshold": 0.5}),
    ],
)
def test_other_kinds_time_out_with_no_value(kind: str, data: dict[str, Any]) -> None:
    m = timeout(interrupt(kind, data, deadline_ms=NOW - 1))
    assert m.interrupt_status == "expired"
    assert types(m) == ["interrupt.resolved"]
    assert event(m, "interrupt.resolved")["resumeValue"] is None
    assert m.resolution is not None and m.resolution["resumeValue"] is None and "action" not in m.resolution


def test_a_timed_out_exchange_closes_its_conversation_with_a_system_turn() -> None:
    data = {"conversationId": "c1", "turnIndex": 3, "prompt": "?"}
    m = timeout(interrupt("conversation.exchange", data, deadline_ms=NOW))
    assert types(m) == ["interrupt.resolved", "conversation.closed"]
    closed = event(m, "conversation.closed")
    assert closed["outcome"] is None and closed["turnIndex"] == 3
    assert closed["finalTurn"]["messageId"] == "c1:3:system"
    assert closed["finalTurn"]["content"] == "conversation timed out"


@pytest.mark.parametrize(
    "record",
    [
        interrupt("custom", {"customKind": "x"}, deadline_ms=NOW + 1),
        interrupt("custom", {"customKind": "x"}),
        interrupt("custom", {"customKind": "x"}, deadline_ms=NOW - 1, status="resolved"),
    ],
    ids=["early", "no-deadline", "closed"],
)
def test_a_timer_that_is_not_due_changes_nothing(record: InterruptRecord) -> None:
    m = timeout(record)
    assert m.interrupt_status is None and not m.events and not m.wake
    assert m.result == {"status": record.status, "fired": False}


# --- cancelling one interrupt ------------------------------------------------------


def cancel(record: InterruptRecord, who: Any = ALICE, on: RunRecord | None = None) -> Mutation:
    return cancel_decision(who, NOW, ids(), reason="no longer needed")(record, on or run())


def test_cancelling_an_approval_rejects_it_in_the_cancellers_name() -> None:
    record = interrupt(
        "approval", approval_data(requiredApprovals=2), state={"votes": [{"voter": "b", "action": "accept"}]}
    )
    m = cancel(record)
    assert m.interrupt_status == "resolved"
    assert types(m) == ["approval.received", "interrupt.resolved"]
    assert m.resolution is not None
    assert m.resolution["resumeValue"] == {
        "action": "reject",
        "decidedBy": "alice",
        "decidedAt": m.resolution["resolvedAt"],
        "reason": "no longer needed",
    }
    assert m.interrupt_state is not None and [v["voter"] for v in m.interrupt_state["votes"]] == ["b", "alice"]
    assert [a["action"] for a in m.audit] == ["approval.cancelled"]


def test_cancelling_a_governed_approval_needs_the_right_to_decide_it() -> None:
    m = cancel(interrupt("approval", approval_data(approversList=["bob"])))
    assert isinstance(m.error, ForbiddenError) and m.interrupt_status is None
    assert types(m) == ["authorization.decided"]


def test_cancelling_another_kind_marks_it_cancelled() -> None:
    m = cancel(interrupt("clarification", QUESTIONS))
    assert m.interrupt_status == "cancelled" and m.wake
    resolved = event(m, "interrupt.resolved")
    assert resolved["cancelled"] is True and resolved["reason"] == "no longer needed"
    assert m.resolution is not None and m.resolution["resumeValue"] is None


def test_cancelling_a_closed_or_foreign_interrupt_is_refused() -> None:
    with pytest.raises(InterruptAlreadyResolvedError):
        cancel(interrupt("custom", {"customKind": "x"}, status="resolved"))
    with pytest.raises(InterruptGoneError):
        cancel(interrupt("custom", {"customKind": "x"}, status="gone"))
    with pytest.raises(AnswerAfterCancelError):
        cancel(interrupt("custom", {"customKind": "x"}, status="cancelled"))
    with pytest.raises(InterruptNotFoundError):
        cancel(interrupt("custom", {"customKind": "x"}), principal("olga", tenant="other"))


# --- cancelling a run --------------------------------------------------------------


def test_cancelling_a_run_asks_its_executor_and_closes_its_interrupts() -> None:
    open_ = [interrupt("custom", {"customKind": "x"})]
    m = run_cancel_decision(ALICE, NOW, "stop", ids())(run(), open_)
    assert (m.run_status, m.cancel_interrupts, m.wake) == ("cancelling", "cancelled", True)
    assert m.control == {"cancel": {"reason": "stop", "cancelledBy": "alice"}}
    assert m.audit[0]["action"] == "run.cancel" and m.audit[0]["details"]["openInterrupts"] == 1
    assert m.result == {"runId": "run-1", "status": "cancelling", "changed": True}
    (closed,) = m.events
    assert closed.type == "interrupt.resolved" and closed.node_id == open_[0].node_id
    assert closed.payload["interruptId"] == open_[0].interrupt_id and closed.payload["resumeValue"] is None
    assert (closed.payload["resolvedBy"], closed.payload["reason"]) == ("alice", "stop")


def test_a_parents_cancel_leaves_its_childs_interrupts_gone() -> None:
    m = run_cancel_decision(ALICE, NOW, None, ids(), parent_run_id="parent")(run(), [])
    assert m.cancel_interrupts == "gone"
    assert m.control == {"cancel": {"reason": "cancelled", "cancelledBy": "alice", "parentRunId": "parent"}}


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled", "cancelling"])
def test_cancelling_a_finished_or_cancelling_run_is_idempotent(status: str) -> None:
    m = run_cancel_decision(ALICE, NOW, "stop", ids())(run(status), [])
    assert m.run_status is None and m.control is None and not m.audit and not m.wake and not m.events
    assert m.result == {"runId": "run-1", "status": status, "changed": False}


def test_another_tenant_cannot_cancel_the_run() -> None:
    with pytest.raises(RunNotFoundError):
        run_cancel_decision(principal("olga", tenant="other"), NOW, "x", ids())(run(), [])
