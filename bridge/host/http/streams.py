"""Limits on long-lived streams: how many a key and a run may hold, and how much each may buffer.

Every streaming answer of the host (a run's SSE events on v1 and v2, AG-UI, the
LangGraph API, A2A's streaming methods, the inbox feed, MCP's ``GET /mcp``) and every
whole event log written as JSON (:mod:`openwop_bridge.host.http.paged`) takes a slot before it
starts: at most :attr:`StreamLimits.per_key` streams per key (principal and
tenant) and :attr:`StreamLimits.per_run` per run on this instance. One more is
refused with ``429 rate_limited`` and ``Retry-After`` (what v2 ``events.md``
allows a host that limits subscribers), and no stream starts.

The slot is held by the response (:class:`GuardedStream`) until its body ends or its
client leaves. The response sends its body in pieces of at most
:attr:`StreamLimits.buffer_bytes` and waits until the client has taken what was
sent before it asks its body for more; so a client that stops reading stops the
stream where it stands: the server holds what the stream had ready (one page of
events: :data:`openwop_bridge.runtime.follow.STREAM_PAGE`), the piece being sent and the
socket's write buffer, however long the client stalls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.errors import RateLimitedError


@dataclass(frozen=True, slots=True)
class StreamLimits:
    """How many streams a key and a run may hold at once, and how many bytes a stream sends at a time."""

    per_key: int = 32
    per_run: int = 64
    buffer_bytes: int = 64 * 1024
    #: What ``Retry-After`` says when a stream is refused.
    retry_after_s: int = 5


class Slot:
    """One stream's place under the limits; :meth:`release` gives it back (once)."""

    def __init__(self, slots: StreamSlots, key: tuple[str, str], run_id: str | None) -> None:
        self._slots = slots
        self.key = key
        self.run_id = run_id
        self._held = True

    def release(self) -> None:
        """Give the place back; later calls do nothing."""
        if self._held:
            self._held = False
            self._slots._release(self)


class StreamSlots:
    """The streams open on this instance, by key and by run."""

    def __init__(self, limits: StreamLimits) -> None:
        self.limits = limits
        self._by_key: Counter[tuple[str, str]] = Counter()
        self._by_run: Counter[str] = Counter()

    def take(self, who: Principal, run_id: str | None) -> Slot:
        """A slot for a stream of ``who`` (following ``run_id``, if one), or ``429 rate_limited``."""
        key = (who.tenant, who.id)
        if self._by_key[key] >= self.limits.per_key:
            raise RateLimitedError(
                f"this key already holds {self.limits.per_key} open streams; close one or retry later",
                self.limits.retry_after_s,
                details={"limit": self.limits.per_key, "per": "key"},
            )
        if run_id is not None and self._by_run[run_id] >= self.limits.per_run:
            raise RateLimitedError(
                f"this run already has {self.limits.per_run} open streams; retry later",
                self.limits.retry_after_s,
                details={"limit": self.limits.per_run, "per": "run"},
            )
        self._by_key[key] += 1
        if run_id is not None:
            self._by_run[run_id] += 1
        return Slot(self, key, run_id)

    def open_streams(self, who: Principal) -> int:
        """How many streams ``who`` holds open here."""
        return self._by_key[(who.tenant, who.id)]

    def _release(self, slot: Slot) -> None:
        self._by_key[slot.key] -= 1
        if self._by_key[slot.key] <= 0:
            del self._by_key[slot.key]
        if slot.run_id is not None:
            self._by_run[slot.run_id] -= 1
            if self._by_run[slot.run_id] <= 0:
                del self._by_run[slot.run_id]


class GuardedStream(Response):
    """A streaming response holding its :class:`Slot` until it ends, sending at the client's pace."""

    def __init__(self, inner: Response, slot: Slot, buffer_bytes: int) -> None:
        self.inner = inner
        self.slot = slot
        self.buffer_bytes = buffer_bytes
        self.status_code = inner.status_code
        self.background = None
        self.raw_headers = inner.raw_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.inner(scope, receive, paced(send, self.buffer_bytes))
        finally:
            self.slot.release()


def paced(send: Send, piece: int) -> Send:
    """``send`` writing bodies in pieces of at most ``piece`` bytes, asking for more once the client took them."""

    async def paced_send(message: Message) -> None:
        if message["type"] != "http.response.body":
            await send(message)
            return
        body: bytes = message.get("body", b"")
        more: bool = message.get("more_body", False)
        last = max(0, (len(body) - 1) // piece * piece)
        for start in range(0, last, piece):
            await send({"type": "http.response.body", "body": body[start : start + piece], "more_body": True})
        await send({"type": "http.response.body", "body": body[last:], "more_body": more})
        if more:
            # Nothing to write: the server takes it once the client took what went before, so the
            # stream asks its body for more only then.
            await send({"type": "http.response.body", "body": b"", "more_body": True})

    return paced_send


def guarded(request: Request, who: Principal, run_id: str | None, stream: Response) -> Response:
    """``stream`` holding a slot of ``who`` (and of ``run_id``) while it runs, or ``429 rate_limited`` now."""
    slots = _slots(request)
    if slots is None:
        return stream
    return GuardedStream(stream, slots.take(who, run_id), slots.limits.buffer_bytes)


async def guarded_stream(
    request: Request, who: Principal, run_id: str | None, respond: Callable[[], Awaitable[Response]]
) -> Response:
    """The answer of ``respond()``, a stream holding a slot of ``who`` (and ``run_id``) while it runs.

    The slot is taken first (``429 rate_limited`` and ``respond`` is not called), so
    nothing starts beyond the limits; an answer that is not a stream (an error, a whole
    body) gives it back at once.
    """
    slots = _slots(request)
    if slots is None:
        return await respond()
    slot = slots.take(who, run_id)
    try:
        response = await respond()
    except BaseException:
        slot.release()
        raise
    if hasattr(response, "body"):
        slot.release()
        return response
    return GuardedStream(response, slot, slots.limits.buffer_bytes)


async def guarded_app(
    app: ASGIApp, who: Principal, run_id: str | None, scope: Scope, receive: Receive, send: Send
) -> None:
    """Call the ASGI ``app`` (a stream) holding a slot of ``who`` (and ``run_id``) until it returns, paced.

    ``429 rate_limited`` (raised, before ``app`` is called) when the slot is refused.
    """
    slots = _slots(Request(scope))
    if slots is None:
        await app(scope, receive, send)
        return
    slot = slots.take(who, run_id)
    try:
        await app(scope, receive, paced(send, slots.limits.buffer_bytes))
    finally:
        slot.release()


def _slots(request: Request) -> StreamSlots | None:
    """The app's stream slots (none in an app not built by :func:`~openwop_bridge.host.app.create_app`: no
    limits)."""
    found: StreamSlots | None = getattr(request.app.state, "streams", None)
    return found
