"""The eight interrupt kinds, one module each, and the registry that names them.

Each kind object (:class:`Kind`) owns everything about its kind: data
definition and builder, waiting status and suspend reason, label and title,
whether it is answered and listed, the normalisation of its resume value, the
JSON Schema it advertises for that answer, whether a cancel or a timeout
fails it closed, and the short answers a surface may give for it
(:func:`coerce_short_answer`: a bare value for a one-question clarification, a
bare action for an approval). Ask the registry (:func:`kind_of`) instead of branching on a
kind's name.

Everything here is pure: a payload or a resume value goes in, a normalised
value or a :class:`~openwop_bridge.core.errors.ValidationError` comes out.
"""

from __future__ import annotations

from openwop_bridge.core.kinds.approval import APPROVAL, TOOL_CALL_ARTIFACT, ApprovalKind, approval
from openwop_bridge.core.kinds.base import Kind
from openwop_bridge.core.kinds.clarification import (
    CLARIFICATION,
    ClarificationKind,
    clarification,
    normalize_clarification,
)
from openwop_bridge.core.kinds.conversation import (
    CONVERSATION_CLOSE,
    CONVERSATION_EXCHANGE,
    CONVERSATION_START,
    ConversationCloseKind,
    ConversationExchangeKind,
    ConversationStartKind,
)
from openwop_bridge.core.kinds.custom import CUSTOM, CustomKind, custom
from openwop_bridge.core.kinds.external_event import (
    EXTERNAL_EVENT,
    ExternalEventKind,
    correlation_matches,
    external_event,
    external_event_id,
    normalize_external_event,
)
from openwop_bridge.core.kinds.low_confidence import LOW_CONFIDENCE, LowConfidenceKind, finite_confidence
from openwop_bridge.core.kinds.payload import normalize_payload, payload_key
from openwop_bridge.core.kinds.registry import (
    CONVERSATION_KINDS,
    KINDS,
    REGISTRY,
    WAITING_STATUS,
    coerce_short_answer,
    kind_of,
    waiting_status,
)
from openwop_bridge.core.kinds.schema import compile_schema, validate_against

__all__ = [
    "APPROVAL",
    "CLARIFICATION",
    "CONVERSATION_CLOSE",
    "CONVERSATION_EXCHANGE",
    "CONVERSATION_KINDS",
    "CONVERSATION_START",
    "CUSTOM",
    "EXTERNAL_EVENT",
    "KINDS",
    "LOW_CONFIDENCE",
    "REGISTRY",
    "TOOL_CALL_ARTIFACT",
    "WAITING_STATUS",
    "ApprovalKind",
    "ClarificationKind",
    "ConversationCloseKind",
    "ConversationExchangeKind",
    "ConversationStartKind",
    "CustomKind",
    "ExternalEventKind",
    "Kind",
    "LowConfidenceKind",
    "approval",
    "clarification",
    "coerce_short_answer",
    "compile_schema",
    "correlation_matches",
    "custom",
    "external_event",
    "external_event_id",
    "finite_confidence",
    "kind_of",
    "normalize_clarification",
    "normalize_external_event",
    "normalize_payload",
    "payload_key",
    "validate_against",
    "waiting_status",
]
