"""The kind registry: one object per kind, and the answer schema it advertises agrees with its validation."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from openwop_bridge.core import approvals, kinds
from openwop_bridge.core.errors import BridgeError, ValidationError

APPROVAL_DATA = {
    "artifactId": "a",
    "artifactType": "generic",
    "title": "Ship it?",
    "actions": ["accept", "reject", "refine", "edit-accept", "ask"],
    "artifactData": {"v": 1},
}
CLARIFICATION_DATA = {
    "questions": [
        {"id": "region", "question": "Which region?"},
        {"id": "seats", "question": "How many seats?", "schema": {"type": "integer", "minimum": 1}},
    ]
}
EVENT_DATA = {"eventType": "payment.settled", "correlation": {"orderId": "o-1"}}
LOW_CONFIDENCE_DATA = {"agentId": "router", "threshold": 0.7, "observed": 0.4, "decision": {"route": "billing"}}

#: (kind, data, answers its advertised schema accepts, answers validation refuses)
CASES: list[tuple[kinds.Kind, dict[str, Any], list[Any], list[Any]]] = [
    (
        kinds.APPROVAL,
        APPROVAL_DATA,
        [
            {"action": "accept"},
            {"action": "reject", "feedback": "no"},
            {"action": "refine", "refineFeedback": {"scope": "whole", "text": "tighter"}},
            {"action": "edit-accept", "editedArtifactData": {"v": 2}},
            {"action": "ask", "question": "why?"},
        ],
        [
            {"action": "launch"},
            {"action": "edit-accept"},
            {"action": "ask"},
            {"action": "refine", "refineFeedback": {"scope": "everything"}},
            ["accept"],
        ],
    ),
    (
        kinds.CLARIFICATION,
        CLARIFICATION_DATA,
        [{"answers": {"region": "EU", "seats": 3}}],
        [
            {"answers": {"region": "EU"}},
            {"answers": {"region": "EU", "seats": 0}},
            {"answers": {"region": "EU", "seats": 3, "colour": "red"}},
            {"region": "EU", "seats": 3},
        ],
    ),
    (
        kinds.EXTERNAL_EVENT,
        EVENT_DATA,
        [{"orderId": "o-1"}, {"orderId": "o-1", "eventId": "e-1", "amount": 10}],
        [{"orderId": "o-2"}, {"amount": 10}, "o-1"],
    ),
    (kinds.LOW_CONFIDENCE, LOW_CONFIDENCE_DATA, [{"route": "sales"}, "sales"], []),
    (kinds.CUSTOM, {"customKind": "pick"}, [{"any": "thing"}, 3], []),
]


def test_the_registry_names_every_kind_once() -> None:
    assert list(kinds.REGISTRY) == list(kinds.KINDS)
    assert len(kinds.KINDS) == 8
    for name, kind in kinds.REGISTRY.items():
        assert kind.name == name
        assert kinds.kind_of(name) is kind
    assert kinds.CONVERSATION_KINDS == {n for n in kinds.KINDS if n.startswith("conversation.")}


@pytest.mark.parametrize("name", ["approve", "", None, 3, "Approval"])
def test_an_unknown_kind_is_a_validation_error(name: Any) -> None:
    with pytest.raises(ValidationError):
        kinds.kind_of(name)


def test_waiting_status_and_suspend_reason_per_kind() -> None:
    table = {name: (k.waiting_status, k.suspend_reason) for name, k in kinds.REGISTRY.items()}
    assert table == {
        "approval": ("waiting-approval", "approval"),
        "clarification": ("waiting-input", "clarification"),
        "external-event": ("waiting-external", "external-event"),
        "custom": ("waiting-input", "custom"),
        "conversation.start": ("waiting-input", "conversation"),
        "conversation.exchange": ("waiting-approval", "conversation-input"),
        "conversation.close": ("waiting-input", "conversation"),
        "low-confidence": ("waiting-approval", "low-confidence"),
    }
    assert dict(kinds.WAITING_STATUS) == {n: s for n, (s, _) in table.items()}
    assert kinds.waiting_status("no-such-kind") == "waiting-input"


def test_only_the_conversation_ends_are_unanswerable_and_unlisted() -> None:
    closed = {n for n, k in kinds.REGISTRY.items() if not k.answerable}
    assert closed == {n for n, k in kinds.REGISTRY.items() if not k.listed}
    assert closed == {kinds.CONVERSATION_START.name, kinds.CONVERSATION_CLOSE.name}
    assert {n for n, k in kinds.REGISTRY.items() if k.fails_closed} == {kinds.APPROVAL.name}
    assert {n for n, k in kinds.REGISTRY.items() if k.turn} == {kinds.CONVERSATION_EXCHANGE.name}


@pytest.mark.parametrize(("kind", "data", "good", "bad"), CASES, ids=[c[0].name for c in CASES])
def test_an_answer_the_kind_advertises_is_one_it_accepts(
    kind: kinds.Kind, data: dict[str, Any], good: list[Any], bad: list[Any]
) -> None:
    schema = kind.response_schema(kind.payload(data))
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    for answer in good:
        assert validator.is_valid(answer), answer
        kind.normalize_resume(data, answer)


@pytest.mark.parametrize(("kind", "data", "good", "bad"), CASES, ids=[c[0].name for c in CASES])
def test_an_answer_the_kind_refuses_is_one_it_does_not_advertise(
    kind: kinds.Kind, data: dict[str, Any], good: list[Any], bad: list[Any]
) -> None:
    validator = Draft202012Validator(kind.response_schema(kind.payload(data)))
    for answer in bad:
        with pytest.raises(BridgeError):  # a 400 (validation) or a 422 (correlation mismatch)
            kind.normalize_resume(data, answer)
        assert not validator.is_valid(answer), answer


def test_a_declared_resume_schema_is_what_is_advertised() -> None:
    declared = {"type": "object", "required": ["pick"]}
    payload = kinds.custom("pick", resume_schema=declared)
    assert kinds.CUSTOM.response_schema(payload) == declared


def test_each_builder_makes_a_payload_of_its_kind_that_checks_out() -> None:
    built = [
        kinds.approval("Ship?", actions=("accept", "edit")),
        kinds.clarification(["Which region?"]),
        kinds.external_event("payment.settled", {"orderId": "o-1"}),
        kinds.custom("pick", {"options": [1, 2]}),
        kinds.LOW_CONFIDENCE.payload(LOW_CONFIDENCE_DATA, key="k"),
    ]
    for payload in built:
        checked = kinds.normalize_payload(payload, "default")
        assert kinds.kind_of(checked["kind"]).name == payload["kind"]
    assert built[0]["data"]["actions"] == ["accept", "edit-accept"]


def test_titles_and_labels_come_from_the_kind() -> None:
    assert kinds.APPROVAL.title(APPROVAL_DATA) == "Ship it?"
    assert kinds.CLARIFICATION.title(CLARIFICATION_DATA) == "Which region? (+1 more)"
    assert kinds.EXTERNAL_EVENT.title(EVENT_DATA) == "Waiting for payment.settled"
    assert kinds.CUSTOM.title({"customKind": "pick"}) == "pick input"
    assert kinds.CONVERSATION_EXCHANGE.title({"prompt": "Hi?"}) == "Hi?"
    assert [k.label for k in kinds.REGISTRY.values()][:4] == [
        "Approval",
        "Clarification",
        "External event",
        "Custom input",
    ]


def test_edit_and_legacy_decisions_are_read_in_one_place() -> None:
    assert approvals.canonical_action("edit") == "edit-accept"
    assert [approvals.action_of({"decision": d}) for d in ("approved", "granted", "rejected", "timeout")] == [
        "accept",
        "accept",
        "reject",
        "reject",
    ]
    assert approvals.normalize_answer(APPROVAL_DATA, {"decision": "granted"}).action == "accept"


def test_a_decision_that_is_not_a_string_is_a_validation_error() -> None:
    # It raised TypeError (unhashable) instead of a 400.
    with pytest.raises(ValidationError):
        approvals.normalize_answer(APPROVAL_DATA, {"decision": {"approved": True}})
