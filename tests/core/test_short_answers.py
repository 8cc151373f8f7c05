"""A kind's short answers, the one place surfaces turn them into full answers (pure).

AG-UI, the LangGraph API and A2A all call :func:`openwop_bridge.kinds.coerce_short_answer`;
what it returns is then an answer the kind's normalisation accepts.
"""

from __future__ import annotations

from typing import Any

import pytest

from openwop_bridge import kinds

ONE = kinds.clarification(["Which colour?"])["data"]
TWO = kinds.clarification(["Which colour?", "Which size?"])["data"]
GATE = kinds.approval("Ship it?")["data"]


def test_a_bare_value_answers_the_one_question() -> None:
    answer = kinds.coerce_short_answer("clarification", ONE, "blue")
    assert answer == {"answers": {"q1": "blue"}}
    assert kinds.CLARIFICATION.normalize_resume(ONE, answer) == {"answers": [{"id": "q1", "answer": "blue"}]}


def test_an_object_keyed_by_question_ids_becomes_the_answers() -> None:
    assert kinds.coerce_short_answer("clarification", TWO, {"q1": "blue", "q2": "L"}) == {
        "answers": {"q1": "blue", "q2": "L"}
    }


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (TWO, "blue"),  # a bare value with two questions: no short form
        (ONE, {"answers": {"q1": "blue"}}),  # the full form already
        (ONE, {"other": "blue"}),  # an object naming no question
        (ONE, {}),
    ],
)
def test_a_clarification_value_that_is_no_short_form_is_left_as_it_is(data: dict[str, Any], value: Any) -> None:
    assert kinds.coerce_short_answer("clarification", data, value) is value


@pytest.mark.parametrize(
    ("value", "answer"),
    [
        ("reject", {"action": "reject"}),
        ("accept", {"action": "accept"}),
        (True, {"action": "accept"}),
        (False, {"action": "reject"}),
    ],
)
def test_an_approval_given_as_a_bare_action_or_a_yes_no(value: Any, answer: dict[str, Any]) -> None:
    assert kinds.coerce_short_answer("approval", GATE, value) == answer
    assert kinds.APPROVAL.normalize_resume(GATE, answer).action == answer["action"]


def test_an_approval_object_is_left_as_it_is() -> None:
    value = {"action": "accept", "feedback": "fine"}
    assert kinds.coerce_short_answer("approval", GATE, value) is value


@pytest.mark.parametrize("kind", ["custom", "external-event", "conversation-exchange", "no-such-kind"])
def test_other_kinds_have_no_short_form(kind: str) -> None:
    assert kinds.coerce_short_answer(kind, {"questions": [{"id": "q1"}]}, "blue") == "blue"


def test_the_method_is_the_kind_objects() -> None:
    assert kinds.CLARIFICATION.coerce_short_answer(ONE, "blue") == kinds.coerce_short_answer(
        "clarification", ONE, "blue"
    )
    assert kinds.kind_of("custom").coerce_short_answer({}, "x") == "x"
