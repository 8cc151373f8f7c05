"""The approval vocabulary, legacy normalisation and quorum tallies (pure)."""

from __future__ import annotations

import pytest

from openwop_bridge.core import approvals as approval
from openwop_bridge.core.errors import ValidationError

ALL = {"actions": ["accept", "reject", "refine", "edit-accept", "ask"]}


@pytest.mark.parametrize(
    ("value", "action"),
    [
        ({"decision": "approved"}, "accept"),
        ({"decision": "rejected"}, "reject"),
        ({"decision": "rejected", "feedback": "tighten the intro"}, "refine"),
        ({"decision": "timeout"}, "reject"),
        ({"decision": "cancelled"}, "reject"),
        ({"action": "edit", "editedArtifactData": {"x": 1}}, "edit-accept"),
        ("accept", "accept"),
    ],
)
def test_legacy_and_alias_normalisation(value: object, action: str) -> None:
    assert approval.normalize_answer(ALL, value).action == action


def test_legacy_rejected_with_feedback_becomes_structured_refine() -> None:
    answer = approval.normalize_answer(ALL, {"decision": "rejected", "feedback": "shorter"})
    assert answer.refine_feedback == {"scope": "whole", "text": "shorter"}


@pytest.mark.parametrize(
    "value",
    [
        {"action": "refine"},
        {"action": "edit-accept"},
        {"action": "ask"},
        {"action": "frobnicate"},
        {"decision": "maybe"},
        {"action": "accept", "override": True},
        {"action": "reject", "override": True, "reason": "x"},
        42,
    ],
)
def test_malformed_answers(value: object) -> None:
    with pytest.raises(ValidationError):
        approval.normalize_answer(ALL, value)


def test_action_must_be_allowed() -> None:
    with pytest.raises(ValidationError) as err:
        approval.normalize_answer(
            {"actions": ["accept", "reject"]}, {"action": "refine", "refineFeedback": {"scope": "whole"}}
        )
    assert err.value.details["allowedActions"] == ["accept", "reject"]


def _votes(*actions: str) -> list[dict]:
    return [{"voter": f"v{i}", "action": a, "at": "t"} for i, a in enumerate(actions)]


@pytest.mark.parametrize(
    ("data", "actions", "outcome"),
    [
        ({}, ["accept"], "accepted"),
        ({}, ["reject"], "rejected"),
        ({"requiredApprovals": 3}, ["accept", "accept"], "pending"),
        ({"requiredApprovals": 3}, ["accept", "accept", "accept"], "accepted"),
        ({"requiredApprovals": 3}, ["accept", "reject"], "rejected"),  # single-veto by default
        ({"requiredApprovals": 3, "rejectionPolicy": "majority"}, ["accept", "reject"], "pending"),
        ({"requiredApprovals": 3, "rejectionPolicy": "majority"}, ["reject", "refine"], "rejected"),
        ({"requiredApprovals": 3, "rejectionPolicy": "majority"}, ["reject", "accept", "accept", "accept"], "accepted"),
        ({"requiredApprovals": 2, "rejectionPolicy": "majority", "approversList": ["a", "b"]}, ["reject"], "rejected"),
        # a name listed twice is one voter: once v0 rejects, only v1 is left to accept
        (
            {"requiredApprovals": 2, "rejectionPolicy": "majority", "approversList": ["v0", "v0", "v1"]},
            ["reject"],
            "rejected",
        ),
    ],
)
def test_tally(data: dict, actions: list[str], outcome: str) -> None:
    assert approval.tally(data, _votes(*actions)).outcome == outcome


def test_final_value_names_the_closing_approver_and_carries_votes() -> None:
    t = approval.tally({"requiredApprovals": 2}, _votes("accept", "edit-accept"))
    votes = list(t.votes)
    votes[1]["editedArtifactData"] = {"v": 2}
    t = approval.tally({"requiredApprovals": 2}, votes)
    final = approval.final_value(t, votes[1], "now")
    assert final["decidedBy"] == "v1"
    assert final["action"] == "edit-accept"
    assert final["editedArtifactData"] == {"v": 2}
    assert final["quorum"] == "quorum:2-of-2"
    assert len(final["votes"]) == 2


def test_timeout_never_approves() -> None:
    value = approval.timeout_value("now")
    assert value["action"] == "timeout" and value["decision"] == "rejected" and value["reason"] == "timeout"
