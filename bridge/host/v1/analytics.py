"""``GET /v1/analytics/decisions``: who decided what in a window, how fast, and who may be rubber-stamping.

The figures come from :func:`openwop_bridge.core.decision_stats.report` over the caller's tenant's
interrupts settled in the window (:meth:`~openwop_bridge.store.contract.analytics.AnalyticsStore.settled_interrupts`),
read up to the engine's ``decision_rows_cap``.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from openwop_bridge.core.clock import iso_ms, parse_iso_ms
from openwop_bridge.core.decision_stats import GROUP_BY, GroupBy
from openwop_bridge.core.errors import ValidationError
from openwop_bridge.host.http.deps import engine, principal
from openwop_bridge.host.http.openapi_ops import error_responses, json_response, query_param
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.routing import Operation

DAY_MS = 24 * 3600 * 1000
#: The window when none is asked for: the last 30 days.
DEFAULT_WINDOW_MS = 30 * DAY_MS
#: The widest window a report covers.
MAX_WINDOW_MS = 366 * DAY_MS
#: Epoch milliseconds are accepted up to the end of year 9999 (what ISO-8601 can spell).
_MAX_MS = 253_402_300_799_999
_DIGITS = re.compile(r"^[0-9]{1,15}$")


def instant(request: Request, name: str) -> int | None:
    """The query parameter ``name`` as epoch milliseconds (ISO-8601 or epoch ms), None when absent; else 400."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if _DIGITS.match(raw):
        value = int(raw)
    else:
        try:
            value = parse_iso_ms(raw)
        except (ValueError, OverflowError) as exc:
            raise ValidationError(f"query parameter {name!r} must be an ISO-8601 time or epoch milliseconds") from exc
    if not 0 <= value <= _MAX_MS:
        raise ValidationError(f"query parameter {name!r} is out of range")
    return value


def window(request: Request, now_ms: int) -> tuple[int, int]:
    """``[from, to)`` of the request: ``to`` defaults to now, ``from`` to 30 days before ``to``; 400 unless
    ``from`` comes before ``to`` and at most :data:`MAX_WINDOW_MS` before it."""
    to_ms = instant(request, "to")
    to_ms = now_ms if to_ms is None else to_ms
    from_ms = instant(request, "from")
    from_ms = max(0, to_ms - DEFAULT_WINDOW_MS) if from_ms is None else from_ms
    if from_ms >= to_ms:
        raise ValidationError("'from' must be before 'to'", details={"from": iso_ms(from_ms), "to": iso_ms(to_ms)})
    if to_ms - from_ms > MAX_WINDOW_MS:
        raise ValidationError(f"the window may span at most {MAX_WINDOW_MS // DAY_MS} days")
    return from_ms, to_ms


def group_by(request: Request) -> GroupBy:
    """``groupBy`` (``approver`` when absent), or 400."""
    raw = request.query_params.get("groupBy", "approver")
    if raw not in GROUP_BY:
        raise ValidationError("'groupBy' must be one of " + ", ".join(GROUP_BY), details={"allowed": list(GROUP_BY)})
    return raw


async def decisions(request: Request) -> Response:
    """``GET /v1/analytics/decisions?from=&to=&groupBy=`` (scope ``audit:read``; the caller's tenant only)."""
    who = principal(request)
    eng = engine(request)
    grouping = group_by(request)
    from_ms, to_ms = window(request, eng.clock.now_ms())
    body = await eng.decision_report(who, grouping, from_ms, to_ms)
    return JSONResponse(body, headers={"Cache-Control": "no-store"})


_TIMES: dict[str, Any] = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "median": {"type": ["integer", "null"]},
        "p90": {"type": ["integer", "null"]},
    },
    "required": ["count", "median", "p90"],
}
_FIGURES: dict[str, Any] = {
    "decisions": {"type": "integer"},
    "outcomes": {
        "type": "object",
        "properties": {o: {"type": "integer"} for o in ("approved", "rejected", "answered", "cancelled", "expired")},
    },
    "requestToDecisionMs": _TIMES,
    "noticeToDecisionMs": _TIMES,
    "undeliverable": {"type": "integer", "description": "Interrupts of which a notice to a person was dead-lettered"},
}
_GROUP: dict[str, Any] = {
    "type": "object",
    "properties": {
        "key": {"type": "string"},
        **_FIGURES,
        "fastDecisions": {"type": "integer", "description": "groupBy=approver: decisions within fastWithinMs"},
        "fastShare": {"type": ["number", "null"]},
        "rubberStamp": {"type": "boolean", "description": "groupBy=approver: fastShare is at least one half"},
    },
    "required": ["key", *_FIGURES],
}
_REPORT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "from": {"type": "string", "format": "date-time"},
        "to": {"type": "string", "format": "date-time"},
        "groupBy": {"type": "string", "enum": list(GROUP_BY)},
        "fastWithinMs": {"type": "integer"},
        "interruptsRead": {"type": "integer"},
        "cap": {"type": "integer"},
        "truncated": {"type": "boolean", "description": "The cap cut the window: the figures cover its start only"},
        "total": {"type": "object", "properties": _FIGURES},
        "groups": {"type": "array", "items": _GROUP},
    },
    "required": ["from", "to", "groupBy", "truncated", "total", "groups"],
}
_TIME = {
    "anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "pattern": "^[0-9]{1,15}$"}],
    "description": "ISO-8601 or epoch milliseconds",
}

#: The analytics operations.
OPERATIONS = (
    Operation(
        "GET",
        "/v1/analytics/decisions",
        decisions,
        "Decision analytics of the caller's tenant: outcomes, times to decide, undeliverable notices and fast "
        "approvers (scope audit:read)",
        {"200": json_response(_REPORT), **error_responses(400, 401, 403, 503)},
        scope="audit:read",
        params=(
            query_param("from", "Start of the window, inclusive (default: 30 days before 'to')", _TIME),
            query_param("to", "End of the window, exclusive (default: now); at most 366 days after 'from'", _TIME),
            query_param("groupBy", "approver (default), workflow or kind", {"type": "string", "enum": list(GROUP_BY)}),
        ),
        tags=("analytics",),
    ),
)
