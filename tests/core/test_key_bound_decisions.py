"""Key-bound approval gates: a decision needs an answer whose assurance is ``key-bound``.

The host verifies a passkey assertion before it builds the :class:`Answer`; the decision only sees the
assurance it carries, refuses anything below a key-bound gate's floor with ``sender_constraint_missing``
(nothing recorded), and records the assurance actually used in the vote, the resolution and the audit.
"""

from __future__ import annotations

from typing import Any

import pytest

from openwop_bridge.core.decisions.answer import answer_decision
from openwop_bridge.core.decisions.common import Answer
from openwop_bridge.core.errors import SenderConstraintMissingError, ValidationError
from openwop_bridge.core.kinds import APPROVAL
from openwop_bridge.core.kinds.approval import approval
from openwop_bridge.core.records import InterruptRecord, Mutation
from tests.core.build import NOW, approval_data, ids, interrupt, principal, run

ALICE = principal("alice")
BOB = principal("bob")


def gate(**data: Any) -> InterruptRecord:
    return interrupt("approval", approval_data("accept", "reject", **data))


def decide(record: InterruptRecord, value: Any, **answer: Any) -> Mutation:
    answer.setdefault("principal", ALICE)
    who = answer.pop("principal")
    return answer_decision(Answer(who, value, **answer), NOW, ids())(record, run())


def test_a_bearer_answer_to_a_key_bound_gate_is_refused_and_records_nothing() -> None:
    with pytest.raises(SenderConstraintMissingError) as caught:
        decide(gate(assurance="key-bound"), {"action": "accept"})
    assert caught.value.status == 401 and caught.value.code == "sender_constraint_missing"


def test_a_bearer_link_answer_to_a_key_bound_gate_is_refused() -> None:
    with pytest.raises(SenderConstraintMissingError):
        decide(
            gate(assurance="key-bound"),
            {"action": "reject"},
            principal=None,
            surface="token",
            token_subject="alice",
            token_intent="resolve",
        )


def test_a_key_bound_answer_settles_and_records_its_assurance() -> None:
    m = decide(gate(assurance="key-bound"), {"action": "accept"}, assurance="key-bound")
    assert m.error is None and m.interrupt_status == "resolved"
    assert m.resolution is not None and m.resolution["assurance"] == "key-bound"
    assert m.interrupt_state is not None and m.interrupt_state["votes"][0]["assurance"] == "key-bound"
    assert m.audit[0]["action"] == "approval.vote.accept"
    assert m.audit[0]["details"]["assurance"] == "key-bound"


def test_a_bearer_gate_still_answers_and_says_so() -> None:
    m = decide(gate(), {"action": "accept"})
    assert m.interrupt_status == "resolved"
    assert m.resolution is not None and m.resolution["assurance"] == "bearer"
    assert m.audit[0]["details"]["assurance"] == "bearer"


def test_a_gate_says_bearer_or_key_bound_only() -> None:
    assert APPROVAL.data_problems({"assurance": "key-bound"}) == []
    assert APPROVAL.data_problems({"assurance": "bearer"}) == []
    assert APPROVAL.data_problems({"assurance": "sender-constrained"}) == [
        'data.assurance: must be "bearer" or "key-bound"'
    ]
    payload = approval("Ship?", assurance="key-bound")
    assert payload["data"]["assurance"] == "key-bound"
    assert "assurance" not in approval("Ship?")["data"]


def test_an_answer_says_bearer_or_key_bound_only() -> None:
    with pytest.raises(ValidationError):
        Answer(ALICE, {"action": "accept"}, assurance="strong")
