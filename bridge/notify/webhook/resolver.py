"""Name resolution for webhook egress without threads: c-ares (``aiodns``), asynchronous in the event loop.

The system resolver (``getaddrinfo``) blocks a thread per lookup, and asyncio runs it in the loop's small default
executor, shared by everything: names that stop answering would hold every thread until their lookups gave up, and
every other lookup (and anything else run there) would queue behind them. c-ares sends the queries itself and
waits for them together; a lookup past its deadline is abandoned and holds nothing. It reads the system's
resolver configuration and hosts file as ``getaddrinfo`` does.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import aiodns

#: How long c-ares waits for one answer, and how many times it asks (the egress rule's deadline bounds the whole).
QUERY_TIMEOUT_S = 2.0
QUERY_TRIES = 2


class AsyncResolver:
    """Resolves ``(host, port)`` to its addresses (see the module); :class:`OSError` when the lookup fails.

    ``nameservers`` (``"address"`` or ``"address:port"``) replace the system's: a test's own DNS server.
    Made in, and used from, one event loop.
    """

    def __init__(self, nameservers: Sequence[str] | None = None) -> None:
        self._nameservers = list(nameservers) if nameservers else None
        self._resolver: aiodns.DNSResolver | None = None

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        import aiodns  # loaded with the first lookup, not at start-up

        if self._resolver is None:
            self._resolver = aiodns.DNSResolver(self._nameservers, timeout=QUERY_TIMEOUT_S, tries=QUERY_TRIES)
        try:
            result = await self._resolver.getaddrinfo(host, port=port, type=socket.SOCK_STREAM)
        except aiodns.error.DNSError as exc:
            raise OSError(f"lookup failed: {exc.args[-1] if exc.args else exc}") from exc
        return [bytes(node.addr[0]).decode() for node in result.nodes]

    async def aclose(self) -> None:
        """Cancel the lookups still waiting (their callers see :class:`OSError`) and let go of the channel."""
        resolver, self._resolver = self._resolver, None
        if resolver is not None:
            await resolver.close()
