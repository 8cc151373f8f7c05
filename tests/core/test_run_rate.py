"""The per-key rate of run creation: a token bucket per key, on a clock the caller gives."""

from __future__ import annotations

from openwop_bridge.core.quota import RunRate, RunRateBuckets


def test_a_key_gets_its_burst_then_waits_for_the_rate() -> None:
    buckets = RunRateBuckets(RunRate(per_minute=60, burst=3))
    assert [buckets.take("k", 0) for _ in range(3)] == [None, None, None]
    # One run a second refills: the fourth waits a second.
    assert buckets.take("k", 0) == 1
    assert buckets.take("k", 500) == 1
    assert buckets.take("k", 1000) is None
    assert buckets.take("k", 1000) == 1


def test_keys_are_counted_apart() -> None:
    buckets = RunRateBuckets(RunRate(per_minute=60, burst=1))
    assert buckets.take("a", 0) is None
    assert buckets.take("a", 0) == 1
    assert buckets.take("b", 0) is None


def test_the_wait_is_whole_seconds_rounded_up() -> None:
    buckets = RunRateBuckets(RunRate(per_minute=6, burst=1))
    assert buckets.take("k", 0) is None
    assert buckets.take("k", 0) == 10
    assert buckets.take("k", 9_001) == 1


def test_idle_keys_are_forgotten_so_the_table_stays_bounded() -> None:
    buckets = RunRateBuckets(RunRate(per_minute=60, burst=1), kept=10)
    for i in range(100):
        assert buckets.take(f"k{i}", i * 10_000) is None
    assert len(buckets) <= 10
