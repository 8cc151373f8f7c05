"""The decisions of the conversation primitive (RFC 0005), free of any node or store.

How an answer to a ``conversation.exchange`` becomes a turn (or a close), what a timed-out
conversation records, what a turn document looks like, and how the log's conversation
events fold into ``message`` channels. The node-side half, :class:`~openwop_bridge.runtime.conversation.Conversation`,
uses these when it replays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openwop_bridge import spec
from openwop_bridge.core import kinds
from openwop_bridge.core.auth import Principal, subject_ref
from openwop_bridge.core.conversation_limits import ConversationLimits, message_bytes
from openwop_bridge.core.decision_record import DecisionDraft
from openwop_bridge.core.decisions.common import NewId, resolution_of, resolved_payload, settle
from openwop_bridge.core.errors import (
    InterruptAlreadyResolvedError,
    ValidationError,
)
from openwop_bridge.core.records import InterruptRecord, Mutation
from openwop_bridge.core.workflow import WorkflowDefinition

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
    """The ``interrupt.resolved`` payload of an exchange settled by the node itself."""
    return resolved_payload(record, now, by, value)


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


def names_its_turn(value: Any) -> bool:
    """Whether an answer to an exchange names the turn it answers (``turn.messageId`` or ``turn.turnIndex``)."""
    turn = value.get("turn") if isinstance(value, Mapping) else None
    return isinstance(turn, Mapping) and ("messageId" in turn or "turnIndex" in turn)


def named_earlier_turn(record: InterruptRecord, value: Any) -> int | None:
    """The earlier turn of ``record``'s conversation an answer to ``record`` names (by its
    ``turn.messageId``, else its ``turn.turnIndex``), if any.

    Such an answer is for that turn: it is decided on that turn's row (the same ``messageId`` and
    content is an idempotent retry, anything else a conflict), never on the turn open now.
    """
    turn = value.get("turn") if isinstance(value, Mapping) else None
    if not isinstance(turn, Mapping):
        return None
    index = exchange_index(record)
    message_id = turn.get("messageId")
    if isinstance(message_id, str):
        return _earlier_turn(record.payload["data"]["conversationId"], message_id, index)
    named = turn.get("turnIndex")
    if isinstance(named, int) and not isinstance(named, bool) and 1 <= named < index:
        return named
    return None


def _earlier_turn(cid: str, message_id: str, index: int) -> int | None:
    """The turn index ``message_id`` names when it is an earlier turn of conversation ``cid``."""
    prefix = f"{cid}:"
    if not message_id.startswith(prefix):
        return None
    number, _, role = message_id[len(prefix) :].partition(":")
    if not number.isdigit() or role not in ("user", "system", "agent") or int(number) >= index:
        return None
    return int(number)


@dataclass(frozen=True, slots=True)
class PreparedExchange:
    """An answer to an exchange checked against what never changes: the exchange's payload.

    The errors are kept, not raised, so the decision raises each where its check stands:
    ``shape_error`` first, then the retry rules on the current row, then ``error``
    (the ``outcomeSchema`` and the ConversationTurn checks).
    """

    index: int
    now: int
    shape_error: Exception | None = None
    operation: str = "exchange"
    content: Any = None
    outcome: Any = None
    reason: str | None = None
    expected_id: str = ""
    supplied_id: str | None = None
    by: str = ""
    turn: dict[str, Any] | None = None
    error: Exception | None = None
    #: The answerer's subject as recorded (:func:`~openwop_bridge.core.auth.subject_ref`), when they have one.
    by_subject: dict[str, str] | None = None


def answered_bytes(record: InterruptRecord) -> int:
    """The bytes the exchange's conversation answered before it (kept in its row when it was raised)."""
    used = record.state.get("answeredBytes")
    return used if isinstance(used, int) and not isinstance(used, bool) and used >= 0 else 0


def turn_bytes(record: InterruptRecord) -> int:
    """What an answered exchange adds to its conversation's answered bytes (0 when it is not answered)."""
    resolution = record.resolution or {}
    turn = resolution.get("turn")
    if record.status != "resolved" or not isinstance(turn, Mapping):
        return 0
    closing = bool(resolution.get("closed"))
    return message_bytes(turn, resolution.get("outcome") if closing else None, None)


def exchange_index(record: InterruptRecord) -> int:
    """The turn index an exchange interrupt waits for."""
    data = record.payload["data"]
    return int(data.get("turnIndex") or record.state.get("promptTurn", {}).get("turnIndex", 1))


def prepare_exchange(
    record: InterruptRecord,
    value: Any,
    principal: Principal,
    now: int,
    limits: ConversationLimits | None = None,
) -> PreparedExchange:
    """Normalise and check an answer to a ``conversation.exchange`` without looking at its state
    (the bytes its conversation answered before it are in the exchange's row, set when it was raised)."""
    data = record.payload["data"]
    cid = data["conversationId"]
    index = exchange_index(record)
    try:
        operation, turn_in, content, outcome, reason = _normalize_answer(value)
    except Exception as exc:  # raised by the decision, in its place
        return PreparedExchange(index=index, now=now, shape_error=exc)
    procedural = operation == "close" and turn_in is None and content is None
    if procedural:
        # A close without words is not something the person said: a system turn records it.
        content = f"{principal.id} closed the conversation"
    expected_id = f"{cid}:{index}:{'system' if procedural else 'user'}"
    supplied_id = turn_in.get("messageId") if turn_in else None
    turn: dict[str, Any] | None = None
    error: Exception | None = None
    try:
        if operation == "exchange":
            kinds.validate_against(data.get("outcomeSchema"), content, "answer")
        turn = _answer_turn(turn_in, supplied_id or expected_id, content, procedural, principal, now, index)
        if limits is not None:
            closing = operation == "close"
            size = message_bytes(turn, outcome, reason) if closing else message_bytes(turn)
            wordless = procedural and outcome is None
            limits.check(size, answered_bytes(record), index, closing=closing, wordless=wordless)
    except Exception as exc:  # raised by the decision, after the retry rules
        error = exc
    return PreparedExchange(
        index,
        now,
        None,
        operation,
        content,
        outcome,
        reason,
        expected_id,
        supplied_id,
        principal.id,
        turn,
        error,
        subject_ref(principal),
    )


def answer_exchange(record: InterruptRecord, value: Any, principal: Principal, now: int, new_id: NewId) -> Mutation:
    """The decision for an answer to a ``conversation.exchange`` (or a retry of one).

    Validates against ``outcomeSchema`` (400 leaves the exchange open), builds the
    user turn, and emits ``conversation.exchanged`` — or, for ``close``,
    ``conversation.closed`` with the person's outcome.
    """
    return decide_exchange(record, prepare_exchange(record, value, principal, now), new_id)


def decide_exchange(
    record: InterruptRecord, prepared: PreparedExchange, new_id: NewId, decision: DecisionDraft | None = None
) -> Mutation:
    """:func:`answer_exchange` on an answer already prepared for this exchange (``decision``: the turn's draft for
    the decision record, when it is taken)."""
    if prepared.shape_error is not None:
        raise prepared.shape_error
    retry = _retry(record, prepared)
    if retry is not None:
        return retry
    if prepared.error is not None:
        raise prepared.error
    assert prepared.turn is not None
    return _exchanged(record, prepared, prepared.turn, new_id, decision)


def _retry(record: InterruptRecord, prepared: PreparedExchange) -> Mutation | None:
    """The no-op answer to a retry of a turn already taken; an error for a closed, taken or foreign one; else None.

    One answer wins a turn: once the turn is taken, another answer to it is
    ``interrupt_already_resolved`` (409), even one naming the same ``messageId`` with other content.
    Only the same ``messageId`` with the same answer is a retry (``idempotent: true``).
    """
    cid = record.payload["data"]["conversationId"]
    index, expected_id, supplied_id = prepared.index, prepared.expected_id, prepared.supplied_id
    if not record.open:
        resolution = record.resolution or {}
        previous = resolution.get("turn") or {}
        if supplied_id and previous.get("messageId") == supplied_id:
            if _same_answer(resolution, previous, prepared):
                return Mutation(result={"status": "resolved", "idempotent": True, "turnIndex": index})
            raise InterruptAlreadyResolvedError(
                f"turn {index} ({supplied_id!r}) was already answered with other content",
                details={"messageId": supplied_id, "turnIndex": index},
            )
        if record.status == "resolved" and resolution.get("closed"):
            raise ValidationError(f"conversation {cid} is closed; no more exchanges")
        raise InterruptAlreadyResolvedError(
            f"turn {index} of this conversation was already answered", details={"turnIndex": index}
        )
    if supplied_id and supplied_id != expected_id:
        earlier = _earlier_turn(cid, supplied_id, index)
        if earlier is None:
            raise ValidationError(
                f"this exchange's turn is {expected_id!r}; the answer names {supplied_id!r}",
                details={"messageId": expected_id, "turnIndex": index},
            )
        # An earlier turn, decided here on the open one: its answer cannot be compared, so it is not a retry.
        raise InterruptAlreadyResolvedError(
            f"turn {earlier} of this conversation was already answered",
            details={"messageId": supplied_id, "turnIndex": earlier},
        )
    return None


def _same_answer(resolution: Mapping[str, Any], previous: Mapping[str, Any], prepared: PreparedExchange) -> bool:
    """Whether ``prepared`` says what the turn's recorded answer said: operation, content and outcome."""
    if (resolution.get("operation") or "exchange") != prepared.operation:
        return False
    if previous.get("content") != prepared.content:
        return False
    return prepared.operation != "close" or resolution.get("outcome") == prepared.outcome


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
    prepared: PreparedExchange,
    turn: dict[str, Any],
    new_id: NewId,
    decision: DecisionDraft | None,
) -> Mutation:
    """Resolve the exchange with ``turn``: ``conversation.exchanged``, or ``conversation.closed`` for a close."""
    operation, now = prepared.operation, prepared.now
    value = prepared.content if operation == "exchange" else None
    extra: dict[str, Any] = {"turn": turn, "operation": operation}
    if prepared.by_subject is not None:
        extra["resolvedBySubject"] = prepared.by_subject
    if decision is not None:
        extra["decisionRecordId"] = decision.record_id
    if operation == "close":
        extra.update({"closed": True, "outcome": prepared.outcome, "reason": prepared.reason or "closed-by-user"})
    return settle(
        record,
        now,
        new_id,
        status="resolved",
        by=prepared.by,
        value=value,
        emitted=answer_events(record, resolution_of(now, prepared.by, value, extra)),
        extra=extra,
        records=[] if decision is None else [decision],
        result={"status": "resolved", "turnIndex": turn["turnIndex"], "closed": operation == "close"},
        rebuilt=True,
    )


def answer_events(record: InterruptRecord, resolution: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events an answered exchange emits, as ``{type, payload, nodeId}``, from its resolution alone:
    ``interrupt.resolved``, then ``conversation.exchanged`` (or ``conversation.closed`` for a close).

    The interrupt's row keeps the answer once; a replay fork builds these again from it.
    """
    cid, turn, outcome = record.payload["data"]["conversationId"], resolution["turn"], resolution.get("outcome")
    if resolution.get("closed"):
        value: Any = {"operation": "close", "outcome": outcome}
        closed = {"conversationId": cid, "turnIndex": turn["turnIndex"], "finalTurn": turn, "outcome": outcome}
        said = {"type": "conversation.closed", "payload": closed, "nodeId": record.node_id}
    else:
        value = resolution["resumeValue"]
        exchanged = {"conversationId": cid, "turnIndex": turn["turnIndex"], "turn": turn}
        said = {"type": "conversation.exchanged", "payload": exchanged, "nodeId": record.node_id}
    who, recorded = resolution.get("resolvedBySubject"), resolution.get("decisionRecordId")
    resolved = resolved_payload(
        record, 0, resolution["resolvedBy"], value, resolvedBySubject=who, decisionRecordId=recorded
    )
    resolved["resolvedAt"] = resolution["resolvedAt"]
    return [{"type": "interrupt.resolved", "payload": resolved, "nodeId": record.node_id}, said]


def close_events(record: InterruptRecord, resolution: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events of a conversation's close by its node, as ``{type, payload, nodeId}``, from the close
    interrupt alone: ``conversation.closed`` (its final turn is in the interrupt's state),
    ``interrupt.resolved`` and ``node.resumed`` (both with the outcome the resolution keeps)."""
    final, outcome = record.state["finalTurn"], resolution.get("outcome")
    cid = record.payload["data"]["conversationId"]
    closed = {"conversationId": cid, "turnIndex": final["turnIndex"], "finalTurn": final, "outcome": outcome}
    resolved = resolved_payload(record, record.resolved_at_ms or record.requested_at_ms, "system", None)
    resumed = {"nodeId": record.exec_node, "interruptId": record.interrupt_id, "resumeValue": outcome}
    return [
        {"type": "conversation.closed", "payload": closed, "nodeId": record.node_id},
        {"type": "interrupt.resolved", "payload": resolved, "nodeId": record.node_id},
        {"type": "node.resumed", "payload": resumed, "nodeId": record.exec_node},
    ]


#: The kinds whose settled events are built again from the interrupt's row rather than kept in its resolution.
REBUILT_KINDS = frozenset({kinds.CONVERSATION_EXCHANGE.name, kinds.CONVERSATION_CLOSE.name})


def rebuilt_events(record: InterruptRecord) -> list[dict[str, Any]]:
    """The events a resolved exchange or conversation close emitted, built again from its row (none for
    another interrupt: those keep theirs in ``resolution.emitted``)."""
    if record.status != "resolved" or record.resolution is None or record.kind not in REBUILT_KINDS:
        return []
    if record.kind == kinds.CONVERSATION_CLOSE.name:
        return close_events(record, record.resolution)
    return answer_events(record, record.resolution)


def exchange_conversation(kind: str, payload: Mapping[str, Any]) -> str | None:
    """The conversation an exchange interrupt belongs to (None for another kind): its row keeps it in a column
    of its own, so the close finds the conversation's answers through an index."""
    if kind != kinds.CONVERSATION_EXCHANGE.name:
        return None
    cid = payload.get("data", {}).get("conversationId")
    return cid if isinstance(cid, str) else None


def kept_answer(kind: str, status: str, resolution: Mapping[str, Any] | None) -> tuple[Any] | None:
    """``(answer,)`` when an interrupt of ``kind`` settled as ``status`` with ``resolution`` is an answered
    exchange that did not close its conversation, else None.

    The row keeps that answer in a column of its own: the close reads the conversation's answers
    without decoding each exchange's resolution.
    """
    if kind != kinds.CONVERSATION_EXCHANGE.name or status != "resolved" or resolution is None:
        return None
    if resolution.get("closed") is not None or "resumeValue" not in resolution:
        return None
    return (resolution["resumeValue"],)


def timeout_close_events(record: InterruptRecord, now: int, new_id: NewId) -> list[dict[str, Any]]:
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
