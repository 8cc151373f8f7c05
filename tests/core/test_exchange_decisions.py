"""Conversation answers decided on records alone: turns, closes, retries and foreign message ids."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_bridge.core.decisions.answer import answer_decision
from openwop_bridge.core.decisions.common import Answer
from openwop_bridge.core.decisions.exchange import answer_exchange, fold_channels
from openwop_bridge.core.errors import InterruptAlreadyResolvedError, ValidationError
from openwop_bridge.core.records import InterruptRecord, Mutation
from tests.core.build import NOW, applied, event, ids, interrupt, principal, run, types

ALICE = principal("alice")


def exchange(turn: int = 2, **data: Any) -> InterruptRecord:
    return interrupt("conversation.exchange", {"conversationId": "c1", "turnIndex": turn, "prompt": "and?", **data})


def reply(record: InterruptRecord, value: Any) -> Mutation:
    return answer_exchange(record, value, ALICE, NOW, ids())


def test_a_reply_becomes_the_users_turn() -> None:
    m = reply(exchange(), "hello")
    assert m.interrupt_status == "resolved" and m.wake
    assert types(m) == ["interrupt.resolved", "conversation.exchanged"]
    turn = event(m, "conversation.exchanged")["turn"]
    assert turn == {
        "messageId": "c1:2:user",
        "from": "user",
        "content": "hello",
        "ts": NOW,
        "role": "user",
        "turnIndex": 2,
        "speakerId": "alice",
    }
    assert m.resolution is not None and m.resolution["resumeValue"] == "hello" and m.resolution["turn"] == turn
    assert m.result == {"status": "resolved", "turnIndex": 2, "closed": False}


def test_content_and_turn_shapes_are_the_same_reply() -> None:
    for value in ({"content": "hi"}, {"turn": {"content": "hi", "messageId": "c1:2:user"}}):
        m = reply(exchange(), value)
        assert event(m, "conversation.exchanged")["turn"]["content"] == "hi"


def test_a_close_without_words_is_a_system_turn() -> None:
    m = reply(exchange(), {"operation": "close", "outcome": {"ok": True}})
    assert types(m) == ["interrupt.resolved", "conversation.closed"]
    closed = event(m, "conversation.closed")
    assert closed["outcome"] == {"ok": True}
    assert closed["finalTurn"]["messageId"] == "c1:2:system"
    assert closed["finalTurn"]["content"] == "alice closed the conversation"
    assert m.resolution is not None
    assert (m.resolution["closed"], m.resolution["reason"], m.resolution["resumeValue"]) == (
        True,
        "closed-by-user",
        None,
    )
    assert event(m, "interrupt.resolved")["resumeValue"] == {"operation": "close", "outcome": {"ok": True}}


def test_a_close_with_words_is_the_users_last_turn() -> None:
    m = reply(exchange(), {"operation": "close", "content": "bye", "reason": "done"})
    assert event(m, "conversation.closed")["finalTurn"]["messageId"] == "c1:2:user"
    assert m.resolution is not None and m.resolution["reason"] == "done"


def test_a_foreign_message_id_is_refused_and_leaves_the_exchange_open() -> None:
    for foreign in ("c2:1:user", "c1:2:robot", "c1:5:user", "nonsense"):
        with pytest.raises(ValidationError) as caught:
            reply(exchange(), {"turn": {"content": "x", "messageId": foreign}})
        assert caught.value.details == {"messageId": "c1:2:user", "turnIndex": 2}


def test_an_earlier_turn_named_on_the_open_turn_is_not_its_answer() -> None:
    # The engine decides such an answer on the earlier turn's own row; the open turn never takes it.
    with pytest.raises(InterruptAlreadyResolvedError) as caught:
        reply(exchange(3), {"turn": {"content": "x", "messageId": "c1:1:user"}})
    assert caught.value.details == {"messageId": "c1:1:user", "turnIndex": 1}


def test_a_retry_after_the_answer_is_idempotent_and_anything_else_refused() -> None:
    record = exchange()
    done = applied(record, reply(record, {"turn": {"content": "x", "messageId": "c1:2:user"}}))
    again = reply(done, {"turn": {"content": "x", "messageId": "c1:2:user"}})
    assert again.result == {"status": "resolved", "idempotent": True, "turnIndex": 2} and not again.events
    with pytest.raises(InterruptAlreadyResolvedError):
        reply(done, "something else")
    with pytest.raises(InterruptAlreadyResolvedError) as caught:
        reply(done, {"turn": {"content": "y", "messageId": "c1:2:user"}})  # the same id, other words
    assert caught.value.details == {"messageId": "c1:2:user", "turnIndex": 2}
    with pytest.raises(InterruptAlreadyResolvedError):
        reply(done, {"operation": "close", "turn": {"content": "x", "messageId": "c1:2:user"}})
    closed = applied(record, reply(record, {"operation": "close"}))
    with pytest.raises(ValidationError, match="closed"):
        reply(closed, "more")


def test_the_outcome_schema_and_turn_rules_hold() -> None:
    schema = {"type": "object", "required": ["size"], "properties": {"size": {"type": "integer"}}}
    with pytest.raises(ValidationError):
        reply(exchange(outcomeSchema=schema), {"content": {"size": "big"}})
    formed = reply(exchange(outcomeSchema=schema), {"size": 3})  # a form built from the schema
    assert formed.resolution is not None and formed.resolution["resumeValue"] == {"size": 3}
    with pytest.raises(ValidationError, match="turn 2"):
        reply(exchange(), {"turn": {"content": "x", "turnIndex": 4}})
    with pytest.raises(ValidationError, match="role"):
        reply(exchange(), {"turn": {"content": "x", "role": "robot"}})
    with pytest.raises(ValidationError):
        reply(exchange(), {"operation": "shout", "content": "x"})
    with pytest.raises(ValidationError):
        reply(exchange(), None)


def test_start_and_close_interrupts_are_not_answerable() -> None:
    for kind in ("conversation.start", "conversation.close"):
        record = interrupt(kind, {"conversationId": "c1"})
        with pytest.raises(ValidationError):
            answer_decision(Answer(ALICE, "hi"), NOW, ids())(record, run())


def test_a_link_answer_speaks_as_its_subject() -> None:
    decide = answer_decision(
        Answer(None, "hi", surface="token", token_intent="resolve", token_subject="carol"), NOW, ids()
    )
    m = decide(exchange(), run())
    assert event(m, "conversation.exchanged")["turn"]["speakerId"] == "carol"


def test_turns_fold_once_into_their_channel() -> None:
    first = reply(exchange(1), "a")
    turn = event(first, "conversation.exchanged")["turn"]
    docs = [
        {"type": "node.suspended", "payload": {"conversationId": "c1", "channel": "chat"}},
        {"type": "conversation.exchanged", "payload": {"conversationId": "c1", "turn": turn}},
        {"type": "conversation.exchanged", "payload": {"conversationId": "c1", "turn": turn}},
        {
            "type": "conversation.exchanged",
            "payload": {"conversationId": "c9", "turn": {**turn, "messageId": "c9:1:user"}},
        },
    ]
    assert fold_channels(docs) == {"chat": [turn], "messages": [{**turn, "messageId": "c9:1:user"}]}
