"""The conversation primitive (RFC 0005): many turns inside one node.

``conv = await ctx.conversation(...)`` raises an instant ``conversation.start``
interrupt and emits ``conversation.opened``; each ``await conv.exchange(prompt)``
is a ``conversation.exchange`` interrupt that suspends the node until a person
(or peer) answers; ``await conv.close(outcome)`` raises an instant
``conversation.close`` and emits ``conversation.closed``. The node never leaves
between turns: on every resume it runs again from its top and the earlier
turns come back from the log without asking anyone.

Turns are ``ConversationTurn`` documents with ``messageId =
${conversationId}:${turnIndex}:${role}``: turn 0 opens, exchange *i* has the
agent's prompt ``…:i:agent`` and the answer ``…:i:user``, and the closing turn
has the next index. They fold into a ``message`` channel shown in the snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bridge import kinds
from bridge.auth import Principal
from bridge.clock import iso_ms
from bridge.errors import (
    ConversationClosedError,
    InterruptAlreadyResolvedError,
    InterruptTimeoutError,
    ValidationError,
)
from bridge.events import EventDraft
from bridge.store.base import InterruptRecord, Mutation
from bridge.workflow import WorkflowDefinition

if TYPE_CHECKING:
    from bridge.activation import InterruptHandle
    from bridge.context import NodeContext

DEFAULT_CHANNEL = "messages"
_UNSET: Any = object()
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


def _event(ctx: NodeContext, type_: str, payload: dict[str, Any], node_id: str, causation: str | None) -> EventDraft:
    return EventDraft(
        event_id=ctx._host.new_id("evt"),
        type=type_,
        payload=payload,
        timestamp_ms=ctx._host.clock_now_ms(),
        node_id=node_id,
        causation_id=causation,
    )


def _resolved_event(record: InterruptRecord, now: int, value: Any, by: str) -> dict[str, Any]:
    return {
        "nodeId": record.node_id,
        "interruptId": record.interrupt_id,
        "kind": record.kind,
        "resumeValue": value,
        "resolvedAt": iso_ms(now),
        "resolvedBy": by,
    }


class Conversation:
    """An open conversation inside a node. Create it with ``ctx.conversation(...)``."""

    def __init__(
        self, ctx: NodeContext, conversation_id: str, channel: str, speaker: str, deadline_ms: int | None
    ) -> None:
        self._ctx = ctx
        self.id = conversation_id
        self.channel = channel
        self.speaker = speaker
        self.deadline_ms = deadline_ms
        self.turn_index = 0
        self.closed = False
        self.outcome: Any = None
        self.close_reason: str | None = None
        #: Who ended it: ``"peer"`` (the person answered with close), ``"node"`` or ``"timeout"``.
        self.closed_by: str | None = None
        self.turns: list[dict[str, Any]] = []

    async def exchange(
        self,
        prompt: str,
        *,
        outcome_schema: Mapping[str, Any] | None = None,
        auto_answer: Any = _UNSET,
        key: str | None = None,
        address: str | None = None,
    ) -> Any:
        """Ask one turn and wait for the answer; return its validated content.

        Returns ``None`` when the person closes the conversation instead of
        answering (``conv.closed`` is then True and ``conv.outcome`` holds their
        outcome). Raises :class:`~bridge.errors.ConversationClosedError` after a
        close, and :class:`~bridge.errors.InterruptTimeoutError` once the
        conversation's deadline has passed (after emitting ``conversation.closed``).

        ``auto_answer`` answers the turn at once, as the host itself (used by the
        conformance ``mockAutoResume`` mode); the events are those of a real turn.
        ``key`` / ``address`` are for callers whose turns do not come in a fixed
        order (an adapter following another runtime's state).
        """
        handle = await self.request_exchange(
            prompt, outcome_schema=outcome_schema, auto_answer=auto_answer, key=key, address=address
        )
        if self.closed and self.closed_by == "peer":
            return None
        return handle.result()

    async def request_exchange(
        self,
        prompt: str,
        *,
        outcome_schema: Mapping[str, Any] | None = None,
        auto_answer: Any = _UNSET,
        key: str | None = None,
        address: str | None = None,
    ) -> InterruptHandle:
        """Register the next turn without suspending; see :meth:`exchange`."""
        if self.closed:
            raise ConversationClosedError(f"conversation {self.id} is closed; no more exchanges")
        ctx = self._ctx
        index = self.turn_index + 1
        now = ctx._host.clock_now_ms()
        data: dict[str, Any] = {"conversationId": self.id, "prompt": prompt, "turnIndex": index}
        if outcome_schema is not None:
            kinds.compile_schema(outcome_schema, "outcomeSchema")
            data["outcomeSchema"] = dict(outcome_schema)
        payload: dict[str, Any] = {"kind": "conversation.exchange", "data": data}
        if key is not None:
            payload["key"] = key
            live = await ctx.lookup_key(key) is None
        else:
            live = ctx.peek_next() is None and await ctx.source_for_next() is None
        if live and self.deadline_ms is not None:
            if now >= self.deadline_ms:
                await self._close(None, "timeout", role="system", content="conversation timed out")
                raise InterruptTimeoutError(f"conversation {self.id} timed out")
            payload["timeoutMs"] = self.deadline_ms - now
        prompt_turn = make_turn(self.id, index, "agent", prompt, now, sender=self.speaker, speaker=self.speaker)
        state = {"promptTurn": prompt_turn, "conversationId": self.id, "channel": self.channel}
        instant = None
        if auto_answer is not _UNSET:

            def instant(record: InterruptRecord) -> tuple[dict[str, Any], list[EventDraft]]:
                host = Principal(id="host:conformance-mock", tenant=ctx.tenant)
                m = answer_exchange(record, {"content": auto_answer}, host, ctx._host.clock_now_ms(), ctx._host.new_id)
                assert m.resolution is not None
                resolution = {k: v for k, v in m.resolution.items() if k != "emitted"}
                return resolution, m.events

        handle = await ctx.request(
            payload,
            address=address,
            extra={"conversationId": self.id, "turnIndex": index, "promptTurn": prompt_turn, "state": state},
            instant=instant,
        )
        self.turn_index = index
        record = handle.record
        self.turns.append(record.state.get("promptTurn", prompt_turn))
        if record.status == "expired":
            self.closed = True
            self.close_reason = "timeout"
            self.closed_by = "timeout"
        if record.status == "resolved":
            resolution = record.resolution or {}
            turn = resolution.get("turn")
            if turn:
                self.turns.append(turn)
            if resolution.get("closed"):
                self.closed = True
                self.outcome = resolution.get("outcome")
                self.close_reason = resolution.get("reason") or "closed-by-user"
                self.closed_by = "peer"
        return handle

    async def close(
        self, outcome: Any = None, *, reason: str | None = None, message: str | None = None, key: str | None = None
    ) -> None:
        """Close the conversation with an outcome (no-op when already closed).

        ``message`` is the agent's closing words (the final turn); ``reason`` is
        the machine-readable why (``goal-reached``, ``max-turns``, …).
        """
        if self.closed:
            return
        await self._close(outcome, reason, role="agent", content=message or reason or "conversation closed", key=key)

    async def _close(
        self, outcome: Any, reason: str | None, *, role: str, content: str, key: str | None = None
    ) -> None:
        ctx = self._ctx
        index = self.turn_index + 1
        data: dict[str, Any] = {"conversationId": self.id}
        if reason:
            data["reason"] = reason
        speaker = self.speaker if role == "agent" else None
        sender = self.speaker if role == "agent" else "system"
        final = make_turn(self.id, index, role, content, ctx._host.clock_now_ms(), sender=sender, speaker=speaker)

        def instant(record: InterruptRecord) -> tuple[dict[str, Any], list[EventDraft]]:
            now = ctx._host.clock_now_ms()
            closed = _event(
                ctx,
                "conversation.closed",
                {"conversationId": self.id, "turnIndex": index, "finalTurn": final, "outcome": outcome},
                record.node_id,
                record.state.get("suspendedEventId"),
            )
            resolved = _event(
                ctx, "interrupt.resolved", _resolved_event(record, now, None, "system"), record.node_id, None
            )
            resumed = _event(
                ctx,
                "node.resumed",
                {"nodeId": ctx.node_id, "interruptId": record.interrupt_id, "resumeValue": outcome},
                ctx.node_id,
                None,
            )
            return {"resumeValue": None, "resolvedBy": "system", "outcome": outcome}, [closed, resolved, resumed]

        handle = await ctx.request(
            {"kind": "conversation.close", "data": data, **({"key": key} if key else {})},
            extra={"conversationId": self.id, "state": {"finalTurn": final, "conversationId": self.id}},
            instant=instant,
        )
        self.turn_index = index
        self.closed = True
        self.outcome = outcome
        self.close_reason = reason
        self.closed_by = "timeout" if reason == "timeout" else "node"
        self.turns.append(handle.record.state.get("finalTurn", final))


async def open_conversation(
    ctx: NodeContext,
    *,
    title: str | None,
    initial_prompt: str | None,
    timeout_ms: int | None,
    channel: str | None,
    speaker_id: str | None,
    key: str | None = None,
    conversation_id: str | None = None,
) -> Conversation:
    """Start (or, on re-execution, recover) a conversation for ``ctx``'s node.

    With ``key`` the start is found by that key rather than by its place in the
    node's code, and ``conversation_id`` (if given) names a new conversation.
    """
    workflow = ctx._host.workflow
    chan = message_channel(workflow, channel or ctx.config.get("channel"))
    speaker = speaker_id or ctx.agent_id
    existing = await ctx.lookup_key(key) if key is not None else ctx.peek_next()
    source = await ctx.source_for_next() if key is None else None
    if existing is not None:
        conversation_id = existing.payload["data"]["conversationId"]
    elif source is not None:
        conversation_id = source.payload["data"]["conversationId"]
    else:
        conversation_id = conversation_id or f"conv:{ctx.run_id}:{ctx.node_id}:{ctx.next_interrupt_number()}"
    now = ctx._host.clock_now_ms()
    if initial_prompt:
        initial = make_turn(conversation_id, 0, "agent", initial_prompt, now, sender=speaker, speaker=speaker)
    else:
        initial = make_turn(conversation_id, 0, "system", title or "conversation opened", now, sender="system")
    data: dict[str, Any] = {"conversationId": conversation_id}
    if title:
        data["title"] = title
    if initial_prompt:
        data["initialPrompt"] = initial_prompt
    deadline = now + timeout_ms if timeout_ms else None

    def instant(record: InterruptRecord) -> tuple[dict[str, Any], list[EventDraft]]:
        opened_payload: dict[str, Any] = {"conversationId": conversation_id, "initialTurn": initial}
        opened_payload["agentId"] = speaker
        opened = _event(
            ctx, "conversation.opened", opened_payload, record.node_id, record.state.get("suspendedEventId")
        )
        resolved = _event(
            ctx,
            "interrupt.resolved",
            _resolved_event(record, ctx._host.clock_now_ms(), None, "system"),
            record.node_id,
            None,
        )
        return {"resumeValue": None, "resolvedBy": "system"}, [opened, resolved]

    handle = await ctx.request(
        {"kind": "conversation.start", "data": data, **({"key": key} if key else {})},
        extra={
            "conversationId": conversation_id,
            "channel": chan,
            "state": {"initialTurn": initial, "channel": chan, "deadline": deadline, "conversationId": conversation_id},
        },
        instant=instant,
    )
    state = handle.record.state
    if source is not None:
        # A replay fork keeps the source's turns but gets its own time to answer.
        state["deadline"] = deadline
    conv = Conversation(ctx, conversation_id, state.get("channel", chan), speaker, state.get("deadline"))
    conv.turns.append(state.get("initialTurn", initial))
    return conv


# --- answering an exchange (the host side) --------------------------------------------


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
    if operation == "exchange":
        kinds.validate_against(data.get("outcomeSchema"), content, "answer")
    turn = {
        "messageId": supplied_id or expected_id,
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
    from bridge import spec

    problems = [e.message for e in spec.validator("conversation-turn.schema.json").iter_errors(turn)]
    if problems:
        raise ValidationError("the turn is not a valid ConversationTurn", details={"problems": problems})
    resolved_at = iso_ms(now)
    emitted: list[dict[str, Any]] = []
    if operation == "close":
        resume_value: Any = {"operation": "close", "outcome": outcome}
        emitted.append(
            {
                "type": "conversation.closed",
                "payload": {"conversationId": cid, "turnIndex": index, "finalTurn": turn, "outcome": outcome},
                "nodeId": record.node_id,
            }
        )
    else:
        resume_value = content
        emitted.append(
            {
                "type": "conversation.exchanged",
                "payload": {"conversationId": cid, "turnIndex": index, "turn": turn},
                "nodeId": record.node_id,
            }
        )
    resolved = {
        "nodeId": record.node_id,
        "interruptId": record.interrupt_id,
        "kind": record.kind,
        "resumeValue": resume_value,
        "resolvedAt": resolved_at,
        "resolvedBy": principal.id,
    }
    emitted.insert(0, {"type": "interrupt.resolved", "payload": resolved, "nodeId": record.node_id})
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


# --- folding turns into channels -------------------------------------------------------


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
