"""OpenWOP run events → AG-UI events, for one AG-UI run.

A :class:`Translator` is fed committed OpenWOP event documents in order and
yields ``ag_ui.core`` events: steps per node, assistant text for conversation
turns, ``output.chunk`` text and ``ask`` answers, tool calls from
``agent.toolCalled`` / ``agent.toolReturned``. ``close()`` ends whatever is still
open so ``RUN_FINISHED`` can follow (the AG-UI client refuses a finish with open
steps, messages or tool calls).

A :class:`MessageFold` folds a run's events into AG-UI messages for
``MESSAGES_SNAPSHOT``, one event at a time (``messages_from_events`` folds a
whole list); ``results_after_calls`` keeps one result per tool call,
after the call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    FunctionCall,
    Message,
    StepFinishedEvent,
    StepStartedEvent,
    SystemMessage,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from pydantic import TypeAdapter

_FINISHING = ("node.completed", "node.failed", "node.cancelled")
_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)


def as_text(content: Any) -> str:
    """Turn content (a string or any JSON value) into message text."""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _turn_message(turn: Mapping[str, Any]) -> Message:
    text = as_text(turn.get("content"))
    if turn.get("role") == "user":
        return UserMessage(id=str(turn["messageId"]), content=text)
    if turn.get("role") == "system":
        return SystemMessage(id=str(turn["messageId"]), content=text)
    return AssistantMessage(id=str(turn["messageId"]), content=text, name=turn.get("speakerId"))


def _text_events(
    message_id: str, text: str, role: Literal["assistant", "user", "system"] = "assistant"
) -> Iterator[BaseEvent]:
    yield TextMessageStartEvent(message_id=message_id, role=role)
    if text:
        yield TextMessageContentEvent(message_id=message_id, delta=text)
    yield TextMessageEndEvent(message_id=message_id)


def _turn_text(turn: Mapping[str, Any]) -> Iterator[BaseEvent]:
    """A conversation turn as one text message in the speaker's role (agent turns are the assistant's)."""
    role = turn.get("role")
    as_role: Literal["assistant", "user", "system"] = role if role in ("user", "system") else "assistant"
    yield from _text_events(str(turn["messageId"]), as_text(turn.get("content")), as_role)


def _tool_call_message(payload: Mapping[str, Any]) -> AssistantMessage:
    call_id = str(payload["callId"])
    return AssistantMessage(
        id=f"{call_id}:call",
        tool_calls=[
            ToolCall(
                id=call_id,
                function=FunctionCall(name=str(payload["toolName"]), arguments=json.dumps(payload.get("inputs") or {})),
            )
        ],
    )


def _tool_result_message(payload: Mapping[str, Any]) -> ToolMessage:
    call_id = str(payload["callId"])
    error = payload.get("error")
    return ToolMessage(
        id=f"{call_id}:result",
        tool_call_id=call_id,
        content=as_text(payload.get("outcome") if error is None else error),
        error=(error or {}).get("message") if isinstance(error, Mapping) else None,
    )


class MessageFold:
    """A run's conversation as AG-UI messages, folded one committed event at a time.

    The fold can be saved (:meth:`as_json`) and taken up again (:meth:`from_json`),
    so the messages of a long run are built once, not re-read on every request.
    """

    def __init__(self, messages: Sequence[Message] = (), texts: Mapping[str, Sequence[str]] | None = None) -> None:
        self.messages: list[Message] = list(messages)
        self._seen = {m.id for m in self.messages}
        #: Text of ``output.chunk`` channels whose last chunk has not come yet.
        self.texts: dict[str, list[str]] = {k: list(v) for k, v in (texts or {}).items()}

    def _add(self, message: Message) -> None:
        if message.id not in self._seen:
            self._seen.add(message.id)
            self.messages.append(message)

    def feed(self, doc: Mapping[str, Any]) -> None:
        """Fold one committed OpenWOP event."""
        kind = doc["type"]
        p = doc.get("payload") or {}
        if kind == "conversation.opened":
            self._add(_turn_message(p["initialTurn"]))
        elif kind == "node.suspended" and p.get("promptTurn"):
            self._add(_turn_message(p["promptTurn"]))
        elif kind == "conversation.exchanged":
            self._add(_turn_message(p["turn"]))
        elif kind == "conversation.closed":
            self._add(_turn_message(p["finalTurn"]))
        elif kind == "output.chunk":
            channel = str(p.get("channel") or f"{doc['runId']}:{p.get('nodeId')}")
            self.texts.setdefault(channel, []).append(str(p.get("chunk", "")))
            if p.get("isLast"):
                self._add(AssistantMessage(id=channel, content="".join(self.texts.pop(channel))))
        elif kind == "bridge.approval.asked":
            self._add(UserMessage(id=f"{doc['eventId']}:q", content=str(p.get("question", ""))))
            self._add(AssistantMessage(id=doc["eventId"], content=str(p.get("answer", ""))))
        elif kind == "agent.toolCalled":
            self._add(_tool_call_message(p))
        elif kind == "agent.toolReturned":
            self._add(_tool_result_message(p))

    def as_json(self) -> dict[str, Any]:
        """The saved form: the messages so far and the unfinished texts."""
        return {
            "messages": [m.model_dump(by_alias=True, mode="json", exclude_none=True) for m in self.messages],
            "texts": self.texts,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> MessageFold:
        """A fold taken up from :meth:`as_json`."""
        messages = [_MESSAGE.validate_python(m) for m in raw.get("messages", [])]
        return cls(messages, raw.get("texts") or {})


def messages_from_events(docs: Sequence[Mapping[str, Any]]) -> list[Message]:
    """The run's conversation as AG-UI messages, in order, each id once."""
    fold = MessageFold()
    for doc in docs:
        fold.feed(doc)
    return fold.messages


def results_after_calls(messages: Sequence[Message]) -> list[Message]:
    """The messages with one result per tool call, right after the message making the call.

    When a call has several results (the run's own, and a client's copy of an
    answer), the last one is kept: the run's messages come after the client's.
    A result whose call is not among the messages stays where it is.
    """
    results: dict[str, ToolMessage] = {}
    calls: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            results[message.tool_call_id] = message
        elif isinstance(message, AssistantMessage):
            calls.update(call.id for call in message.tool_calls or [])
    out: list[Message] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in calls and results[message.tool_call_id] is message:
                out.append(message)
            continue
        out.append(message)
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls or []:
                if call.id in results:
                    out.append(results.pop(call.id))
    return out


class Translator:
    """Stateful translation of one AG-UI run's worth of OpenWOP events."""

    def __init__(self) -> None:
        self.steps: list[str] = []
        self.texts: set[str] = set()
        self.tool_calls: set[str] = set()

    def feed(self, doc: Mapping[str, Any]) -> Iterator[BaseEvent]:
        """AG-UI events for one committed OpenWOP event."""
        kind = doc["type"]
        p = doc.get("payload") or {}
        node = p.get("nodeId") or doc.get("nodeId")
        if kind in ("node.started", "node.resumed") and node and node not in self.steps:
            self.steps.append(node)
            yield StepStartedEvent(step_name=node)
        elif kind in _FINISHING and node in self.steps:
            yield from self._finish_texts()
            self.steps.remove(node)
            yield StepFinishedEvent(step_name=node)
        elif kind == "conversation.opened":
            turn = p["initialTurn"]
            if turn.get("role") != "user":
                yield from _turn_text(turn)
        elif kind == "node.suspended" and p.get("promptTurn"):
            yield from _turn_text(p["promptTurn"])
        elif kind in ("conversation.exchanged", "conversation.closed"):
            # The person's turn is streamed too, so it lands in the thread before the next prompt.
            yield from _turn_text(p["turn"] if kind == "conversation.exchanged" else p["finalTurn"])
        elif kind == "output.chunk":
            channel = str(p.get("channel") or f"{doc['runId']}:{node}")
            if channel not in self.texts:
                self.texts.add(channel)
                yield TextMessageStartEvent(message_id=channel, role="assistant")
            if p.get("chunk"):
                yield TextMessageContentEvent(message_id=channel, delta=str(p["chunk"]))
            if p.get("isLast"):
                self.texts.discard(channel)
                yield TextMessageEndEvent(message_id=channel)
        elif kind == "bridge.approval.asked":
            yield from _text_events(f"{doc['eventId']}:q", str(p.get("question", "")), "user")
            yield from _text_events(doc["eventId"], str(p.get("answer", "")))
        elif kind == "agent.toolCalled":
            call_id = str(p["callId"])
            yield ToolCallStartEvent(
                tool_call_id=call_id, tool_call_name=str(p["toolName"]), parent_message_id=f"{call_id}:call"
            )
            yield ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(p.get("inputs") or {}))
            yield ToolCallEndEvent(tool_call_id=call_id)
        elif kind == "agent.toolReturned":
            message = _tool_result_message(p)
            yield ToolCallResultEvent(message_id=message.id, tool_call_id=message.tool_call_id, content=message.content)

    def _finish_texts(self) -> Iterator[BaseEvent]:
        for channel in sorted(self.texts):
            yield TextMessageEndEvent(message_id=channel)
        self.texts.clear()

    def close(self) -> Iterator[BaseEvent]:
        """End open text messages and steps (before ``RUN_FINISHED`` / ``RUN_ERROR``)."""
        yield from self._finish_texts()
        for node in reversed(self.steps):
            yield StepFinishedEvent(step_name=node)
        self.steps.clear()
