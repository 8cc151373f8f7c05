"""Time and identity, taken through one object so they can be replaced in tests.

Decision logic never reads the wall clock or mints random ids itself: it is
handed ``now`` by the caller, and the engine gets both from a :class:`Clock`.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
#: Every pair of Crockford digits, by the 10 bits it encodes: a ULID is 13 lookups.
_PAIRS = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)
_PAIR_SHIFTS = tuple(range(40, -1, -10))
#: Every byte to the Crockford digit of its low 5 bits.
_LOW_5_BITS = bytes(ord(_CROCKFORD[b & 31]) for b in range(256))


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
    """The real clock and ``os.urandom`` ids (ULID layout: 48-bit ms + 80 random bits, see :func:`ulid`)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{ulid(self.now_ms())}"


class _Entropy:
    """Random digits from ``os.urandom``, drawn a few kilobytes at a time rather than one system call per id.

    Each random byte gives one Crockford digit, its low 5 bits (256 is a multiple of 32: every digit
    equally likely), so a whole draw is spelled by one ``bytes.translate``; a ULID's 80 random bits
    are 16 such digits. Each id's digits are taken under a lock (ids are minted on the event loop and
    on the store's writer thread), and a forked child starts from a fresh draw, never from its parent's.
    """

    _DRAW = 4096  # bytes: a multiple of 16, so a draw splits into whole ids

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget what is drawn (and any holder of the lock: this also runs in a forked child)."""
        self._lock = threading.Lock()
        self._digits = ""
        self._at = 0

    def random_digits(self) -> str:
        """The 16 Crockford digits of 80 random bits no one else is given."""
        with self._lock:
            at = self._at
            if at >= len(self._digits):
                self._digits, at = os.urandom(self._DRAW).translate(_LOW_5_BITS).decode(), 0
            self._at = at + 16
            return self._digits[at : at + 16]


_ENTROPY = _Entropy()
os.register_at_fork(after_in_child=_ENTROPY.reset)


#: The time digits of the last millisecond a ULID was minted for (one tuple: read and replaced whole).
_last_ms: tuple[int, str] = (-1, "")


def _time_digits(ms: int) -> str:
    """The 10 digits of a ULID's 48-bit time (two zero bits on top): 5 pairs of 10 bits."""
    global _last_ms
    cached = _last_ms
    if cached[0] != ms:
        value = ms & ((1 << 48) - 1)
        cached = (ms, "".join([_PAIRS[(value >> shift) & 1023] for shift in _PAIR_SHIFTS]))
        _last_ms = cached
    return cached[1]


def ulid(ms: int) -> str:
    """A 26-character Crockford base32 ULID for the given millisecond time."""
    return _time_digits(ms) + _ENTROPY.random_digits()


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
