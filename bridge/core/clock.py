"""Time and identity, taken through one object so they can be replaced in tests.

Decision logic never reads the wall clock or mints random ids itself: it is
handed ``now`` by the caller, and the engine gets both from a :class:`Clock`.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
#: Every pair of Crockford digits, by the 10 bits it encodes: a ULID is 13 lookups.
_PAIRS = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)
_PAIR_SHIFTS = tuple(range(120, -1, -10))


class Clock(Protocol):
    """Where the engine reads time and mints ids."""

    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch."""
        ...

    def monotonic(self) -> float:
        """Seconds on a monotonic clock (for durations and sleeps)."""
        ...

    def new_id(self, prefix: str) -> str:
        """A new globally unique, time-ordered id such as ``run_01j…``."""
        ...


class SystemClock:
    """The real clock and ``os.urandom`` ids (ULID layout: 48-bit ms + 80 random bits)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{ulid(self.now_ms())}"


def ulid(ms: int) -> str:
    """A 26-character Crockford base32 ULID for the given millisecond time."""
    value = (ms & ((1 << 48) - 1)) << 80 | int.from_bytes(os.urandom(10), "big")
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in _PAIR_SHIFTS])


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_last_second: tuple[int, str] = (-1, "")


def iso_ms(ms: int) -> str:
    """ISO 8601 UTC with millisecond precision, e.g. ``2026-11-21T10:00:00.000Z``."""
    global _last_second
    second, milli = divmod(ms, 1000)
    cached = _last_second  # one tuple read: safe beside the writer thread
    if cached[0] != second:
        cached = (second, datetime.fromtimestamp(second, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S."))
        _last_second = cached
    return f"{cached[1]}{milli:03d}Z"


def parse_iso_ms(value: str) -> int:
    """Parse an ISO 8601 timestamp into epoch milliseconds."""
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    # Integer arithmetic: a float timestamp times 1000 can land a millisecond short.
    return (dt - _EPOCH) // timedelta(milliseconds=1)
