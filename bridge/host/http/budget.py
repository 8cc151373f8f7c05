"""One budget for the bytes of answers handed to connections and not yet taken by their clients.

Streams and whole event logs are paced (:mod:`bridge.host.http.streams`,
:mod:`bridge.host.http.paged`): a client that stops reading stops them. Every other answer — a
run's snapshot with its open interrupts, a page of a list, a document — is one body, built
whole and handed to the connection whole; a client that never reads keeps it in the server's
memory until it leaves, and many such clients could hold any amount.

:class:`ResponseBudget` counts every answer whose declared ``Content-Length`` is at least
:data:`COUNTED_FROM` against one budget per instance (``--max-pending-response-bytes``), from
the moment it starts until the connection has taken all but the last piece of it (the body goes
out in pieces of :data:`PIECE` bytes, and the server waits for a slow client between pieces). An
answer that would take the budget past its size is refused before it starts, with
``429 rate_limited`` and ``Retry-After``; so what waits for stalled clients never exceeds the
budget, however many they are. Answers smaller than :data:`COUNTED_FROM` are not counted.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bridge.core.errors import RateLimitedError
from bridge.host.http.responses import JSONResponse, error_headers
from bridge.host.v2.errors import error_response as v2_error_response
from bridge.host.v2.negotiation import is_v2_path

#: The default budget: 64 MiB of answers waiting for their clients, per instance.
DEFAULT_BYTES = 64 * 1024 * 1024
#: Answers below this size are not counted (their connections' buffers hold them).
COUNTED_FROM = 64 * 1024
#: The pieces a counted answer's body goes out in.
PIECE = 64 * 1024
#: What ``Retry-After`` says when an answer is refused.
RETRY_AFTER_S = 5


class ResponseBudget:
    """ASGI middleware holding every large answer of ``app`` under one budget of ``limit_bytes``."""

    def __init__(self, app: ASGIApp, limit_bytes: int = DEFAULT_BYTES) -> None:
        self.app = app
        self.limit_bytes = limit_bytes
        #: Bytes of the answers counted now.
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held = 0
        refused = False

        async def sending(message: Message) -> None:
            nonlocal held, refused
            if refused:
                return
            if message["type"] == "http.response.start":
                size = _content_length(message)
                if size >= COUNTED_FROM:
                    if self.in_flight + size > self.limit_bytes:
                        refused = True
                        await _refusal(scope, receive, send)
                        return
                    self.in_flight += size
                    held = size
                await send(message)
                return
            if message["type"] == "http.response.body" and held:
                await _in_pieces(message, send)
                if not message.get("more_body", False):
                    self._give_back(held)
                    held = 0
                return
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            if held:
                self._give_back(held)

    def _give_back(self, size: int) -> None:
        self.in_flight = max(0, self.in_flight - size)


def _content_length(message: Message) -> int:
    for name, value in message.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


async def _in_pieces(message: Message, send: Send) -> None:
    """Send a body message as pieces, each ``send`` waiting until the connection took the one before."""
    body: bytes = message.get("body", b"")
    more = bool(message.get("more_body", False))
    if len(body) <= PIECE:
        await send(message)
        return
    view = memoryview(body)
    for start in range(0, len(body), PIECE):
        last = start + PIECE >= len(body)
        piece = bytes(view[start : start + PIECE])
        await send({"type": "http.response.body", "body": piece, "more_body": more or not last})


async def _refusal(scope: Scope, receive: Receive, send: Send) -> None:
    error = RateLimitedError(
        "too many large answers are waiting for their clients on this instance; retry later", RETRY_AFTER_S
    )
    if is_v2_path(scope["path"]):
        await v2_error_response(error)(scope, receive, send)
        return
    response = JSONResponse(error.envelope(), status_code=error.status, headers=error_headers(error))
    await response(scope, receive, send)
