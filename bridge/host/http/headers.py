"""Headers every answer of the host carries, whichever surface or error produced it.

``X-Content-Type-Options: nosniff``: a browser takes each answer as the type it
declares (JSON stays JSON, an event stream stays one), never as HTML or script it
guessed from the bytes. The host's layer (:class:`~openwop_bridge.host.layer.HostLayer`) adds it to
what the app sends; the answers sent before the app (header limits, malformed requests, refused
host names) and after it failed (500) add :data:`ALWAYS` themselves.
"""

from __future__ import annotations

#: ``(name, value)`` pairs on every answer, names lower-case.
ALWAYS: tuple[tuple[bytes, bytes], ...] = ((b"x-content-type-options", b"nosniff"),)


def with_always(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` plus those of :data:`ALWAYS` they do not name."""
    named = {name.lower() for name, _ in headers}
    return headers + [pair for pair in ALWAYS if pair[0] not in named]
