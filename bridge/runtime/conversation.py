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

from collections.abc import Mapping
from typing import Any, Protocol, TypedDict, Unpack

from openwop_bridge.core import kinds
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.decisions.exchange import (
    answer_exchange,
    answered_bytes,
    close_events,
    exchange_index,
    make_turn,
    message_channel,
    resolved_event_payload,
    turn_bytes,
)
from openwop_bridge.core.errors import ConversationClosedError, InterruptTimeoutError
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.core.workflow import WorkflowDefinition
from openwop_bridge.runtime.activation import InterruptHandle
from openwop_bridge.runtime.requests import Instant, RequestOptions

_UNSET: Any = object()


class ExchangeOptions(TypedDict, total=False):
    """The options of one exchange; see :meth:`Conversation.exchange`."""

    outcome_schema: Mapping[str, Any] | None
    auto_answer: Any
    key: str | None
    address: str | None


class ConversationNode(Protocol):
    """What a conversation needs from the node that holds it (a
    :class:`~openwop_bridge.runtime.context.NodeContext`)."""

    run_id: str
    tenant: str
    node_id: str
    config: dict[str, Any]

    @property
    def agent_id(self) -> str:
        """The agent the node speaks for."""

    @property
    def workflow(self) -> WorkflowDefinition:
        """The node's workflow."""

    def new_id(self, prefix: str) -> str:
        """A new unique id."""

    def now_ms(self) -> int:
        """The current time in epoch milliseconds."""

    @property
    def requested(self) -> int:
        """How many requests the earlier activations of the node's visit made."""

    async def next_recorded(self) -> InterruptRecord | None:
        """The interrupt the node's next request returns, if it exists."""

    async def recorded_request(self, ordinal: int) -> InterruptRecord | None:
        """The interrupt the node's visit raised at request place ``ordinal``, if any."""

    def skip_requests(self, ordinal: int) -> None:
        """Go on at request place ``ordinal`` without making the earlier requests again."""

    async def exchange_answers(self, conversation_id: str) -> list[tuple[str, Any]]:
        """``(key, answer)`` of each committed answer to the node's conversation, in turn order."""

    def known_interrupts(self) -> list[InterruptRecord]:
        """The interrupts this activation has loaded or raised."""

    def next_interrupt_number(self) -> int:
        """The counter the next automatic key uses."""

    async def lookup_key(self, key: str) -> InterruptRecord | None:
        """The interrupt of this run with ``key``."""

    async def source_for_next(self) -> InterruptRecord | None:
        """In a replay fork: the source run's interrupt at the next request's place."""

    async def request(self, payload: Mapping[str, Any], **options: Unpack[RequestOptions]) -> InterruptHandle:
        """Register an interrupt without suspending."""


def _event(
    ctx: ConversationNode, type_: str, payload: dict[str, Any], node_id: str, causation: str | None
) -> EventDraft:
    """An event of the conversation, stamped now."""
    return EventDraft(ctx.new_id("evt"), type_, payload, ctx.now_ms(), node_id=node_id, causation_id=causation)


class Conversation:
    """An open conversation inside a node. Create it with ``ctx.conversation(...)``."""

    def __init__(
        self, ctx: ConversationNode, conversation_id: str, channel: str, speaker: str, deadline_ms: int | None
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
        #: The bytes its answers stored so far (the conversation's bound; see ConversationLimits).
        self.answered_bytes = 0

    async def exchange(self, prompt: str, **options: Unpack[ExchangeOptions]) -> Any:
        """Ask one turn and wait for the answer; return its validated content.

        Returns ``None`` when the person closes the conversation instead of
        answering (``conv.closed`` is then True and ``conv.outcome`` holds their
        outcome). Raises :class:`~openwop_bridge.core.errors.ConversationClosedError` after a
        close, and :class:`~openwop_bridge.core.errors.InterruptTimeoutError` once the
        conversation's deadline has passed (after emitting ``conversation.closed``).

        ``auto_answer`` answers the turn at once, as the host itself (used by the
        conformance ``mockAutoResume`` mode); the events are those of a real turn.
        ``key`` / ``address`` are for callers whose turns do not come in a fixed
        order (an adapter following another runtime's state).
        """
        handle = await self.request_exchange(prompt, **options)
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
        now = ctx.now_ms()
        data: dict[str, Any] = {"conversationId": self.id, "prompt": prompt, "turnIndex": index}
        if outcome_schema is not None:
            kinds.compile_schema(outcome_schema, "outcomeSchema")
            data["outcomeSchema"] = dict(outcome_schema)
        payload = kinds.CONVERSATION_EXCHANGE.payload(data, key=key)
        if key is not None:
            live = await ctx.lookup_key(key) is None
        else:
            live = await ctx.next_recorded() is None and await ctx.source_for_next() is None
        if live and self.deadline_ms is not None:
            if now >= self.deadline_ms:
                await self._close(None, "timeout", role="system", content="conversation timed out")
                raise InterruptTimeoutError(f"conversation {self.id} timed out")
            payload["timeoutMs"] = self.deadline_ms - now
        prompt_turn = make_turn(self.id, index, "agent", prompt, now, sender=self.speaker, speaker=self.speaker)
        state = {
            "promptTurn": prompt_turn,
            "conversationId": self.id,
            "channel": self.channel,
            "answeredBytes": self.answered_bytes,
        }
        instant = None if auto_answer is _UNSET else _auto_answer(ctx, auto_answer)
        handle = await ctx.request(
            payload,
            address=address,
            extra={"conversationId": self.id, "turnIndex": index, "promptTurn": prompt_turn, "state": state},
            instant=instant,
        )
        self.turn_index = index
        self._take_exchange(handle, prompt_turn)
        return handle

    def _take_exchange(self, handle: InterruptHandle, prompt_turn: dict[str, Any]) -> None:
        """Follow an exchange's record: its prompt and answer turns, and whether it closed the conversation."""
        record = handle.record
        self.turns.append(record.state.get("promptTurn", prompt_turn))
        if "answeredBytes" in record.state:
            self.answered_bytes = answered_bytes(record)
        self.answered_bytes += turn_bytes(record)
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

    async def resume_at_last_turn(self) -> None:
        """Go on from the last exchange the node's earlier activations asked, without asking the ones before again.

        For node code that keeps nothing of the earlier turns but their number (a node type
        declared with ``resumes_at_last_request``): a turn then reads only itself, however long
        the conversation. The next :meth:`exchange` is that last exchange again: it returns its
        answer, or waits for it. Afterwards :attr:`turns` holds the turns from there on, and
        :meth:`answers` reads the earlier answers. Does nothing unless the last request was an
        exchange of this conversation.
        """
        ctx = self._ctx
        last = ctx.requested - 1
        if self.turn_index or self.closed or last < 1:
            return
        record = await ctx.recorded_request(last)
        data = record.payload.get("data", {}) if record is not None else {}
        if record is None or record.kind != kinds.CONVERSATION_EXCHANGE.name or data.get("conversationId") != self.id:
            return
        ctx.skip_requests(last)
        self.turn_index = exchange_index(record) - 1

    async def answers(self) -> list[Any]:
        """The answers of this conversation's exchanges so far, in order (read from the store)."""
        answered = dict(await self._ctx.exchange_answers(self.id))
        # This activation's own, committed or not (a replay fork settles them as it goes).
        for r in self._ctx.known_interrupts():
            data = r.payload.get("data", {})
            resolution = r.resolution or {}
            is_answer = r.kind == kinds.CONVERSATION_EXCHANGE.name and r.status == "resolved"
            if is_answer and data.get("conversationId") == self.id and not resolution.get("closed"):
                answered[r.key] = resolution.get("resumeValue")
        return list(answered.values())

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
        final = make_turn(self.id, index, role, content, ctx.now_ms(), sender=sender, speaker=speaker)

        def instant(record: InterruptRecord) -> tuple[dict[str, Any], list[EventDraft]]:
            resolution = {"resumeValue": None, "resolvedBy": "system", "outcome": outcome}
            cause = record.state.get("suspendedEventId")  # conversation.closed follows the close's suspension
            return resolution, [
                _event(ctx, e["type"], e["payload"], e["nodeId"], cause if e["type"] == "conversation.closed" else None)
                for e in close_events(record, resolution)
            ]

        handle = await ctx.request(
            kinds.CONVERSATION_CLOSE.payload(data, key=key or None),
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
    ctx: ConversationNode,
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
    chan = message_channel(ctx.workflow, channel or ctx.config.get("channel"))
    speaker = speaker_id or ctx.agent_id
    existing = await ctx.lookup_key(key) if key is not None else await ctx.next_recorded()
    source = await ctx.source_for_next() if key is None else None
    if existing is not None:
        conversation_id = existing.payload["data"]["conversationId"]
    elif source is not None:
        conversation_id = source.payload["data"]["conversationId"]
    else:
        conversation_id = conversation_id or f"conv:{ctx.run_id}:{ctx.node_id}:{ctx.next_interrupt_number()}"
    assert conversation_id is not None
    now = ctx.now_ms()
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
    instant = _opened(ctx, conversation_id, initial, speaker)
    handle = await ctx.request(
        kinds.CONVERSATION_START.payload(data, key=key or None),
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


def _opened(ctx: ConversationNode, conversation_id: str, initial: dict[str, Any], speaker: str | None) -> Instant:
    """Settle a conversation's start at once: ``conversation.opened`` and its ``interrupt.resolved``."""

    def instant(record: InterruptRecord) -> tuple[dict[str, Any], list[EventDraft]]:
        opened_payload: dict[str, Any] = {"conversationId": conversation_id, "initialTurn": initial}
        opened_payload["agentId"] = speaker
        opened = _event(
            ctx, "conversation.opened", opened_payload, record.node_id, record.state.get("suspendedEventId")
        )
        resolved = _event(
            ctx,
            "interrupt.resolved",
            resolved_event_payload(record, ctx.now_ms(), None, "system"),
            record.node_id,
            None,
        )
        return {"resumeValue": None, "resolvedBy": "system"}, [opened, resolved]

    return instant


def _auto_answer(ctx: ConversationNode, value: Any) -> Instant:
    """Answer an exchange at once with ``value`` (the conformance mock host's turn)."""

    def instant(record: InterruptRecord) -> tuple[dict[str, Any], list[EventDraft]]:
        host = Principal(id="host:conformance-mock", tenant=ctx.tenant)
        m = answer_exchange(record, {"content": value}, host, ctx.now_ms(), ctx.new_id)
        assert m.resolution is not None
        return m.resolution, m.events

    return instant
