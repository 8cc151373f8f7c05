"""Prometheus metrics: what operators watch about people-in-the-loop.

One :class:`Metrics` per engine, with a registry of its own (several engines in one
process never collide). Labels stay bounded — an interrupt kind, a channel, an outcome, a
refusal's error code — never a run, a person or a tenant, so a series set cannot grow
with traffic.

- ``openwop_interrupts_pending{kind}`` and ``openwop_interrupt_oldest_pending_seconds{kind}``
  are read from the store when scraped (every instance sharing a database reports the same
  figures), at most once per :data:`PENDING_TTL_S`, so scrapes cost the database little.
- ``openwop_interrupt_resolution_seconds{kind}``: from an interrupt's request to the answer
  that resolved it, observed by the instance that took the answer.
- ``openwop_notifications_total{channel,outcome}``: each attempt to deliver a notice, counted by
  the instance that made it: ``delivered``, ``retry`` (failed, tried again later), ``dead`` (given
  up on) or ``refused`` (written past a cap on queued notices, never sent).
- ``openwop_notifications_queued``: notices waiting in the outbox (or being attempted), every
  tenant, read from the store with the pending interrupts.
- ``openwop_callbacks_rejected_total{reason}``: answers through signed links that were
  refused, by the OpenWOP error code of the refusal.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

#: How long a scrape's reading of the pending interrupts is reused.
PENDING_TTL_S = 5.0
#: Seconds: a minute to a week, the span a person takes to answer.
RESOLUTION_BUCKETS = (1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400, 7 * 86400)
CONTENT_TYPE = CONTENT_TYPE_LATEST

#: ``(kind, open interrupts, earliest requested_at in ms)`` per kind.
PendingReader = Callable[[], Awaitable[list[tuple[str, int, int]]]]
#: How many notices the outbox holds queued.
QueuedReader = Callable[[], Awaitable[int]]


class Metrics:
    """The engine's Prometheus series and the text a scrape returns."""

    def __init__(self, pending: PendingReader, now_ms: Callable[[], int], queued: QueuedReader | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._read_pending = pending
        self._read_queued = queued
        self._now_ms = now_ms
        self._pending_read_at = float("-inf")
        self._kinds_seen: set[str] = set()
        self._lock = asyncio.Lock()
        #: How long a reading of the pending interrupts is reused (seconds).
        self.pending_ttl_s = PENDING_TTL_S
        self.pending = Gauge(
            "openwop_interrupts_pending", "Open interrupts, every tenant", ["kind"], registry=self.registry
        )
        self.oldest = Gauge(
            "openwop_interrupt_oldest_pending_seconds",
            "Age of the oldest open interrupt",
            ["kind"],
            registry=self.registry,
        )
        self.resolution = Histogram(
            "openwop_interrupt_resolution_seconds",
            "From an interrupt's request to the answer that resolved it",
            ["kind"],
            buckets=RESOLUTION_BUCKETS,
            registry=self.registry,
        )
        self.notifications = Counter(
            "openwop_notifications",
            "Notice delivery attempts, by channel and outcome (delivered, retry, dead, refused)",
            ["channel", "outcome"],
            registry=self.registry,
        )
        self.queued = Gauge("openwop_notifications_queued", "Notices waiting to be delivered", registry=self.registry)
        self.callbacks_rejected = Counter(
            "openwop_callbacks_rejected",
            "Answers through signed links that were refused, by error code",
            ["reason"],
            registry=self.registry,
        )

    def resolved(self, kind: str, requested_at_ms: int, resolved_at_ms: int) -> None:
        """An interrupt of ``kind`` was answered (resolved) after waiting since ``requested_at_ms``."""
        self.resolution.labels(kind=kind).observe(max(0, resolved_at_ms - requested_at_ms) / 1000)

    def callback_rejected(self, reason: str) -> None:
        """An answer through a signed link was refused with the error code ``reason``."""
        self.callbacks_rejected.labels(reason=reason).inc()

    def notification(self, channel: str, outcome: str) -> None:
        """A notice on ``channel`` was delivered, retried, dead-lettered or refused (``outcome``)."""
        self.notifications.labels(channel=channel, outcome=outcome).inc()

    async def scrape(self) -> bytes:
        """The Prometheus text exposition of every series, the pending ones read fresh enough."""
        async with self._lock:
            if time.monotonic() - self._pending_read_at >= self.pending_ttl_s:
                await self._refresh_pending()
        return generate_latest(self.registry)

    async def _refresh_pending(self) -> None:
        rows = await self._read_pending()
        now = self._now_ms()
        seen = set()
        for kind, count, oldest in rows:
            seen.add(kind)
            self.pending.labels(kind=kind).set(count)
            self.oldest.labels(kind=kind).set(max(0, now - oldest) / 1000)
        # A kind with nothing open any more reads 0 rather than its last figure.
        for kind in self._kinds_seen - seen:
            self.pending.labels(kind=kind).set(0)
            self.oldest.labels(kind=kind).set(0)
        self._kinds_seen |= seen
        if self._read_queued is not None:
            self.queued.set(await self._read_queued())
        self._pending_read_at = time.monotonic()
