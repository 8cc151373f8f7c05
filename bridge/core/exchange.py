"""The decisions of the conversation primitive (RFC 0005), free of any node or store.

How an answer to a ``conversation.exchange`` becomes a turn (or a close), what a timed-out
conversation records, what a turn document looks like, and how the log's conversation
events fold into ``message`` channels. The node-side half, :class:`~bridge.runtime.conversation.Conversation`,
uses these when it replays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bridge import spec
from bridge.core import kinds
from bridge.core.auth import Principal
from bridge.core.clock import iso_ms
from bridge.core.errors import (
    InterruptAlreadyResolvedError,
    ValidationError,
)
from bridge.core.events import EventDraft
from bridge.core.records import InterruptRecord, Mutation
from bridge.core.workflow import WorkflowDefinition

DEFAULT_CHANNEL = "messages"
_FOLD_TYPES = ("conversation.opened", "conversation.exchanged", "conversation.closed", "node.suspended")


def message_channel(workflow: WorkflowDefinition, configured: str | None = None) -> str:
    """The channel a conversation's turns fold into: configured, the workflow's
    first ``message``-reducer channel, or ``messages``."""
    if configured:
        return configured
    for name, decl in workflow.channels.items():
        if decl.get("reducer") == "message":
            return str(name)
    return DEFAULT_CHANNEL


def make_turn(
    conversation_id: str, index: int, role: str, content: Any, ts: int, *, sender: str, speaker: str | None = None
) -> dict[str, Any]:
    """A ``ConversationTurn`` document."""
    turn: dict[str, Any] = {
        "messageId": f"{conversation_id}:{index}:{role}",
        "from": sender,
        "content": content,
        "ts": ts,
        "role": role,
        "turnIndex": index,
    }
    if speaker is not None:
        turn["speakerId"] = speaker
    return turn


def resolved_event_payload(record: InterruptRecord, now: int, value: Any, by: str) -> dict[str, Any]:
    return {
        "nodeId": record.node_id,
        "interruptId": record.interrupt_id,
        "kind": record.kind,
        "resumeValue": value,
        "resolvedAt": iso_ms(now),
        "resolvedBy": by,
    }


def _normalize_answer(value: Any) -> tuple[str, dict[str, Any] | None, Any, Any, str | None]:
    """``(operation, turn, content, outcome, reason)`` from the accepted answer shapes."""
    if isinstance(value, str | int | float | bool | list):
        return "exchange", None, value, None, None  # a reply, or a value of the outcomeSchema
    if not isinstance(value, Mapping):
        raise ValidationError(
            "a conversation answer is a string, {content}, a value of the exchange's outcomeSchema, "
            "or {operation: exchange|close, turn?, outcome?}"
        )
    operation = value.get("operation", "exchange")
    if operation not in ("exchange", "close"):
        raise ValidationError("'operation' must be 'exchange' or 'close'")
    turn = value.get("turn")
    if turn is not None and not isinstance(turn, Mapping):
        raise ValidationError("'turn' must be a ConversationTurn object")
    if turn is not None:
        content = turn.get("content")
    elif "content" in value:
        content = value["content"]
    elif operation == "close":
        content = value.get("reason")  # the person's closing words, if any
    elif not set(value) & {"operation", "outcome", "reason"}:
        # An object of the exchange's outcomeSchema itself (a form built from that schema).
        content = dict(value)
    else:
        raise ValidationError("an exchange answer needs 'content' (or a 'turn' with content)")
    reason = value.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ValidationError("'reason' must be a string")
    return operation, dict(turn) if turn else None, content, value.get("outcome"), reason


def _earlier_turn(cid: str, message_id: str, index: int) -> int | None:
    """The turn index ``message_id`` names when it is an earlier turn of conversation ``cid``."""
    prefix = f"{cid}:"
    if not message_id.startswith(prefix):
        return None
    number, _, role = message_id[len(prefix) :].partition(":")
    if not number.isdigit() or role not in ("user", "system", "agent") or int(number) >= index:
        return None
    return int(number)


def answer_exchange(record: InterruptRecord, value: Any, principal: Principal, now: int, new_id: Any) -> Mutation:
    """The decision for an answer to a ``conversation.exchange`` (or a retry of one).

    Validates against ``outcomeSchema`` (400 leaves the exchange open), builds the
    user turn, and emits ``conversation.exchanged`` — or, for ``close``,
    ``conversation.closed`` with the person's outcome.
    """
    data = record.payload["data"]
    cid = data["conversationId"]
    index = int(data.get("turnIndex") or record.state.get("promptTurn", {}).get("turnIndex", 1))
    operation, turn_in, content, outcome, reason = _normalize_answer(value)
    procedural = operation == "close" and turn_in is None and content is None
    if procedural:
        # A close without words is not something the person said: a system turn records it.
        content = f"{principal.id} closed the conversation"
    expected_id = f"{cid}:{index}:{'system' if procedural else 'user'}"
    supplied_id = turn_in.get("messageId") if turn_in else None
    retry = _retry(record, cid, index, expected_id, supplied_id)
    if retry is not None:
        return retry
    if operation == "exchange":
        kinds.validate_against(data.get("outcomeSchema"), content, "answer")
    turn = _answer_turn(turn_in, supplied_id or expected_id, content, procedural, principal, now, index)
    return _exchanged(record, operation, turn, content, outcome, reason, principal, now, new_id)


def _retry(record: InterruptRecord, cid: str, index: int, expected_id: str, supplied_id: str | None) -> Mutation | None:
    """The no-op answer to a retry of a turn already taken; an error for a closed or foreign one; else None."""
    if not record.open:
        previous = (record.resolution or {}).get("turn") or {}
        if supplied_id and previous.get("messageId") == supplied_id:
            return Mutation(result={"status": "resolved", "idempotent": True})
        if record.status == "resolved" and (record.resolution or {}).get("closed"):
            raise ValidationError(f"conversation {cid} is closed; no more exchanges")
        raise InterruptAlreadyResolvedError("this exchange was already answered")
    if supplied_id and supplied_id != expected_id:
        earlier = _earlier_turn(cid, supplied_id, index)
        if earlier is None:
            raise ValidationError(
                f"this exchange's turn is {expected_id!r}; the answer names {supplied_id!r}",
                details={"messageId": expected_id, "turnIndex": index},
            )
        # A turn of this conversation that was already taken: a retry, with no second effect.
        return Mutation(result={"status": "resolved", "idempotent": True, "turnIndex": earlier})
    return None


def _answer_turn(
    turn_in: Mapping[str, Any] | None,
    message_id: str,
    content: Any,
    procedural: bool,
    principal: Principal,
    now: int,
    index: int,
) -> dict[str, Any]:
    """The person's (or, for a close without words, the system's) turn, checked as a ConversationTurn."""
    turn = {
        "messageId": message_id,
        "from": "system" if procedural else "user",
        "content": content,
        "ts": now,
        "role": "system" if procedural else "user",
        "turnIndex": index,
        "speakerId": principal.id,
    }
    if turn_in:
        for name in ("from", "ts", "to", "groupId", "agent", "speakerId"):
            if name in turn_in:
                turn[name] = turn_in[name]
        if turn_in.get("role", "user") not in ("user", "system", "agent"):
            raise ValidationError("'turn.role' must be user, agent or system")
        turn["role"] = turn_in.get("role", "user")
        if "turnIndex" in turn_in and turn_in["turnIndex"] != index:
            raise ValidationError(
                f"this exchange is turn {index}; the answer says turn {turn_in['turnIndex']}",
                details={"turnIndex": index},
            )
    problems = [e.message for e in spec.validator("conversation-turn.schema.json").iter_errors(turn)]
    if problems:
        raise ValidationError("the turn is not a valid ConversationTurn", details={"problems": problems})
    return turn


def _exchanged(
    record: InterruptRecord,
    operation: str,
    turn: dict[str, Any],
    content: Any,
    outcome: Any,
    reason: str | None,
    principal: Principal,
    now: int,
    new_id: Any,
) -> Mutation:
    """Resolve the exchange with ``turn``: ``conversation.exchanged``, or ``conversation.closed`` for a close."""
    cid, index = record.payload["data"]["conversationId"], turn["turnIndex"]
    resolved_at = iso_ms(now)
    if operation == "close":
        resume_value: Any = {"operation": "close", "outcome": outcome}
        closed = {"conversationId": cid, "turnIndex": index, "finalTurn": turn, "outcome": outcome}
        said = {"type": "conversation.closed", "payload": closed, "nodeId": record.node_id}
    else:
        resume_value = content
        exchanged = {"conversationId": cid, "turnIndex": index, "turn": turn}
        said = {"type": "conversation.exchanged", "payload": exchanged, "nodeId": record.node_id}
    resolved = {
        "nodeId": record.node_id,
        "interruptId": record.interrupt_id,
        "kind": record.kind,
        "resumeValue": resume_value,
        "resolvedAt": resolved_at,
        "resolvedBy": principal.id,
    }
    emitted: list[dict[str, Any]] = [
        {"type": "interrupt.resolved", "payload": resolved, "nodeId": record.node_id},
        said,
    ]
    resolution: dict[str, Any] = {
        "resumeValue": content if operation == "exchange" else None,
        "resolvedBy": principal.id,
        "resolvedAt": resolved_at,
        "turn": turn,
        "operation": operation,
        "emitted": emitted,
    }
    if operation == "close":
        resolution.update({"closed": True, "outcome": outcome, "reason": reason or "closed-by-user"})
    events = [EventDraft(new_id("evt"), e["type"], e["payload"], now, node_id=e["nodeId"]) for e in emitted]
    return Mutation(
        interrupt_status="resolved",
        resolution=resolution,
        resolved_at_ms=now,
        events=events,
        wake=True,
        result={"status": "resolved", "turnIndex": index, "closed": operation == "close"},
    )


def timeout_close_events(record: InterruptRecord, now: int, new_id: Any) -> list[dict[str, Any]]:
    """When a pending exchange hits the conversation deadline: close with a system turn."""
    cid = record.payload["data"]["conversationId"]
    index = int(record.payload["data"].get("turnIndex") or 1)
    final = make_turn(cid, index, "system", "conversation timed out", now, sender="system")
    return [
        {
            "type": "conversation.closed",
            "payload": {"conversationId": cid, "turnIndex": index, "finalTurn": final, "outcome": None},
            "nodeId": record.node_id,
        }
    ]


def fold_channels(events: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The ``message`` channels of a run, folded from its conversation events.

    Idempotent on ``messageId``: a turn seen twice is kept once.
    """
    channel_of: dict[str, str] = {}
    channels: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()

    def add(cid: str, turn: Mapping[str, Any] | None) -> None:
        if not turn or turn.get("messageId") in seen:
            return
        seen.add(str(turn.get("messageId")))
        channels.setdefault(channel_of.get(cid, DEFAULT_CHANNEL), []).append(dict(turn))

    for doc in events:
        payload = doc.get("payload") or {}
        kind = doc.get("type")
        if kind == "node.suspended":
            cid = payload.get("conversationId")
            if cid and payload.get("channel"):
                channel_of[cid] = payload["channel"]
                channels.setdefault(payload["channel"], [])
            if cid and payload.get("promptTurn"):
                add(cid, payload["promptTurn"])
        elif kind == "conversation.opened":
            add(payload["conversationId"], payload.get("initialTurn"))
        elif kind == "conversation.exchanged":
            add(payload["conversationId"], payload.get("turn"))
        elif kind == "conversation.closed":
            add(payload["conversationId"], payload.get("finalTurn"))
    return channels


FOLD_EVENT_TYPES: tuple[str, ...] = _FOLD_TYPES
