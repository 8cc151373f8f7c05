"""The engine's series as a scrape shows them, read with prometheus_client's own parser: the resolution
histogram's buckets (``le`` inclusive), sum and count, the counters, and each family's type and help."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from openwop_bridge.runtime.metrics import RESOLUTION_BUCKETS, Metrics


async def _no_pending() -> list[tuple[str, int, int]]:
    return [("approval", 2, 1_000)]


async def _queued() -> int:
    return 7


async def test_a_scrape_shows_every_series_with_its_type_and_help() -> None:
    metrics = Metrics(_no_pending, lambda: 4_000, _queued)
    metrics.resolved("approval", 0, 500)  # 0.5 s
    metrics.resolved("approval", 0, 5_000)  # exactly 5 s: in the le="5" bucket
    metrics.resolved("approval", 10_000, 110_000)  # 100 s
    metrics.resolved("clarification", 5_000, 1_000)  # a clock that went back reads 0
    metrics.resolved("approval", 0, 10 * 86_400_000)  # beyond the last bucket: +Inf only
    metrics.callback_rejected("interrupt_not_found")
    metrics.callback_rejected("interrupt_not_found")
    metrics.notification("email", "delivered")
    metrics.notification("webhook", "retry")

    families = {f.name: f for f in text_string_to_metric_families((await metrics.scrape()).decode())}
    # ``*_created`` (when a series began) is optional in the format and not one of ours.
    families = {name: f for name, f in families.items() if not name.endswith("_created")}
    types = {name: f.type for name, f in families.items()}
    assert types == {
        "openwop_interrupts_pending": "gauge",
        "openwop_interrupt_oldest_pending_seconds": "gauge",
        "openwop_interrupt_resolution_seconds": "histogram",
        "openwop_notifications": "counter",
        "openwop_notifications_queued": "gauge",
        "openwop_callbacks_rejected": "counter",
    }, types
    assert all(f.documentation for f in families.values())
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families.values() for s in f.samples}

    def bucket(kind: str, le: str) -> float:
        return samples[("openwop_interrupt_resolution_seconds_bucket", (("kind", kind), ("le", le)))]

    assert [bucket("approval", f"{float(b)}") for b in RESOLUTION_BUCKETS] == [1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3]
    assert bucket("approval", "+Inf") == 4
    assert samples[("openwop_interrupt_resolution_seconds_count", (("kind", "approval"),))] == 4
    assert samples[("openwop_interrupt_resolution_seconds_sum", (("kind", "approval"),))] == 0.5 + 5 + 100 + 864_000
    assert bucket("clarification", "1.0") == 1
    assert samples[("openwop_interrupt_resolution_seconds_sum", (("kind", "clarification"),))] == 0
    assert samples[("openwop_callbacks_rejected_total", (("reason", "interrupt_not_found"),))] == 2
    assert samples[("openwop_notifications_total", (("channel", "email"), ("outcome", "delivered")))] == 1
    assert samples[("openwop_notifications_total", (("channel", "webhook"), ("outcome", "retry")))] == 1
    assert samples[("openwop_interrupts_pending", (("kind", "approval"),))] == 2
    assert samples[("openwop_interrupt_oldest_pending_seconds", (("kind", "approval"),))] == 3
    assert samples[("openwop_notifications_queued", ())] == 7
