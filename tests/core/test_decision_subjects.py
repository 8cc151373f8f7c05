"""Decisions record the subject that made them beside ``decidedBy`` / ``resolvedBy``: a provider's token
(issuer, ``sub``, lane), a signed link's person (the link realm), none for an API key."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from openwop_bridge.core.auth import LINK_ISSUER, Principal, Subject
from openwop_bridge.core.decisions.answer import answer_decision
from openwop_bridge.core.decisions.cancel import cancel_decision, run_cancel_decision
from openwop_bridge.core.decisions.common import Answer
from openwop_bridge.core.decisions.exchange import answer_events
from openwop_bridge.core.records import InterruptRecord, Mutation
from tests.core.build import NOW, applied, approval_data, event, ids, interrupt, principal, run

ISSUER = "https://idp.example.com"
ALICE_SUBJECT = {"issuer": ISSUER, "subjectId": "248289761001", "lane": "oidc"}
ALICE = replace(principal("alice"), subject=Subject(ISSUER, "248289761001", "oidc", name="Alice", email="a@x.io"))
OPAL = principal("opal", "operator")
LINKED = {"issuer": LINK_ISSUER, "subjectId": "alice", "lane": "api-key"}


def decide(record: InterruptRecord, who: Principal | None, value: Any, **answer: Any) -> Mutation:
    return answer_decision(Answer(who, value, **answer), NOW, ids())(record, run())


def gate(**data: Any) -> InterruptRecord:
    return interrupt("approval", approval_data(**data))


def test_a_vote_by_token_records_its_subject_in_the_vote_the_value_the_events_and_the_audit() -> None:
    m = decide(gate(), ALICE, {"action": "accept"})
    assert m.interrupt_state is not None and m.interrupt_state["votes"][0]["subject"] == ALICE_SUBJECT
    assert m.resolution is not None
    assert m.resolution["resumeValue"]["decidedBy"] == "alice"
    assert m.resolution["resumeValue"]["decidedBySubject"] == ALICE_SUBJECT
    assert m.resolution["resolvedBySubject"] == ALICE_SUBJECT
    assert event(m, "approval.received")["decidedBySubject"] == ALICE_SUBJECT
    assert event(m, "interrupt.resolved")["resolvedBySubject"] == ALICE_SUBJECT
    # v1 closes approval.granted: its subject is the vote's, in the gate's votes.
    assert set(event(m, "approval.granted")) == {"gateId", "principal", "quorumProgress"}
    [vote] = [a for a in m.audit if a["action"] == "approval.vote.accept"]
    assert vote["principal"] == "alice" and vote["details"]["subject"] == ALICE_SUBJECT
    assert "Alice" not in str(m.events) and "a@x.io" not in str(m.events), "never the name or e-mail"


def test_a_key_records_no_subject() -> None:
    m = decide(gate(), principal("bob"), {"action": "accept"})
    assert m.interrupt_state is not None and "subject" not in m.interrupt_state["votes"][0]
    assert m.resolution is not None and "resolvedBySubject" not in m.resolution
    assert "decidedBySubject" not in event(m, "approval.received")


def test_acting_for_someone_else_records_no_subject_for_them() -> None:
    operator = replace(OPAL, subject=Subject(ISSUER, "opal-sub", "oidc"))
    m = decide(gate(), operator, {"action": "accept", "voter": "carol"})
    assert m.interrupt_state is not None
    [vote] = m.interrupt_state["votes"]
    assert vote["voter"] == "carol" and vote["actingPrincipal"] == "opal" and "subject" not in vote


def test_a_signed_link_records_its_person_in_the_link_realm() -> None:
    m = decide(gate(), None, {"action": "accept"}, surface="token", token_subject="alice", token_intent="resolve")
    assert m.resolution is not None and m.resolution["resolvedBySubject"] == LINKED
    assert m.interrupt_state is not None and m.interrupt_state["votes"][0]["subject"] == LINKED


def test_an_answer_by_token_records_its_subject() -> None:
    record = interrupt("clarification", {"questions": [{"id": "q1", "prompt": "Colour?"}]})
    m = decide(record, ALICE, {"answers": {"q1": "red"}})
    assert m.error is None, m.error
    assert m.resolution is not None and m.resolution["resolvedBySubject"] == ALICE_SUBJECT
    assert event(m, "interrupt.resolved")["resolvedBySubject"] == ALICE_SUBJECT


def test_a_conversation_turn_by_token_records_its_subject_and_a_replay_rebuilds_it() -> None:
    record = interrupt("conversation.exchange", {"conversationId": "c1", "turnIndex": 2, "prompt": "and?"})
    m = decide(record, ALICE, "hello")
    assert m.resolution is not None and m.resolution["resolvedBySubject"] == ALICE_SUBJECT
    assert event(m, "interrupt.resolved")["resolvedBySubject"] == ALICE_SUBJECT
    rebuilt = answer_events(applied(record, m), m.resolution)
    assert rebuilt[0]["payload"]["resolvedBySubject"] == ALICE_SUBJECT


def test_a_cancel_by_token_records_its_subject() -> None:
    m = cancel_decision(ALICE, NOW, ids())(gate(), run())
    assert m.resolution is not None and m.resolution["resumeValue"]["decidedBySubject"] == ALICE_SUBJECT
    assert event(m, "interrupt.resolved")["resolvedBySubject"] == ALICE_SUBJECT
    other = interrupt("clarification", {"questions": [{"id": "q1", "prompt": "Colour?"}]})
    m = cancel_decision(ALICE, NOW, ids())(other, run())
    assert m.resolution is not None and m.resolution["resolvedBySubject"] == ALICE_SUBJECT
    cancelled = run_cancel_decision(ALICE, NOW, "enough", ids())(run(), [other])
    assert cancelled.control == {
        "cancel": {"reason": "enough", "cancelledBy": "alice", "cancelledBySubject": ALICE_SUBJECT}
    }
    assert event(cancelled, "interrupt.resolved")["resolvedBySubject"] == ALICE_SUBJECT
