"""``GET /metrics`` counts every delivery attempt of a notice by channel and outcome, and reads the
outbox's queued notices from the store, over real uvicorn with prometheus_client's own parser."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from openwop_bridge.core.notices import OutboxLimits
from openwop_bridge.notify.worker import Settled
from tests.conftest import auth
from tests.notify.host import NotifyHost, gate, notify_host

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def _scrape(host: NotifyHost) -> Samples:
    host.engine.metrics.pending_ttl_s = 0
    r = await host.client.get("/metrics", headers=auth("admin"))
    assert r.status_code == 200, r.text
    found: Samples = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def _count(seen: Samples, channel: str, outcome: str) -> float:
    return seen.get(("openwop_notifications_total", (("channel", channel), ("outcome", outcome))), 0)


async def test_every_attempt_is_counted_by_channel_and_outcome(tmp_path: Path) -> None:
    routes = [{"match": {"workflowId": "expense"}, "notify": ["alice", "teams:ops"], "remindAfterMs": 3_600_000}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")]) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        host.smtp.rcpt_replies["alice@example.com"] = "550 5.1.1 No such user"
        host.teams.status = 503
        await host.start_gate()
        await host.until(lambda: any(s.notice.channel == "teams" for s in settled), "a failed Teams attempt")
        host.teams.status = 202
        await host.until(lambda: len([s for s in settled if s.status != "retry"]) == 3, "three notices settled")

        seen = await _scrape(host)
        assert _count(seen, "email", "dead") == 1
        assert _count(seen, "slack", "delivered") == 1
        assert _count(seen, "teams", "retry") == sum(1 for s in settled if s.status == "retry") >= 1
        assert _count(seen, "teams", "delivered") == 1
        # The three reminders wait an hour in the outbox: the gauge reads them from the store.
        assert seen[("openwop_notifications_queued", ())] == 3
        labels = {name for (_, pairs) in seen for name, _ in pairs}
        assert labels <= {"kind", "reason", "channel", "outcome", "le"}, labels


async def test_a_notice_refused_by_a_cap_counts_as_refused(tmp_path: Path) -> None:
    routes = [{"match": {"workflowId": "expense"}, "notify": ["alice"]}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], with_teams=False) as host:
        host.engine.notify.set_limits(OutboxLimits(per_tenant=0))
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        await host.start_gate()
        await host.until(lambda: len(settled) == 2, "both notices settled")
        seen = await _scrape(host)
        assert _count(seen, "email", "refused") == 1 and _count(seen, "slack", "refused") == 1
        assert _count(seen, "email", "dead") == 0 and _count(seen, "slack", "dead") == 0
        assert seen[("openwop_notifications_queued", ())] == 0
