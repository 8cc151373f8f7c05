"""Headers every answer of the host carries, whichever surface or error produced it.

``X-Content-Type-Options: nosniff``: a browser takes each answer as the type it
declares (JSON stays JSON, an event stream stays one), never as HTML or script it
guessed from the bytes. :class:`AnswerHeaders` adds it to what the app sends; the
answers sent before the app (header limits, malformed requests) and after it failed
(500) add :data:`ALWAYS` themselves.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: ``(name, value)`` pairs on every answer, names lower-case.
ALWAYS: tuple[tuple[bytes, bytes], ...] = ((b"x-content-type-options", b"nosniff"),)


def with_always(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` plus those of :data:`ALWAYS` they do not name."""
    named = {name.lower() for name, _ in headers}
    return headers + [pair for pair in ALWAYS if pair[0] not in named]


class AnswerHeaders:
    """ASGI middleware adding :data:`ALWAYS` to every HTTP answer of ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": with_always(list(message.get("headers", [])))}
            await send(message)

        await self.app(scope, receive, sending)
