"""The ``low-confidence`` kind: a person ratifies (or corrects) an agent's unsure decision."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from openwop_bridge.core.kinds.base import Kind


class LowConfidenceKind(Kind):
    """Raised when an agent's confidence is under the threshold; the answer is the ratified decision."""

    name = "low-confidence"
    data_def = "LowConfidenceData"
    waiting_status = "waiting-approval"
    suspend_reason = "low-confidence"
    label = "Low-confidence decision"

    def title(self, data: Mapping[str, Any]) -> str:
        return (
            f"Ratify {data.get('agentId', 'agent')}'s decision "
            f"(confidence {data.get('observed')} < {data.get('threshold')})"
        )

    def prompt(self, data: Mapping[str, Any]) -> str:
        return (
            f"{data.get('agentId')} decided {_shown(data.get('decision'))} and is "
            f"{float(data.get('observed', 0)):.0%} sure (threshold {float(data.get('threshold', 0)):.0%}): "
            "ratify its decision or send a corrected one."
        )

    def answer_schema(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """Any value: the decision to carry on with, the agent's own by default."""
        return {"title": "Ratified decision", "default": data.get("decision")}


LOW_CONFIDENCE = LowConfidenceKind()

#: How much of a decision a prompt shows; the whole of it is in the interrupt's data.
SHOWN_CHARS = 200


def _shown(decision: Any) -> str:
    """The decision as a person reads it: text as it is, anything else as compact JSON, shortened."""
    text = decision if isinstance(decision, str) else json.dumps(decision, ensure_ascii=False, default=str)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def finite_confidence(value: Any) -> float | None:
    """A confidence usable for escalation: a finite number in [0, 1], else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    if math.isnan(number) or math.isinf(number) or not 0.0 <= number <= 1.0:
        return None
    return number
