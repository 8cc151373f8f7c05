"""Change notifications for the operator inbox.

The inbox page keeps one stream open and re-reads ``GET /v1/interrupts``
whenever it is told something changed. The stream carries no interrupt data
(the page fetches that with its own key, through the normal endpoint), only
``event: changed`` when an event that can change a tenant's inbox is
committed: an interrupt requested or resolved, a vote, an ``ask``, a run that
ended. A burst of events becomes one notification.

Each stream ends after ``lifetime_s`` and the page reconnects (and re-reads the
inbox, covering the moment it was not listening). The bound keeps a graceful
shutdown of the server from waiting on open browser tabs for longer than that.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from openwop_bridge.runtime.engine import Engine

#: Event types after which a tenant's pending-interrupt list may look different.
INBOX_EVENT_TYPES = frozenset(
    {
        "interrupt.requested",
        "interrupt.resolved",
        "node.suspended",
        "node.cancelled",
        "approval.granted",
        "approval.rejected",
        "approval.overridden",
        "bridge.approval.asked",
        "run.cancelled",
        "run.completed",
        "run.failed",
    }
)

CHANGED = b"event: changed\ndata: {}\n\n"
LIFETIME_S = 20.0
SETTLE_S = 0.1
_TENANT_CACHE_LIMIT = 10_000


class _TenantOf:
    """The tenant of a run, remembered for the life of one stream."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._known: dict[str, str | None] = {}

    async def __call__(self, run_id: str) -> str | None:
        if run_id not in self._known:
            if len(self._known) >= _TENANT_CACHE_LIMIT:
                self._known.clear()
            run = await self._engine.run_record(run_id)
            self._known[run_id] = run.tenant if run is not None else None
        return self._known[run_id]


async def inbox_changes(
    engine: Engine,
    tenant: str,
    *,
    keepalive_s: float = 15.0,
    lifetime_s: float = LIFETIME_S,
    settle_s: float = SETTLE_S,
) -> AsyncIterator[bytes]:
    """SSE bytes: ``event: changed`` whenever ``tenant``'s inbox may have changed.

    ``tenant="*"`` follows every tenant. A ``None`` from the hub (this stream fell
    behind, or another instance committed events) is reported as a change: the
    page re-reads, which is always safe.
    """
    loop = asyncio.get_running_loop()
    ends = loop.time() + lifetime_s
    tenant_of = _TenantOf(engine)

    async def concerns_us(doc: dict[str, Any] | None) -> bool:
        if doc is None:
            return True
        if doc.get("type") not in INBOX_EVENT_TYPES:
            return False
        return tenant == "*" or await tenant_of(str(doc.get("runId"))) == tenant

    with engine.hub.subscribe(None, maxsize=1000) as sub:
        yield b": connected\n\n"
        while (remaining := ends - loop.time()) > 0:
            try:
                doc = await sub.get(timeout=min(keepalive_s, remaining))
            except TimeoutError:
                if loop.time() < ends:
                    yield b": keep-alive\n\n"
                continue
            if doc is None:
                sub.overflowed = False
            if not await concerns_us(doc):
                continue
            # Let the rest of a burst (an answer commits several events) arrive,
            # then drop it: the page re-reads everything once anyway.
            await asyncio.sleep(settle_s)
            with contextlib.suppress(asyncio.QueueEmpty):
                while True:
                    sub.queue.get_nowait()
            sub.overflowed = False
            yield CHANGED
