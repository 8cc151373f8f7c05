"""Connections to webhook receivers (webhooks.md §Limits): a pool per tenant and host name, one deadline per
exchange, and bounds on what one tenant may hold at once.

A pooled TLS connection was verified for one host name (SNI and the certificate check): each ``(tenant, host
name)`` has a client of its own, so another name on the same address, or another tenant's endpoint, never rides
on a connection verified for someone else. At most :data:`MAX_POOLS` clients are kept; past that the least
recently used idle one is closed.

Every exchange (connect, TLS, send, read the answer) ends by one deadline, whatever the receiver does: one that
drips its answer a byte at a time holds its connection no longer than one that never answers.

One tenant holds at most :data:`TENANT_SLOTS` deliveries in flight, and :data:`ENDPOINT_SLOTS` to one endpoint
(scheme, host and port); a delivery past either bound is not attempted now (:meth:`Transport.hold` gives None)
and comes due again a second or two later, its attempt uncounted (a last guard: the outbox worker waits for a place
under both bounds before it starts an attempt, :meth:`~openwop_bridge.notify.webhook.channel.Webhooks.bounds`). A
tenant's endpoint challenges are bounded apart (:data:`VERIFY_SLOTS`). So a tenant's hung endpoints hold a few
connections of their own and no one else's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from openwop_bridge.notify.webhook.egress import Target

if TYPE_CHECKING:
    import httpx

#: Deliveries one tenant may have in flight at once (every endpoint of it).
TENANT_SLOTS = 16
#: Deliveries one tenant may have in flight to one endpoint (scheme, host, port) at once.
ENDPOINT_SLOTS = 4
#: Endpoint challenges (Standard Webhooks registrations) one tenant may have in flight at once.
VERIFY_SLOTS = 4
#: Clients (connection pools) kept, one per tenant and host name.
MAX_POOLS = 256
#: The most bytes of a receiver's answer read (a verification's JSON; a delivery's is not read).
ANSWER_MAX = 16 * 1024


_K = TypeVar("_K", bound=Hashable)


@contextlib.contextmanager
def _counted(table: dict[_K, int], key: _K) -> Iterator[None]:
    """Count one more under ``key`` while the block runs (the key is dropped at zero)."""
    table[key] = table.get(key, 0) + 1
    try:
        yield
    finally:
        left = table[key] - 1
        if left:
            table[key] = left
        else:
            del table[key]


@dataclass(slots=True)
class _Pool:
    client: httpx.AsyncClient
    using: int = 0


class Transport:
    """Outbound requests to receivers (see the module)."""

    def __init__(
        self,
        tls: ssl.SSLContext | None = None,
        *,
        per_tenant: int = TENANT_SLOTS,
        per_endpoint: int = ENDPOINT_SLOTS,
        verify_per_tenant: int = VERIFY_SLOTS,
        max_pools: int = MAX_POOLS,
        network: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        #: The trust for receivers' certificates (None: the system's).
        self.tls = tls
        self.per_tenant = per_tenant
        self.per_endpoint = per_endpoint
        self.verify_per_tenant = verify_per_tenant
        self.max_pools = max_pools
        self._network = network  # stands in for the network in a unit test
        self._pools: OrderedDict[tuple[str, str], _Pool] = OrderedDict()
        self._tenants: dict[str, int] = {}
        self._endpoints: dict[tuple[str, str, str, int], int] = {}
        self._verifying: dict[str, int] = {}
        #: Requests sent to receivers (deliveries and verifications), counted before each is tried.
        self.connections = 0

    # --- bounds -----------------------------------------------------------------------

    def hold(self, tenant: str, target: Target) -> contextlib.ExitStack | None:
        """A delivery slot of ``tenant`` to ``target``'s endpoint (release it by closing it), or None when the tenant
        or the endpoint holds as many as it may."""
        endpoint = (tenant, target.scheme, target.host, target.port)
        if self._tenants.get(tenant, 0) >= self.per_tenant or self._endpoints.get(endpoint, 0) >= self.per_endpoint:
            return None
        stack = contextlib.ExitStack()
        stack.enter_context(_counted(self._tenants, tenant))
        stack.enter_context(_counted(self._endpoints, endpoint))
        return stack

    def hold_verification(self, tenant: str) -> contextlib.ExitStack | None:
        """A verification slot of ``tenant``, or None when it has as many challenges in flight as it may."""
        if self._verifying.get(tenant, 0) >= self.verify_per_tenant:
            return None
        stack = contextlib.ExitStack()
        stack.enter_context(_counted(self._verifying, tenant))
        return stack

    # --- requests ---------------------------------------------------------------------

    def _pool(self, tenant: str, host: str) -> _Pool:
        import httpx  # loaded with the first delivery, not at start-up

        key = (tenant, host)
        pool = self._pools.get(key)
        if pool is None:
            self._evict(room=1)
            client = httpx.AsyncClient(
                follow_redirects=False,
                trust_env=False,
                verify=self.tls if self.tls is not None else True,
                limits=httpx.Limits(max_connections=self.per_tenant + self.verify_per_tenant),
                transport=self._network,
            )
            pool = self._pools[key] = _Pool(client)
        self._pools.move_to_end(key)
        return pool

    def _evict(self, room: int) -> None:
        """Close the least recently used idle pools, to leave ``room`` under :attr:`max_pools`."""
        excess = len(self._pools) + room - self.max_pools
        for key in [k for k, p in self._pools.items() if p.using == 0][: max(excess, 0)]:
            pool = self._pools.pop(key)
            if self._network is None:
                task = asyncio.get_running_loop().create_task(pool.client.aclose())
                task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def post(
        self, tenant: str, target: Target, raw: bytes, headers: dict[str, str], deadline_s: float, *, read: bool = False
    ) -> tuple[int, int | None, bytes]:
        """POST ``raw`` to the checked address, never following a redirect, all of it within ``deadline_s`` (else
        :class:`TimeoutError`): ``(status, Retry-After in ms, the answer's first :data:`ANSWER_MAX` bytes when
        ``read``, else nothing)``."""
        import httpx

        pool = self._pool(tenant, target.host)
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        request = pool.client.build_request(
            "POST",
            target.url,
            content=raw,
            headers={**headers, "Host": target.host_header},
            extensions=extensions,
            timeout=httpx.Timeout(deadline_s),
        )
        self.connections += 1
        pool.using += 1
        try:
            async with asyncio.timeout(deadline_s):  # connect, TLS, send and read: one deadline for all
                response = await pool.client.send(request, stream=True, follow_redirects=False)
                try:
                    answer = b""
                    if read:
                        async for chunk in response.aiter_bytes():
                            answer += chunk
                            if len(answer) >= ANSWER_MAX:
                                break
                    retry_after = response.headers.get("Retry-After", "")
                    wait = int(retry_after) * 1000 if retry_after.isdigit() else None
                    return response.status_code, wait, answer[:ANSWER_MAX]
                finally:
                    await response.aclose()
        finally:
            pool.using -= 1

    async def aclose(self) -> None:
        """Close every pool."""
        pools, self._pools = list(self._pools.values()), OrderedDict()
        for pool in pools:
            with contextlib.suppress(Exception):
                await pool.client.aclose()
