"""Interrupt payloads and per-kind answer normalisation (pure)."""

from __future__ import annotations

import pytest

from openwop_bridge import spec
from openwop_bridge.core import kinds
from openwop_bridge.core.errors import CorrelationMismatchError, ValidationError


def test_payload_aliases_and_default_key() -> None:
    p = kinds.normalize_payload(
        {"reason": "custom", "resumeKey": "k1", "answerSchema": {"type": "string"}, "data": {"customKind": "x"}},
        "default",
    )
    assert p == {"kind": "custom", "key": "k1", "resumeSchema": {"type": "string"}, "data": {"customKind": "x"}}
    q = kinds.normalize_payload({"kind": "custom", "data": {"customKind": "x"}}, "run:node:0")
    assert q["key"] == "run:node:0"
    assert not list(spec.validator("suspend-request.schema.json").iter_errors(q))


@pytest.mark.parametrize(
    "payload",
    [
        {"kind": "nope", "data": {}},
        {"kind": "approval", "data": {"title": "t"}},
        {"kind": "approval", "data": {"artifactId": "a", "artifactType": "t", "title": "x", "actions": ["edit"]}},
        {"kind": "custom", "data": {"customKind": "x"}, "extra": 1},
        {"kind": "custom", "data": {"customKind": "x"}, "timeoutMs": -1},
        {"kind": "custom", "data": {"customKind": "x"}, "resumeSchema": {"type": "nonsense"}},
        {"kind": "custom", "reason": "custom", "data": {"customKind": "x"}},
    ],
)
def test_bad_payloads_are_refused(payload: dict) -> None:
    with pytest.raises(ValidationError):
        kinds.normalize_payload(payload, "k")


def test_a_quorum_its_approvers_cannot_reach_is_refused_when_the_gate_opens() -> None:
    data = {"artifactId": "a", "artifactType": "t", "title": "x", "actions": ["accept", "reject"]}
    gate = {**data, "requiredApprovals": 3, "approversList": ["alice", "bob"]}
    with pytest.raises(ValidationError) as caught:
        kinds.normalize_payload({"kind": "approval", "data": gate}, "k")
    assert caught.value.details == {
        "problems": [
            "data.requiredApprovals: 3 approvals cannot be reached by the 2 distinct principals in approversList"
        ]
    }
    reachable = {**data, "requiredApprovals": 2, "approversList": ["alice", "bob"]}
    assert kinds.normalize_payload({"kind": "approval", "data": reachable}, "k")["data"] == reachable
    assert kinds.normalize_payload({"kind": "approval", "data": {**data, "requiredApprovals": 3}}, "k")


def test_a_quorum_counts_each_listed_approver_once() -> None:
    data = {"artifactId": "a", "artifactType": "t", "title": "x", "actions": ["accept", "reject"]}
    twice = {**data, "requiredApprovals": 2, "approversList": ["alice", "alice"]}
    with pytest.raises(ValidationError) as caught:
        kinds.normalize_payload({"kind": "approval", "data": twice}, "k")
    assert caught.value.details == {
        "problems": [
            "data.requiredApprovals: 2 approvals cannot be reached by the 1 distinct principal in approversList"
        ]
    }
    listed = {**data, "requiredApprovals": 2, "approversList": ["alice", "bob", "alice"]}
    assert kinds.normalize_payload({"kind": "approval", "data": listed}, "k")["data"] == listed


def test_builders_produce_valid_payloads() -> None:
    for payload in (
        kinds.approval("Ship?", actions=["accept", "edit"], required_approvals=2),
        kinds.clarification(["Colour?", {"id": "size", "question": "Size?"}]),
        kinds.external_event("stripe.paid", {"orderId": "1"}),
        kinds.custom("review", {"x": 1}),
    ):
        assert not list(
            spec.validator("suspend-request.schema.json").iter_errors(kinds.normalize_payload(payload, "k"))
        )


def test_clarification_accepts_both_answer_shapes() -> None:
    data = {
        "questions": [
            {"id": "q1", "question": "Colour?"},
            {"id": "q2", "question": "N?", "schema": {"type": "integer"}},
        ]
    }
    as_map = kinds.normalize_clarification(data, {"answers": {"q1": "blue", "q2": 3}})
    as_list = kinds.normalize_clarification(
        data, {"answers": [{"id": "q2", "answer": 3}, {"id": "q1", "answer": "blue"}]}
    )
    assert as_map == as_list == {"answers": [{"id": "q1", "answer": "blue"}, {"id": "q2", "answer": 3}]}
    with pytest.raises(ValidationError) as bad:
        kinds.normalize_clarification(data, {"answers": {"q1": "blue", "q2": "three"}})
    assert "answers/q2" in str(bad.value.details)
    with pytest.raises(ValidationError) as missing:
        kinds.normalize_clarification(data, {"answers": {"q1": "blue", "zz": 1}})
    assert missing.value.details == {"unknownQuestionIds": ["zz"], "unansweredQuestionIds": ["q2"]}


def test_external_event_correlation() -> None:
    data = {"eventType": "e", "correlation": {"orderId": "o1", "status": "completed"}}
    body = {"orderId": "o1", "status": "completed", "amount": 3}
    assert kinds.normalize_external_event(data, body) is body
    assert kinds.correlation_matches(data["correlation"], {"eventPayload": {"orderId": "o1", "status": "completed"}})
    with pytest.raises(CorrelationMismatchError):
        kinds.normalize_external_event(data, {"orderId": "o1", "status": "failed"})
    assert kinds.external_event_id({"eventId": "evt-9"}) == "evt-9"


@pytest.mark.parametrize(
    ("value", "usable"),
    [
        (0.5, 0.5),
        (1, 1.0),
        (float("nan"), None),
        (float("inf"), None),
        (1.5, None),
        (-0.1, None),
        (True, None),
        ("0.3", None),
        (None, None),
    ],
)
def test_finite_confidence(value: object, usable: float | None) -> None:
    assert kinds.finite_confidence(value) == usable
