"""Graph state to JSON, and chat messages between the bridge and LangChain."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage


def message_text(message: BaseMessage) -> str:
    """The plain text of a message (text parts joined)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, Mapping) else str(part) for part in content)


def message_to_json(message: BaseMessage) -> dict[str, Any]:
    """A compact JSON form of a LangChain message."""
    out: dict[str, Any] = {"id": message.id, "type": message.type, "content": to_json(message.content)}
    if message.name:
        out["name"] = message.name
    if isinstance(message, AIMessage) and message.tool_calls:
        out["toolCalls"] = [
            {"id": c.get("id"), "name": c["name"], "args": to_json(c["args"])} for c in message.tool_calls
        ]
    if isinstance(message, ToolMessage):
        out["toolCallId"] = message.tool_call_id
        out["status"] = message.status
    return out


def to_json(value: Any) -> Any:
    """Graph state as JSON-compatible values (messages, pydantic models, dataclasses, …)."""
    if isinstance(value, BaseMessage):
        return message_to_json(value)
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_json(v) for v in value]
    if hasattr(value, "model_dump"):
        return to_json(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_json(dataclasses.asdict(value))
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def chat_input(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Messages from a run's input (AG-UI or OpenWOP dicts) as LangChain message dicts."""
    roles = {
        "user": "user",
        "human": "user",
        "assistant": "assistant",
        "ai": "assistant",
        "system": "system",
        "developer": "system",
        "tool": "tool",
    }
    out = []
    for item in messages:
        if not isinstance(item, Mapping):
            continue
        role = roles.get(str(item.get("role") or item.get("type") or ""))
        if role is None or role == "tool":
            continue
        content = item.get("content")
        if not isinstance(content, str):
            content = "".join(p.get("text", "") for p in content or [] if isinstance(p, Mapping))
        message: dict[str, Any] = {"role": role, "content": content}
        if item.get("id"):
            message["id"] = str(item["id"])
        out.append(message)
    return out
