"""How fast one key may create runs: a token bucket per key, decided on a time the caller gives.

A key holds up to :attr:`RunRate.burst` runs' worth of tokens and regains
:attr:`RunRate.per_minute` of them a minute; creating a run spends one. With none
left, :meth:`RunRateBuckets.take` says how many whole seconds until one is back
(what ``Retry-After`` carries). Keys whose bucket would be full again are
forgotten first when the table is full, so it stays bounded whoever calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RunRate:
    """Runs one key may create: ``per_minute`` on average, up to ``burst`` at once."""

    per_minute: int = 600
    burst: int = 150


class RunRateBuckets:
    """Each key's tokens at its last run creation; at most ``kept`` keys remembered."""

    def __init__(self, rate: RunRate, *, kept: int = 10_000) -> None:
        self.rate = rate
        self._per_ms = rate.per_minute / 60_000
        self._kept = kept
        #: key → (tokens after its last take, when, in ms)
        self._buckets: dict[str, tuple[float, int]] = {}

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, key: str, now_ms: int) -> int | None:
        """Spend one of ``key``'s tokens at ``now_ms``: None when there was one, else the seconds until there is."""
        tokens = self._tokens(key, now_ms)
        if tokens >= 1:
            self._remember(key, tokens - 1, now_ms)
            return None
        return max(1, math.ceil((1 - tokens) / self._per_ms / 1000))

    def _tokens(self, key: str, now_ms: int) -> float:
        kept = self._buckets.get(key)
        if kept is None:
            return float(self.rate.burst)
        tokens, at = kept
        return min(float(self.rate.burst), tokens + max(0, now_ms - at) * self._per_ms)

    def _remember(self, key: str, tokens: float, now_ms: int) -> None:
        self._buckets.pop(key, None)
        if len(self._buckets) >= self._kept:
            full = [k for k in self._buckets if self._tokens(k, now_ms) >= self.rate.burst]
            for k in full:
                del self._buckets[k]
            while len(self._buckets) >= self._kept:  # none full: forget the oldest (dicts keep insertion order)
                del self._buckets[next(iter(self._buckets))]
        self._buckets[key] = (tokens, now_ms)
