"""Approval answers decided on records alone: quorum, vetoes, overrides, governance and ``ask``."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_bridge.core.approvals import AskLimits, tally
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.decisions.answer import answer_decision
from openwop_bridge.core.decisions.common import Answer
from openwop_bridge.core.errors import (
    AnswerAfterCancelError,
    ConflictError,
    ForbiddenError,
    InterruptAlreadyResolvedError,
    InterruptGoneError,
    InterruptNotFoundError,
    PayloadTooLargeError,
    UnauthenticatedError,
    ValidationError,
)
from openwop_bridge.core.records import InterruptRecord, Mutation, RunRecord
from tests.core.build import NOW, applied, approval_data, event, ids, interrupt, principal, run, types

ALICE = principal("alice")
BOB = principal("bob")
CAROL = principal("carol")


def vote(
    record: InterruptRecord,
    who: Principal | None,
    value: Any,
    *,
    at: int = NOW,
    on: RunRecord | None = None,
    **answer: Any,
) -> Mutation:
    """Decide one answer to ``record`` from ``who`` at ``at``."""
    decide = answer_decision(Answer(who, value, **answer), at, ids())
    return decide(record, on or run())


def gate(*actions: str, **data: Any) -> InterruptRecord:
    return interrupt("approval", approval_data(*actions, **data))


# --- one approver ------------------------------------------------------------------


def test_a_single_accept_settles_the_gate() -> None:
    m = vote(gate(), ALICE, {"action": "accept"})
    assert m.error is None and m.wake
    assert m.interrupt_status == "resolved" and m.resolved_at_ms == NOW
    assert types(m) == ["approval.granted", "approval.received", "interrupt.resolved"]
    assert event(m, "approval.granted")["quorumProgress"] == {"granted": 1, "required": 1}
    assert m.resolution is not None
    assert m.resolution["resumeValue"] == {
        "action": "accept",
        "decidedBy": "alice",
        "decidedAt": m.resolution["resolvedAt"],
    }
    assert "quorum" not in m.resolution["resumeValue"]  # one vote on a one-vote gate
    assert m.resolution["decision"] == "approved"
    assert m.result == {"status": "resolved", "action": "accept", "decision": "approved"}
    assert [a["action"] for a in m.audit] == ["approval.vote.accept"]
    assert m.audit[0]["details"]["progress"] == {
        "accept": 1,
        "reject": 0,
        "required": 1,
        "rejectionPolicy": "single-veto",
    }


def test_a_reject_with_feedback_routes_as_a_rejection() -> None:
    m = vote(gate(), ALICE, {"action": "reject", "feedback": "not yet"})
    assert types(m) == ["approval.rejected", "approval.received", "interrupt.resolved"]
    assert event(m, "approval.rejected") == {"gateId": "gate", "principal": "alice", "reason": "not yet"}
    assert event(m, "interrupt.resolved")["decision"] == "rejected"
    assert m.resolution is not None and m.resolution["resumeValue"]["feedback"] == "not yet"
    assert m.result == {"status": "resolved", "action": "reject", "decision": "rejected"}


def test_legacy_rejected_with_feedback_becomes_refine() -> None:
    m = vote(gate("accept", "reject", "refine"), ALICE, {"decision": "rejected", "feedback": "shorter"})
    assert m.resolution is not None
    value = m.resolution["resumeValue"]
    assert value["action"] == "refine"
    assert value["refineFeedback"] == {"scope": "whole", "text": "shorter"}


def test_an_action_the_gate_does_not_allow_is_refused() -> None:
    with pytest.raises(ValidationError, match="not allowed"):
        vote(gate("accept"), ALICE, {"action": "reject"})
    with pytest.raises(ValidationError, match="editedArtifactData"):
        vote(gate("edit-accept"), ALICE, {"action": "edit"})


def test_a_gate_id_names_the_gate_in_its_events() -> None:
    m = vote(gate(gateId="release"), ALICE, "accept")
    assert event(m, "approval.granted")["gateId"] == "release"


# --- quorum ------------------------------------------------------------------------


def test_quorum_of_two_waits_for_the_second_vote() -> None:
    record = gate(requiredApprovals=2)
    first = vote(record, ALICE, {"action": "accept"})
    assert first.interrupt_status is None and not first.wake
    assert first.result == {
        "status": "pending",
        "votes": {"accept": 1, "reject": 0, "required": 2, "rejectionPolicy": "single-veto"},
    }
    assert types(first) == ["approval.granted"]
    assert event(first, "approval.granted")["quorumProgress"] == {"granted": 1, "required": 2}
    assert first.interrupt_state is not None and [v["voter"] for v in first.interrupt_state["votes"]] == ["alice"]

    second = vote(applied(record, first), BOB, {"action": "accept"}, at=NOW + 1)
    assert second.interrupt_status == "resolved" and second.wake
    assert second.resolution is not None
    value = second.resolution["resumeValue"]
    assert value["decidedBy"] == "bob"
    assert value["quorum"] == "quorum:2-of-2"
    assert [v["voter"] for v in value["votes"]] == ["alice", "bob"]
    assert event(second, "approval.received")["quorum"] == "quorum:2-of-2"


def test_quorum_of_three_with_edits_resumes_with_the_last_edit() -> None:
    record = gate("accept", "edit-accept", requiredApprovals=3)
    m1 = vote(record, ALICE, {"action": "edit-accept", "editedArtifactData": {"v": 1}})
    m2 = vote(applied(record, m1), BOB, {"action": "edit", "editedArtifactData": {"v": 2}})
    assert m2.interrupt_status is None
    m3 = vote(applied(applied(record, m1), m2), CAROL, {"action": "accept"})
    assert m3.resolution is not None
    value = m3.resolution["resumeValue"]
    assert value["action"] == "edit-accept" and value["editedArtifactData"] == {"v": 2}
    assert value["decidedBy"] == "carol" and value["quorum"] == "quorum:3-of-3"


def test_single_veto_rejects_at_the_first_reject_of_a_quorum() -> None:
    record = gate(requiredApprovals=3)
    m1 = vote(record, ALICE, "accept")
    m2 = vote(applied(record, m1), BOB, {"action": "reject", "reason": "no"})
    assert m2.interrupt_status == "resolved"
    assert m2.resolution is not None
    assert m2.resolution["decision"] == "rejected"
    value = m2.resolution["resumeValue"]
    assert value["action"] == "reject" and value["decidedBy"] == "bob" and value["reason"] == "no"
    assert value["quorum"] == "quorum:1-of-2"


def test_majority_rejects_only_past_half_of_the_quorum() -> None:
    record = gate(requiredApprovals=3, rejectionPolicy="majority")
    m1 = vote(record, ALICE, "reject")
    assert m1.interrupt_status is None  # 1 of 3 rejecting is not a majority
    r2 = applied(record, m1)
    m2 = vote(r2, BOB, "accept")
    assert m2.interrupt_status is None
    r3 = applied(r2, m2)
    m3 = vote(r3, CAROL, "reject")
    assert m3.interrupt_status == "resolved"  # 2 of 3 rejecting
    assert m3.resolution is not None and m3.resolution["decision"] == "rejected"
    assert m3.result == {"status": "resolved", "action": "reject", "decision": "rejected"}


def test_majority_of_two_accepts_after_a_reject() -> None:
    record = gate(requiredApprovals=2, rejectionPolicy="majority")
    m1 = vote(record, ALICE, "reject")
    m2 = vote(applied(record, m1), BOB, "accept")
    m3 = vote(applied(applied(record, m1), m2), CAROL, "accept")
    assert m2.interrupt_status is None
    assert m3.resolution is not None and m3.resolution["decision"] == "approved"
    assert m3.resolution["resumeValue"]["quorum"] == "quorum:2-of-3"


def test_majority_rejects_once_the_approvers_left_cannot_reach_the_quorum() -> None:
    record = gate(requiredApprovals=2, rejectionPolicy="majority", approversList=["alice", "bob"])
    m = vote(record, ALICE, "reject")
    assert m.interrupt_status == "resolved"
    assert m.resolution is not None and m.resolution["decision"] == "rejected"


def test_tally_counts_refine_as_rejecting_and_edit_as_accepting() -> None:
    votes = [{"voter": "a", "action": "refine"}, {"voter": "b", "action": "edit-accept"}]
    t = tally({"requiredApprovals": 3, "rejectionPolicy": "majority"}, votes)
    assert (t.outcome, t.accepts, t.rejects) == ("pending", 1, 1)
    assert tally({"requiredApprovals": 1}, votes).outcome == "accepted"  # accepts are counted first
    assert tally({}, [{"voter": "a", "action": "refine"}]).outcome == "rejected"


# --- duplicates and closed gates ---------------------------------------------------


def test_a_duplicate_vote_is_audited_and_changes_nothing() -> None:
    record = gate(requiredApprovals=2)
    first = vote(record, ALICE, "accept")
    again = vote(applied(record, first), ALICE, "reject")
    assert again.interrupt_status is None and again.interrupt_state is None and not again.wake
    assert types(again) == ["bridge.approval.duplicate-vote"]
    assert event(again, "bridge.approval.duplicate-vote")["voter"] == "alice"
    assert [a["action"] for a in again.audit] == ["approval.duplicate-vote"]
    assert again.audit[0]["details"]["action"] == "reject"
    assert again.result == {
        "status": "pending",
        "duplicate": True,
        "votes": {"accept": 1, "reject": 0, "required": 2, "rejectionPolicy": "single-veto"},
    }


def test_a_vote_after_the_quorum_closed_is_refused() -> None:
    record = gate()
    closed = applied(record, vote(record, ALICE, "accept"))
    with pytest.raises(InterruptAlreadyResolvedError) as caught:
        vote(closed, BOB, "reject")
    assert caught.value.details == {"interruptId": "int-1", "status": "resolved"}


@pytest.mark.parametrize(
    ("control", "status", "error"),
    [
        ({"cancel": {"reason": "stop", "cancelledBy": "alice"}}, "cancelling", AnswerAfterCancelError),
        (None, "cancelled", AnswerAfterCancelError),
        ({"cancel": {"reason": "stop", "cancelledBy": "alice", "parentRunId": "p"}}, "cancelling", InterruptGoneError),
    ],
)
def test_a_vote_on_a_run_whose_cancel_committed_is_refused(
    control: dict[str, Any] | None, status: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        vote(gate(), ALICE, "accept", on=run(status, control))


def test_a_link_vote_on_a_cancelled_run_says_the_link_is_no_longer_valid() -> None:
    on = run("cancelling", {"cancel": {"reason": "x", "cancelledBy": "a"}})
    with pytest.raises(InterruptAlreadyResolvedError, match="no longer valid"):
        vote(gate(), None, "accept", on=on, surface="token", token_intent="resolve")


# --- who may vote ------------------------------------------------------------------


def test_another_tenant_does_not_see_the_gate() -> None:
    with pytest.raises(InterruptNotFoundError):
        vote(gate(), principal("olga", tenant="other"), "accept")


def _assert_denied(m: Mutation, reason: str, action: str = "approvals:respond") -> None:
    assert isinstance(m.error, ForbiddenError) and reason in str(m.error)
    assert m.interrupt_status is None and m.interrupt_state is None and not m.wake
    assert types(m) == ["authorization.decided"]
    decided = event(m, "authorization.decided")
    assert decided["allowed"] is False and decided["action"] == action and decided["resource"] == "run-1/gate"
    assert [a["action"] for a in m.audit] == ["authorization.denied"]


def test_approvers_list_denies_anyone_else_but_keeps_the_audit() -> None:
    m = vote(gate(approversList=["alice", "bob"]), CAROL, "accept")
    _assert_denied(m, "'carol' is not among")


def test_required_role_and_scope_deny_with_their_reason() -> None:
    _assert_denied(vote(gate(requiredRole="lead"), ALICE, "accept"), "'lead' role")
    assert vote(gate(requiredRole="lead"), principal("alice", "lead"), "accept").interrupt_status == "resolved"
    scoped = principal("alice", scopes=("approvals:respond",))
    _assert_denied(vote(gate(requiredScope="deploy:promote"), scoped, "accept"), "'deploy:promote'", "deploy:promote")


def test_voting_for_someone_else_needs_act_as() -> None:
    responder = principal("bob", scopes=("approvals:respond",))
    _assert_denied(vote(gate(), responder, {"action": "accept", "voter": "carol"}), "on behalf of another principal")
    by_scope = vote(
        gate(),
        principal("bob", scopes=("approvals:respond", "approvals:act-as")),
        {"action": "accept", "voter": "carol"},
    )
    assert by_scope.interrupt_status == "resolved"
    m = vote(gate(), principal("opal", "operator"), {"action": "accept", "voter": "carol"})
    assert m.resolution is not None and m.resolution["resumeValue"]["decidedBy"] == "carol"
    assert m.audit[0]["details"]["actingPrincipal"] == "opal"


def test_a_link_votes_as_its_subject_and_only_in_its_approvers() -> None:
    m = vote(
        gate(approversList=["carol"]), None, "accept", surface="token", token_intent="resolve", token_subject="carol"
    )
    assert m.resolution is not None and m.resolution["resumeValue"]["decidedBy"] == "carol"
    with pytest.raises(ForbiddenError, match="cannot name anyone else"):
        vote(
            gate(),
            None,
            {"action": "accept", "voter": "bob"},
            surface="token",
            token_intent="resolve",
            token_subject="carol",
        )
    with pytest.raises(ForbiddenError, match="approvers"):
        vote(gate(approversList=["carol"]), None, "accept", surface="token", token_intent="resolve")


def test_an_inspect_link_cannot_vote_and_a_governed_gate_needs_a_key() -> None:
    with pytest.raises(ForbiddenError, match="only allows looking"):
        vote(gate(), None, "accept", surface="token", token_intent="inspect")
    with pytest.raises(UnauthenticatedError):
        vote(gate(requiredRole="lead"), None, "accept", surface="token", token_intent="resolve")


# --- override ----------------------------------------------------------------------

OVERRIDE = {"override": {"requiredRole": "release-manager"}}
RM = principal("rita", "release-manager")


def test_an_override_that_bypasses_the_quorum_closes_the_gate_alone() -> None:
    record = gate(requiredApprovals=3, overrideBypassesQuorum=True, **OVERRIDE)
    m = vote(record, RM, {"action": "accept", "override": True, "reason": "hotfix"})
    assert types(m) == ["approval.overridden", "approval.granted", "approval.received", "interrupt.resolved"]
    assert event(m, "approval.overridden") == {"gateId": "gate", "principal": "rita", "reason": "hotfix"}
    assert [a["action"] for a in m.audit] == ["approval.overridden", "approval.vote.accept"]
    assert m.resolution is not None and m.resolution["decision"] == "approved"
    assert m.resolution["resumeValue"]["votes"][0]["override"] is True


def test_a_bypassing_override_replaces_the_overriders_earlier_vote() -> None:
    record = gate(requiredApprovals=3, overrideBypassesQuorum=True, **OVERRIDE)
    first = vote(record, RM, "accept")
    m = vote(applied(record, first), RM, {"action": "accept", "override": True, "reason": "now"})
    assert "bridge.approval.duplicate-vote" not in types(m)
    assert m.resolution is not None
    assert [v["voter"] for v in m.resolution["resumeValue"]["votes"]] == ["rita"]


def test_an_override_without_bypass_counts_as_one_vote() -> None:
    m = vote(gate(requiredApprovals=2, **OVERRIDE), RM, {"action": "accept", "override": True, "reason": "x"})
    assert m.interrupt_status is None
    assert types(m) == ["approval.overridden", "approval.granted"]
    assert m.result is not None and m.result["votes"]["accept"] == 1


def test_an_override_needs_the_override_role_and_a_path() -> None:
    value = {"action": "accept", "override": True, "reason": "x"}
    _assert_denied(vote(gate(**OVERRIDE), ALICE, value), "'release-manager' role")
    _assert_denied(vote(gate(), RM, value), "no override path")
    with pytest.raises(ForbiddenError, match="override path"):
        vote(gate(**OVERRIDE), None, value, surface="token", token_intent="resolve")
    with pytest.raises(ValidationError, match="reason"):
        vote(gate(**OVERRIDE), RM, {"action": "accept", "override": True})
    with pytest.raises(ValidationError, match="only accept"):
        vote(gate(**OVERRIDE), RM, {"action": "reject", "override": True, "reason": "x"})


# --- answer checks -----------------------------------------------------------------


def test_a_named_answer_check_must_be_loaded_and_may_refuse() -> None:
    record = gate(answerCheck="shape")
    with pytest.raises(ValidationError, match="has not loaded"):
        vote(record, ALICE, "accept")

    def refuse(payload: Any, cast: dict[str, Any]) -> None:
        raise ValidationError(f"{cast['voter']} may not")

    with pytest.raises(ValidationError, match="alice may not"):
        vote(record, ALICE, "accept", checks={"shape": refuse})
    assert vote(record, ALICE, "accept", checks={"shape": lambda p, v: None}).interrupt_status == "resolved"


def test_the_resume_schema_applies_to_approval_answers() -> None:
    schema = {"type": "object", "required": ["action", "ticket"]}
    with pytest.raises(ValidationError):
        vote(interrupt("approval", approval_data(), resumeSchema=schema), ALICE, {"action": "accept"})


# --- ask ---------------------------------------------------------------------------


def test_ask_keeps_the_gate_pending_and_records_the_exchange() -> None:
    record = gate("accept", "ask")
    m = vote(record, ALICE, {"action": "ask", "question": "why?"}, ask_answer="because")
    assert m.interrupt_status is None and not m.wake and not m.audit
    assert types(m) == ["bridge.approval.asked"]
    exchange = {"question": "why?", "answer": "because", "askedBy": "alice", "at": "2023-11-14T22:13:20.000Z"}
    assert m.interrupt_state == {"askExchanges": [exchange]}
    assert m.result == {"status": "pending", "ask": exchange, "askExchanges": [exchange]}


def test_ask_bounds_refuse_without_storing_anything() -> None:
    record = gate("accept", "ask")
    limits = AskLimits(question_bytes=8, answer_bytes=4, per_asker=1, per_interrupt=2)
    first = vote(record, ALICE, {"action": "ask", "question": "why?"}, ask_answer="because", ask_limits=limits)
    assert first.interrupt_state is not None
    assert first.interrupt_state["askExchanges"][0]["answer"] == "b\u2026"  # clipped to 4 bytes
    after = applied(record, first)
    with pytest.raises(ConflictError) as per_asker:
        vote(after, ALICE, {"action": "ask", "question": "again"}, ask_limits=limits)
    assert per_asker.value.details["limit"] == "asksPerAsker"
    with pytest.raises(PayloadTooLargeError):
        vote(after, BOB, {"action": "ask", "question": "much too long"}, ask_limits=limits)
    second = vote(after, BOB, {"action": "ask", "question": "how?"}, ask_limits=limits)
    with pytest.raises(ConflictError) as per_interrupt:
        vote(applied(after, second), CAROL, {"action": "ask", "question": "who?"}, ask_limits=limits)
    assert per_interrupt.value.details["limit"] == "asksPerInterrupt"


def test_ask_needs_a_question() -> None:
    with pytest.raises(ValidationError, match="question"):
        vote(gate("accept", "ask"), ALICE, {"action": "ask"})
