"""One budget for the bytes of answers handed to connections and not yet taken by their clients.

Streams and whole event logs are paced (:mod:`openwop_bridge.host.http.streams`,
:mod:`openwop_bridge.host.http.paged`): a client that stops reading stops them. Every other answer — a
run's snapshot with its open interrupts, a page of a list, a document — is one body, built
whole and handed to the connection whole; a client that never reads keeps it in the server's
memory until it leaves, and many such clients could hold any amount.

:class:`Budget` counts every answer whose declared ``Content-Length`` is at least
:data:`COUNTED_FROM` against one budget per instance (``--max-pending-response-bytes``), from
the moment it starts until the connection has taken all but the last piece of it (the body goes
out in pieces of :data:`PIECE` bytes, and the server waits for a slow client between pieces). An
answer that would take the budget past its size is refused before it starts, with
``429 rate_limited`` and ``Retry-After``; so what waits for stalled clients never exceeds the
budget, however many they are. Answers smaller than :data:`COUNTED_FROM` are not counted.
"""

from __future__ import annotations

from starlette.types import Message, Send

#: The default budget: 64 MiB of answers waiting for their clients, per instance.
DEFAULT_BYTES = 64 * 1024 * 1024
#: Answers below this size are not counted (their connections' buffers hold them).
COUNTED_FROM = 64 * 1024
#: The pieces a counted answer's body goes out in.
PIECE = 64 * 1024
#: What ``Retry-After`` says when an answer is refused.
RETRY_AFTER_S = 5


class Budget:
    """The bytes of the large answers counted now, against one limit of ``limit_bytes`` (per instance).

    The host's layer (:class:`~openwop_bridge.host.layer.HostLayer`) takes an answer's size when it
    starts and gives it back once the connection has taken it (see the module).
    """

    def __init__(self, limit_bytes: int = DEFAULT_BYTES) -> None:
        self.limit_bytes = limit_bytes
        #: Bytes of the answers counted now.
        self.in_flight = 0

    def take(self, size: int) -> bool:
        """Count an answer of ``size`` bytes, unless it would pass the limit (then False: refuse it)."""
        if self.in_flight + size > self.limit_bytes:
            return False
        self.in_flight += size
        return True

    def give_back(self, size: int) -> None:
        """An answer counted with :meth:`take` was taken by its client (or ended)."""
        self.in_flight = max(0, self.in_flight - size)


def content_length(message: Message) -> int:
    for name, value in message.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


async def in_pieces(message: Message, send: Send) -> None:
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
