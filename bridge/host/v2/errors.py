"""v2 error envelopes: the engine's codes mapped onto ``spec/v2/errors.json``.

The engine raises the same :class:`~openwop_bridge.core.errors.BridgeError` for both
majors; a v2 route answers with the v2 registry's code and status for it. Codes
the two majors share pass through; the rest map by the table below, and retry
timing lives in ``Retry-After`` only (v2 forbids ``details.retryAfter``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from openwop_bridge.core.errors import BridgeError
from openwop_bridge.host.http.responses import JSONResponse, error_headers

#: Engine code → (v2 code, v2 status). Codes not listed keep their code and status.
CODE_MAP: dict[str, tuple[str, int]] = {
    "run_not_found": ("not_found", 404),
    "workflow_not_found": ("not_found", 404),
    "interrupt_not_found": ("not_found", 404),
    "interrupt_gone": ("interrupt_cancelled", 410),
    "interrupt_cancelled": ("interrupt_already_resolved", 409),
    "conflict": ("run_state_conflict", 409),
    "correlation_mismatch": ("validation_error", 400),
    "store_unavailable": ("runner_unavailable", 503),
    "client_disconnected": ("validation_error", 400),
    "stale_owner": ("internal_error", 500),
    "replay_diverged": ("internal_error", 500),
    "method_not_allowed": ("not_found", 404),
    "not_acceptable": ("validation_error", 400),
    "error": ("internal_error", 500),
}


class RunTerminalError(BridgeError, code="run_terminal", status=409):
    """409: cancel on a run that already ended (runs.md §Cancel)."""


class RunAlreadyActiveError(BridgeError, code="run_already_active", status=409):
    """409: ``OpenWOP-Dedup`` on create, and another run holds the ``(tenantId, scopeId)`` claim."""

    def __init__(self, message: str, retry_after_s: int, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, details=details)
        #: Seconds until the claim is stale-eligible, sent as ``Retry-After``.
        self.retry_after_s = retry_after_s


class VersionConflictError(BridgeError, code="version_conflict", status=409):
    """409: a resource other than a run changed meanwhile, or holds as much as it may (a tenant's delegations)."""


_FORBIDDEN_DETAILS = ("retryAfter", "retryAfterMs", "retryAfterSeconds")
VERSION = "2.0"

Handler = Callable[[Request], Awaitable[Response]]


def v2_envelope(code: str, message: str, details: dict[str, Any] | None, status: int) -> tuple[int, dict[str, Any]]:
    """``(status, envelope)`` under the v2 registry for an engine error."""
    code, status = CODE_MAP.get(code, (code, status))
    body: dict[str, Any] = {"error": code, "message": message or code}
    kept = {k: v for k, v in (details or {}).items() if k not in _FORBIDDEN_DETAILS}
    if kept:
        body["details"] = kept
    return status, body


def error_response(exc: BridgeError) -> Response:
    """A v2 error response for an engine error."""
    status, body = v2_envelope(exc.code, exc.message, exc.details, exc.status)
    headers = {"OpenWOP-Version": VERSION, **error_headers(exc)}
    return JSONResponse(body, status_code=status, headers=headers)


def translate(response: Response) -> Response:
    """Rewrite an engine error envelope already rendered (an idempotent replay, a 503) into v2."""
    body = getattr(response, "body", b"")
    if response.status_code < 400 or not body:
        return response
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return response
    if not isinstance(doc, dict) or "error" not in doc:
        return response
    status, v2 = v2_envelope(str(doc["error"]), str(doc.get("message", "")), doc.get("details"), response.status_code)
    headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-type")}
    return JSONResponse(v2, status_code=status, headers=headers)


def v2_route(handler: Handler) -> Handler:
    """Answer a v2 route's errors in the v2 registry's codes."""

    @functools.wraps(handler)
    async def guarded(request: Request) -> Response:
        try:
            response = await handler(request)
        except BridgeError as exc:
            return error_response(exc)
        except HTTPException as exc:
            status, body = v2_envelope("validation_error", str(exc.detail), None, exc.status_code)
            return JSONResponse(body, status_code=status, headers={"OpenWOP-Version": VERSION})
        return translate(response)

    return guarded
