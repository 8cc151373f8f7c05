"""The ``external-event`` kind: a run waits for an event matching its correlation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openwop_bridge.core.errors import CorrelationMismatchError
from openwop_bridge.core.kinds.base import Kind


class ExternalEventKind(Kind):
    """Answered by an event that carries the correlation; the same event id answers once."""

    name = "external-event"
    data_def = "ExternalEventData"
    waiting_status = "waiting-external"
    suspend_reason = "external-event"
    label = "External event"
    event_keyed = True
    redacts_log = True

    def title(self, data: Mapping[str, Any]) -> str:
        return f"Waiting for {data.get('eventType', 'an external event')}"

    def prompt(self, data: Mapping[str, Any]) -> str:
        return f"Waiting for {data.get('eventType')} matching {dict(data.get('correlation') or {})}."

    def answer_schema(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """An event body carrying every correlation key with its value (the event's other fields are free)."""
        correlation = dict(data.get("correlation") or {})
        return {
            "type": "object",
            "required": sorted(correlation),
            "properties": {k: {"const": v} for k, v in correlation.items()},
        }

    def normalize_resume(self, data: Mapping[str, Any], value: Any) -> Any:
        return normalize_external_event(data, value)

    def event_id(self, value: Any) -> str | None:
        return external_event_id(value)


EXTERNAL_EVENT = ExternalEventKind()


def correlation_matches(correlation: Mapping[str, Any], value: Any) -> bool:
    """True when the event body (or its ``correlation`` / ``eventPayload``) carries
    every key of ``correlation`` with an equal value."""
    candidates = [value]
    if isinstance(value, Mapping):
        candidates += [value.get("correlation"), value.get("eventPayload")]
    for candidate in candidates:
        if isinstance(candidate, Mapping) and all(k in candidate and candidate[k] == v for k, v in correlation.items()):
            return True
    return False


def normalize_external_event(data: Mapping[str, Any], value: Any) -> Any:
    """Check an external event against the interrupt's correlation (422 on mismatch)."""
    correlation = data.get("correlation") or {}
    if not correlation_matches(correlation, value):
        raise CorrelationMismatchError(
            "the event does not match this interrupt's correlation; the run keeps waiting",
            details={"expected": dict(correlation)},
        )
    return value


def external_event_id(value: Any) -> str | None:
    """The event's own id, used to make ingestion idempotent."""
    if isinstance(value, Mapping):
        for name in ("eventId", "id"):
            candidate = value.get(name)
            if isinstance(candidate, str | int) and not isinstance(candidate, bool):
                return str(candidate)
    return None


def external_event(
    event_type: str,
    correlation: Mapping[str, Any],
    *,
    key: str | None = None,
    timeout_ms: int | None = None,
) -> dict[str, Any]:
    """An ``external-event`` interrupt payload."""
    data = {"eventType": event_type, "correlation": dict(correlation)}
    return EXTERNAL_EVENT.payload(data, key=key, timeout_ms=timeout_ms)
