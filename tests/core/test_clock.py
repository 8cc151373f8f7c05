"""Timestamps and ids the wire carries."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from openwop_bridge.core import clock
from openwop_bridge.core.clock import iso_ms, parse_iso_ms, ulid


@pytest.mark.parametrize(
    "ms",
    [
        0,
        1,
        999,
        1_000,
        1_001,
        59_999,
        60_000,
        1_763_700_000_123,
        1_763_700_000_999,
        1_763_700_001_000,
        4_102_444_800_000,
    ],
)
def test_iso_ms_is_utc_with_milliseconds_and_round_trips(ms: int) -> None:
    expected = datetime.fromtimestamp(ms // 1000, tz=UTC).isoformat().replace("+00:00", "") + f".{ms % 1000:03d}Z"
    assert iso_ms(ms) == expected
    assert parse_iso_ms(iso_ms(ms)) == ms


def test_iso_ms_across_second_boundaries_in_any_order() -> None:
    # The formatter keeps the last second's text; going back and forth must not reuse it wrongly.
    for ms in (5_999, 6_000, 5_999, 7_000_000, 6_001):
        assert parse_iso_ms(iso_ms(ms)) == ms


def test_ulids_sort_by_time_and_are_unique() -> None:
    ids = [ulid(ms) for ms in (1, 2, 2, 1_000_000)]
    assert all(len(i) == 26 for i in ids)
    assert ids[0] < ids[1] and ids[1] != ids[2] and max(ids[1], ids[2]) < ids[3]


@pytest.fixture
def fresh_entropy() -> Iterator[None]:
    """Ids drawn afresh from ``os.urandom`` in the test, and again after it."""
    clock._ENTROPY.reset()
    yield
    clock._ENTROPY.reset()


# Each random digit spells the low 5 bits of one random byte: 0x84 and 0xE4 are both 4.
@pytest.mark.parametrize(
    ("fill", "tail"), [(0x00, "0" * 16), (0xFF, "z" * 16), (0x84, "4" * 16), (0xE4, "4" * 16), (0x1D, "x" * 16)]
)
def test_ulid_is_the_crockford_base32_of_time_and_randomness(
    monkeypatch: pytest.MonkeyPatch, fresh_entropy: None, fill: int, tail: str
) -> None:
    # The ULID specification's example: 1469918176385 ms is the time part 01ARYZ6S41.
    monkeypatch.setattr("openwop_bridge.core.clock.os.urandom", lambda n: bytes([fill]) * n)
    assert ulid(1469918176385) == "01aryz6s41" + tail
    assert ulid((1 << 48) - 1) == "7zzzzzzzzz" + tail


def test_ids_minted_on_several_threads_are_all_different() -> None:
    minted: list[list[str]] = [[] for _ in range(4)]

    def mint(out: list[str]) -> None:
        out.extend(ulid(7) for _ in range(2_000))  # one millisecond: only the random part differs

    threads = [threading.Thread(target=mint, args=(out,)) for out in minted]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for out in minted for i in out]
    assert len(set(every)) == len(every) == 8_000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_draws_its_own_randomness() -> None:
    ulid(0)  # the parent holds a draw the child must not reuse
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, ",".join(ulid(0) for _ in range(50)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = set(pipe.read().split(","))
    parent = {ulid(0) for _ in range(50)}
    assert len(child) == 50 and not child & parent
