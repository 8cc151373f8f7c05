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

The engine counts in plain numbers (an answer costs a dict update, not a metric object);
``prometheus_client`` turns them into its metric families and its text format when
``/metrics`` is first scraped, and is not loaded before.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from itertools import accumulate
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric

#: How long a scrape's reading of the pending interrupts is reused.
PENDING_TTL_S = 5.0
#: Seconds: a minute to a week, the span a person takes to answer.
RESOLUTION_BUCKETS = (1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400, 7 * 86400)

#: ``(kind, open interrupts, earliest requested_at in ms)`` per kind.
PendingReader = Callable[[], Awaitable[list[tuple[str, int, int]]]]
#: How many notices the outbox holds queued.
QueuedReader = Callable[[], Awaitable[int]]


def content_type() -> str:
    """The media type of a scrape's text (prometheus_client's, loaded on first use)."""
    from prometheus_client.exposition import CONTENT_TYPE_LATEST

    return str(CONTENT_TYPE_LATEST)


#: The ``le`` label of each bucket, as the text format spells it, ``+Inf`` last.
_BOUNDS = (*(str(float(b)) for b in RESOLUTION_BUCKETS), "+Inf")


class _Resolutions:
    """One kind's answer times, counted into :data:`RESOLUTION_BUCKETS` (``le``: at most) and beyond."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * len(_BOUNDS)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(RESOLUTION_BUCKETS, seconds)] += 1
        self.total += seconds

    def buckets(self) -> list[tuple[str, float]]:
        """Cumulative ``(le, count)`` pairs, ``+Inf`` last."""
        return list(zip(_BOUNDS, accumulate(self.counts), strict=True))


class Metrics:
    """The engine's counts and the Prometheus text a scrape returns."""

    def __init__(self, pending: PendingReader, now_ms: Callable[[], int], queued: QueuedReader | None = None) -> None:
        self._read_pending = pending
        self._read_queued = queued
        self._now_ms = now_ms
        self._pending_read_at = float("-inf")
        self._lock = asyncio.Lock()
        #: How long a reading of the pending interrupts is reused (seconds).
        self.pending_ttl_s = PENDING_TTL_S
        #: ``kind → (open interrupts, age of the oldest in seconds)`` as last read; a kind seen once stays.
        self._pending: dict[str, tuple[int, float]] = {}
        self._queued: int = 0
        self._resolutions: dict[str, _Resolutions] = {}
        self._notifications: Counter[tuple[str, str]] = Counter()
        self._rejected: Counter[str] = Counter()
        self._registry: CollectorRegistry | None = None

    def resolved(self, kind: str, requested_at_ms: int, resolved_at_ms: int) -> None:
        """An interrupt of ``kind`` was answered (resolved) after waiting since ``requested_at_ms``."""
        counted = self._resolutions.get(kind)
        if counted is None:
            counted = self._resolutions[kind] = _Resolutions()
        counted.observe(max(0, resolved_at_ms - requested_at_ms) / 1000)

    def callback_rejected(self, reason: str) -> None:
        """An answer through a signed link was refused with the error code ``reason``."""
        self._rejected[reason] += 1

    def notification(self, channel: str, outcome: str) -> None:
        """A notice on ``channel`` was delivered, retried, dead-lettered or refused (``outcome``)."""
        self._notifications[(channel, outcome)] += 1

    async def scrape(self) -> bytes:
        """The Prometheus text exposition of every series, the pending ones read fresh enough."""
        from prometheus_client import generate_latest

        async with self._lock:
            if time.monotonic() - self._pending_read_at >= self.pending_ttl_s:
                await self._refresh_pending()
        return bytes(generate_latest(self._collectors()))

    def _collectors(self) -> CollectorRegistry:
        if self._registry is None:
            from prometheus_client import CollectorRegistry

            self._registry = CollectorRegistry(auto_describe=False)
            self._registry.register(_Families(self))
        return self._registry

    async def _refresh_pending(self) -> None:
        rows = await self._read_pending()
        now = self._now_ms()
        # A kind with nothing open any more reads 0 rather than its last figure.
        fresh = dict.fromkeys(self._pending, (0, 0.0))
        for kind, count, oldest in rows:
            fresh[kind] = (count, max(0, now - oldest) / 1000)
        self._pending = fresh
        if self._read_queued is not None:
            self._queued = await self._read_queued()
        self._pending_read_at = time.monotonic()

    def families(self) -> Iterator[Metric]:
        """The series as prometheus_client's metric families (imported here: a scrape is under way)."""
        from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        pending = GaugeMetricFamily("openwop_interrupts_pending", "Open interrupts, every tenant", labels=["kind"])
        oldest = GaugeMetricFamily(
            "openwop_interrupt_oldest_pending_seconds", "Age of the oldest open interrupt", labels=["kind"]
        )
        for kind, (count, age) in sorted(self._pending.items()):
            pending.add_metric([kind], count)
            oldest.add_metric([kind], age)
        yield pending
        yield oldest
        resolution = HistogramMetricFamily(
            "openwop_interrupt_resolution_seconds",
            "From an interrupt's request to the answer that resolved it",
            labels=["kind"],
        )
        for kind, counted in sorted(self._resolutions.items()):
            resolution.add_metric([kind], counted.buckets(), sum_value=counted.total)
        yield resolution
        notifications = CounterMetricFamily(
            "openwop_notifications",
            "Notice delivery attempts, by channel and outcome (delivered, retry, dead, refused)",
            labels=["channel", "outcome"],
        )
        for (channel, outcome), count in sorted(self._notifications.items()):
            notifications.add_metric([channel, outcome], count)
        yield notifications
        yield GaugeMetricFamily("openwop_notifications_queued", "Notices waiting to be delivered", value=self._queued)
        rejected = CounterMetricFamily(
            "openwop_callbacks_rejected",
            "Answers through signed links that were refused, by error code",
            labels=["reason"],
        )
        for reason, count in sorted(self._rejected.items()):
            rejected.add_metric([reason], count)
        yield rejected


class _Families:
    """A prometheus_client collector over one :class:`Metrics`."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Any]:
        return self._metrics.families()
