"""Bounds on a conversation (RFC 0005): one message, all its answers, and its turns.

Every answer to a ``conversation.exchange`` is stored on the interrupt's row, logged as
events and folded into the run's ``message`` channel, so without bounds one caller could
grow a run's storage turn after turn. Sizes are bytes of compact JSON (UTF-8). A refusal is
``413 payload_too_large``: nothing is stored and the turn stays open for another answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from openwop_bridge.core.errors import PayloadTooLargeError


def json_bytes(value: Any) -> int:
    """The bytes of ``value`` as compact JSON (0 for None: nothing is stored)."""
    if value is None:
        return 0
    try:
        return len(orjson.dumps(value))
    except TypeError:  # not JSON (never from a request body): measured as its text
        return len(str(value).encode("utf-8"))


def message_bytes(turn: Mapping[str, Any], outcome: Any = None, reason: str | None = None) -> int:
    """The size of one answer: the JSON of its turn's ``content`` and ``agent`` (the turn's other
    fields are short strings and numbers the turn schema bounds) and, for a close, of the outcome
    and the reason it carries."""
    size = json_bytes(turn.get("content")) + json_bytes(turn.get("agent")) + json_bytes(outcome)
    return size + (len(reason.encode("utf-8")) if reason else 0)


@dataclass(frozen=True, slots=True)
class ConversationLimits:
    """Bounds on what the people (or peers) answering a conversation can make it store.

    - ``message_bytes``: the largest answer, measured by :func:`message_bytes`;
    - ``conversation_bytes``: the answers of one conversation in all;
    - ``turns``: the exchanges a conversation answers; a turn beyond is refused, a close is not.

    A close without words or outcome always fits ``conversation_bytes`` and ``turns``, so a
    conversation that reached its bounds can still be ended.
    """

    message_bytes: int = 64 * 1024
    conversation_bytes: int = 1024 * 1024
    turns: int = 1000

    def check(self, size: int, used: int, turn_index: int, *, closing: bool, wordless: bool) -> None:
        """Refuse an answer of ``size`` bytes to turn ``turn_index`` when ``used`` bytes are already answered."""
        if size > self.message_bytes:
            raise PayloadTooLargeError(
                f"a conversation message may hold at most {self.message_bytes} bytes",
                details={"limit": "conversationMessageBytes", "maxBytes": self.message_bytes, "bytes": size},
            )
        if wordless:
            return
        if not closing and turn_index > self.turns:
            raise PayloadTooLargeError(
                f"a conversation may answer at most {self.turns} turns; it can still be closed",
                details={"limit": "conversationTurns", "max": self.turns, "turnIndex": turn_index},
            )
        if used + size > self.conversation_bytes:
            raise PayloadTooLargeError(
                f"the answers of a conversation may hold at most {self.conversation_bytes} bytes; "
                "a shorter answer may still fit, and a close without words always does",
                details={
                    "limit": "conversationBytes",
                    "maxBytes": self.conversation_bytes,
                    "usedBytes": used,
                    "bytes": size,
                },
            )
