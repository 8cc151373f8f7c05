"""The conversation kinds: ``conversation.start``, ``.exchange`` (one turn) and ``.close``.

Only an exchange is answered; the start and the close mark the conversation's
ends in the log. The turn logic itself lives in :mod:`openwop_bridge.core.decisions.exchange`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openwop_bridge.core.kinds.base import Kind


class ConversationStartKind(Kind):
    """Opens a conversation; not answerable, not listed."""

    name = "conversation.start"
    data_def = "ConversationStartData"
    suspend_reason = "conversation"
    label = "conversation.start"
    answerable = False
    listed = False
    opens_conversation = True
    in_conversation = True

    def refusal(self, data: Mapping[str, Any]) -> str:
        return "a conversation start is not answerable"


class ConversationExchangeKind(Kind):
    """One turn: a prompt answered by a reply, or by closing the conversation."""

    name = "conversation.exchange"
    data_def = "ConversationExchangeData"
    waiting_status = "waiting-approval"
    suspend_reason = "conversation-input"
    label = "Conversation"
    turn = True
    in_conversation = True

    def title(self, data: Mapping[str, Any]) -> str:
        return str(data.get("prompt", "Conversation"))

    def prompt(self, data: Mapping[str, Any]) -> str:
        return str(data.get("prompt", ""))

    def answer_schema(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """A reply (under ``outcomeSchema``, a string by default) or ``{operation: close, outcome?, reason?}``."""
        reply = data.get("outcomeSchema") or {"type": "string", "title": "Your reply"}
        close = {
            "type": "object",
            "title": "close the conversation",
            "required": ["operation"],
            "properties": {"operation": {"const": "close"}, "outcome": {}, "reason": {"type": "string"}},
        }
        return {"anyOf": [dict(reply), close]}


class ConversationCloseKind(Kind):
    """Closes a conversation; not answerable, not listed."""

    name = "conversation.close"
    data_def = "ConversationCloseData"
    suspend_reason = "conversation"
    label = "conversation.close"
    answerable = False
    listed = False
    in_conversation = True

    def refusal(self, data: Mapping[str, Any]) -> str:
        return f"conversation {data.get('conversationId')} is closed; no more exchanges"


CONVERSATION_START = ConversationStartKind()
CONVERSATION_EXCHANGE = ConversationExchangeKind()
CONVERSATION_CLOSE = ConversationCloseKind()
