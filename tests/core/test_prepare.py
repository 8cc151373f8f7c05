"""An answer prepared against the interrupt's payload before the transaction, then decided on the rows."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from openwop_bridge.core.decisions.answer import answer_decision, prepare_answer
from openwop_bridge.core.decisions.common import Answer
from openwop_bridge.core.errors import InterruptAlreadyResolvedError, ValidationError
from openwop_bridge.core.records import InterruptRecord
from tests.core.build import NOW, approval_data, event, ids, interrupt, principal, run

ALICE = principal("alice")
QUESTION = {"questions": [{"id": "env", "question": "Which?", "schema": {"enum": ["staging", "prod"]}}]}


def test_prepare_keeps_a_refusal_for_the_decision_to_raise() -> None:
    record = interrupt("clarification", QUESTION)
    bad = Answer(ALICE, {"answers": {"env": "moon"}})
    prepared = prepare_answer(record, bad, NOW)  # does not raise
    assert isinstance(prepared.value_error, ValidationError)
    with pytest.raises(ValidationError):
        answer_decision(bad, NOW, ids(), prepared)(record, run("waiting-input"))


def test_a_closed_interrupt_is_refused_before_the_prepared_refusal() -> None:
    record = interrupt("custom", {"title": "x"}, status="resolved", resumeSchema={"type": "integer"})
    bad = Answer(ALICE, "not a number")
    prepared = prepare_answer(record, bad, NOW)
    assert isinstance(prepared.schema_error, ValidationError)
    with pytest.raises(InterruptAlreadyResolvedError):
        answer_decision(bad, NOW, ids(), prepared)(record, run("waiting-input"))


def test_the_answer_check_runs_when_preparing_not_when_deciding() -> None:
    calls: list[dict[str, Any]] = []
    record = interrupt("approval", approval_data(answerCheck="count"))
    given = Answer(ALICE, {"action": "accept"}, checks={"count": lambda payload, vote: calls.append(vote)})
    prepared = prepare_answer(record, given, NOW)
    assert len(calls) == 1
    m = answer_decision(given, NOW, ids(), prepared)(record, run())
    assert m.interrupt_status == "resolved" and len(calls) == 1


def test_an_answer_prepared_for_another_interrupt_is_prepared_again() -> None:
    first = interrupt("custom", {"title": "x"}, resumeSchema={"type": "string"})
    second: InterruptRecord = replace(
        first, interrupt_id="int-2", payload={**first.payload, "resumeSchema": {"type": "integer"}}
    )
    given = Answer(ALICE, "text")
    prepared = prepare_answer(first, given, NOW)
    assert prepared.schema_error is None
    with pytest.raises(ValidationError):
        answer_decision(given, NOW, ids(), prepared)(second, run("waiting-input"))


def test_an_exchange_prepared_for_an_earlier_turn_is_prepared_again() -> None:
    data = {"conversationId": "c1", "turnIndex": 2, "prompt": "and?"}
    earlier = interrupt("conversation.exchange", data)
    later = replace(earlier, payload={**earlier.payload, "data": {**data, "turnIndex": 3}})
    given = Answer(ALICE, "hello")
    prepared = prepare_answer(earlier, given, NOW)
    m = answer_decision(given, NOW, ids(), prepared)(replace(later, interrupt_id=earlier.interrupt_id), run())
    assert event(m, "conversation.exchanged")["turn"]["messageId"] == "c1:3:user"


@pytest.mark.parametrize(
    ("kind", "data", "value", "extra"),
    [
        ("clarification", QUESTION, {"answers": {"env": "prod"}}, {}),
        ("custom", {"title": "x"}, 7, {"resumeSchema": {"type": "integer"}}),
        ("approval", approval_data(), {"action": "reject", "reason": "no"}, {}),
        ("conversation.exchange", {"conversationId": "c1", "turnIndex": 2}, {"operation": "close"}, {}),
    ],
)
def test_a_prepared_answer_decides_as_an_unprepared_one(
    kind: str, data: dict[str, Any], value: Any, extra: dict[str, Any]
) -> None:
    record = interrupt(kind, data, **extra)
    given = Answer(ALICE, value)
    plain = answer_decision(given, NOW, ids())(record, run())
    prepared = answer_decision(given, NOW, ids(), prepare_answer(record, given, NOW))(record, run())
    assert prepared == plain
