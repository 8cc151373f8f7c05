"""JSON responses and the one place exceptions become OpenWOP error envelopes."""

from __future__ import annotations

import logging
from typing import Any

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from openwop_bridge.core.errors import BridgeError
from openwop_bridge.host.http.headers import ALWAYS

log = logging.getLogger("openwop_bridge.host.http")

_HTTP_CODES = {
    400: "validation_error",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_error",
    429: "rate_limited",
}


class JSONResponse(Response):
    """A JSON response serialised with orjson."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def envelope(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """An OpenWOP error envelope."""
    body: dict[str, Any] = {"error": code, "message": message}
    if details:
        body["details"] = details
    return body


async def bridge_error(request: Request, exc: Exception) -> Response:
    """BridgeError → its envelope and status."""
    assert isinstance(exc, BridgeError)
    return JSONResponse(exc.envelope(), status_code=exc.status, headers=error_headers(exc))


def error_headers(exc: BridgeError) -> dict[str, str]:
    """The headers an error's answer carries: ``WWW-Authenticate`` on 401, ``Retry-After`` when it names a wait."""
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
    retry_after = getattr(exc, "retry_after_s", None)
    if isinstance(retry_after, int):
        headers["Retry-After"] = str(retry_after)
    return headers


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's routing errors (unknown path, wrong method) as envelopes."""
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "error")
    message = exc.detail if isinstance(exc.detail, str) else "request failed"
    if exc.status_code == 404:
        message = f"no such endpoint: {request.method} {request.url.path}"
    elif exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
    return JSONResponse(envelope(code, message), status_code=exc.status_code, headers=exc.headers)


async def store_unavailable(request: Request, exc: Exception) -> Response:
    """The store's transient errors (its database unreachable for now): 503 with ``Retry-After``."""
    log.warning("store unavailable on %s %s: %s", request.method, request.url.path, exc)
    return JSONResponse(
        envelope("store_unavailable", "the database is unreachable right now; retry shortly", {"retryAfter": 1}),
        status_code=503,
        headers={"Retry-After": "1"},
    )


async def client_disconnected(request: Request, exc: Exception) -> Response:
    """The client hung up before its body arrived: one line in the log; the answer goes nowhere."""
    log.info("client hung up during %s %s before sending its whole body", request.method, request.url.path)
    return JSONResponse(envelope("client_disconnected", "the request body was not received"), status_code=400)


async def unexpected_error(request: Request, exc: Exception) -> Response:
    """Anything else: logged, reported as 500 ``internal_error`` without internals."""
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    # Sent from outside the app's middleware (Starlette's last resort): it names the headers every answer has.
    return JSONResponse(
        envelope("internal_error", "the server failed to handle this request; see its log"),
        status_code=500,
        headers={name.decode(): value.decode() for name, value in ALWAYS},
    )


EXCEPTION_HANDLERS: dict[Any, Any] = {
    BridgeError: bridge_error,
    HTTPException: http_error,
    ClientDisconnect: client_disconnected,
    Exception: unexpected_error,
}
