"""A run's messages as LangGraph clients read them: LangChain message dicts (``type``, ``content``, ``id``, …).

Three sources give a run its messages:

- the ``messages`` value (the run's inputs, or a served graph's state), in
  any of the forms the bridge meets: LangChain dicts (``type``), chat dicts
  (``role``) and a served graph's compact JSON (``toolCalls``, ``toolCallId``);
- the turns of an OpenWOP conversation (``ConversationTurn``): the agent's
  turns are ``ai`` messages, the person's ``human``, with the turn's ``messageId``;
- while a run goes, its committed events (:class:`MessageFold`): conversation
  turns, a node's streamed text once its last chunk is in (``output.chunk``,
  with the tool calls announced just before it), tool results
  (``agent.toolReturned``), and the new messages in a node's completed outputs.

Each message is the dict LangChain's ``model_dump`` gives (snake_case:
``tool_calls``, ``tool_call_id``), which ``useStream`` and
``convert_to_messages`` take as they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

_TYPES = {
    "human": "human",
    "user": "human",
    "ai": "ai",
    "assistant": "ai",
    "system": "system",
    "developer": "system",
    "tool": "tool",
}
#: How many streamed texts (``output.chunk`` channels) a fold holds before their last chunk.
MAX_OPEN_TEXTS = 64


def _text(content: Any) -> Any:
    """Message content: a string, or a list of content parts as given; any other JSON as text."""
    if isinstance(content, str) or (isinstance(content, list) and all(isinstance(p, Mapping) for p in content)):
        return content
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _tool_calls(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    calls = item.get("tool_calls", item.get("toolCalls")) or []
    return [
        {"name": str(c.get("name", "")), "args": dict(c.get("args") or {}), "id": c.get("id"), "type": "tool_call"}
        for c in calls
        if isinstance(c, Mapping)
    ]


def message_dict(item: Any, fallback_id: str) -> dict[str, Any] | None:
    """The LangChain dict of one message in any of the bridge's forms (``None`` if it is not a message)."""
    if not isinstance(item, Mapping):
        return None
    kind = _TYPES.get(str(item.get("type") or item.get("role") or ""))
    if kind is None:
        return None
    out: dict[str, Any] = {
        "content": _text(item.get("content")),
        "additional_kwargs": dict(item.get("additional_kwargs") or {}),
        "response_metadata": dict(item.get("response_metadata") or {}),
        "type": kind,
        "name": item.get("name"),
        "id": str(item.get("id") or fallback_id),
    }
    if kind == "ai":
        out["tool_calls"] = _tool_calls(item)
        out["invalid_tool_calls"] = list(item.get("invalid_tool_calls") or [])
        out["usage_metadata"] = item.get("usage_metadata")
    elif kind == "tool":
        out["tool_call_id"] = str(item.get("tool_call_id", item.get("toolCallId")) or "")
        out["artifact"] = item.get("artifact")
        out["status"] = item.get("status") or "success"
    return out


def turn_message(turn: Mapping[str, Any]) -> dict[str, Any]:
    """A conversation turn as a message: the person's turns are ``human``, the agent's ``ai``."""
    role = turn.get("role")
    kind = "human" if role == "user" else "system" if role == "system" else "ai"
    message = message_dict({"type": kind, "content": turn.get("content")}, str(turn["messageId"]))
    assert message is not None
    if kind == "ai" and turn.get("speakerId"):
        message["name"] = str(turn["speakerId"])
    return message


def messages_of(value: Any, id_prefix: str) -> list[dict[str, Any]]:
    """The messages of a ``messages`` value (a list), each as a LangChain dict; others are left out."""
    if not isinstance(value, list):
        return []
    out = []
    for i, item in enumerate(value):
        message = message_dict(item, f"{id_prefix}:{i}")
        if message is not None:
            out.append(message)
    return out


def with_messages(values: dict[str, Any], turns: Iterable[Mapping[str, Any]], id_prefix: str) -> dict[str, Any]:
    """``values`` with ``messages`` as LangChain dicts, followed by the conversation's turns."""
    if "messages" not in values and not turns:
        return values
    messages = messages_of(values.get("messages"), id_prefix)
    ids = {m["id"] for m in messages}
    messages += [m for m in map(turn_message, turns) if m["id"] not in ids]
    return {**values, "messages": messages}


def _outputs_messages(outputs: Any, id_prefix: str) -> list[dict[str, Any]]:
    if not isinstance(outputs, Mapping):
        return []
    state = outputs.get("state")
    source = state.get("messages") if isinstance(state, Mapping) else outputs.get("messages")
    return messages_of(source, id_prefix)


class MessageFold:
    """The messages a run's committed events add, one event at a time (see the module docstring)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.texts: dict[str, list[str]] = {}
        #: Tool calls announced (``agent.toolCalled``) for the assistant message that comes next.
        self.calls: list[dict[str, Any]] = []
        #: Tool calls whose result was sent: a node's outputs repeat those results under other ids.
        self.returned: set[str] = set()

    def feed(self, doc: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The messages one committed event adds (already seen ones included; the caller drops them)."""
        kind = doc["type"]
        p = doc.get("payload") or {}
        turn = {
            "conversation.opened": p.get("initialTurn"),
            "node.suspended": p.get("promptTurn"),
            "conversation.exchanged": p.get("turn"),
            "conversation.closed": p.get("finalTurn"),
        }.get(kind)
        if isinstance(turn, Mapping) and turn.get("messageId"):
            return [turn_message(turn)]
        if kind == "output.chunk":
            return self._chunk(p)
        if kind == "agent.toolCalled" and len(self.calls) < MAX_OPEN_TEXTS:
            self.calls.append({"id": str(p["callId"]), "name": str(p.get("toolName", "")), "args": p.get("inputs")})
        elif kind == "agent.toolReturned":
            return self._returned(p)
        elif kind == "node.completed":
            # A node's outputs hold the person's messages as the node received them: only its own are new.
            found = _outputs_messages(p.get("outputs"), f"{self.run_id}:{p.get('nodeId')}")
            return [m for m in found if m["type"] != "human" and m.get("tool_call_id") not in self.returned]
        return []

    def _assistant(self, text: str, message_id: str) -> dict[str, Any]:
        calls, self.calls = self.calls, []
        message = message_dict({"type": "ai", "content": text, "tool_calls": calls}, message_id)
        assert message is not None
        return message

    def _returned(self, p: Mapping[str, Any]) -> list[dict[str, Any]]:
        call_id = str(p["callId"])
        out = [self._assistant("", f"{self.calls[0]['id']}:call")] if self.calls else []
        self.returned.add(call_id)
        result = {
            "type": "tool",
            "content": p.get("outcome"),
            "tool_call_id": call_id,
            "name": p.get("toolName"),
            "status": "success" if p.get("status", "ok") == "ok" else "error",
        }
        message = message_dict(result, f"{call_id}:result")
        assert message is not None
        return [*out, message]

    def _chunk(self, p: Mapping[str, Any]) -> list[dict[str, Any]]:
        channel = str(p.get("channel") or f"{self.run_id}:{p.get('nodeId')}")
        if channel not in self.texts and len(self.texts) >= MAX_OPEN_TEXTS:
            self.texts.pop(next(iter(self.texts)))
        self.texts.setdefault(channel, []).append(str(p.get("chunk", "")))
        if not p.get("isLast"):
            return []
        # A served graph streams a LangChain message under ``lg:<message id>``: keep its own id.
        return [self._assistant("".join(self.texts.pop(channel)), channel.removeprefix("lg:"))]
