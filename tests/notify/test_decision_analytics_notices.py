"""Decision analytics with real notices: mails delivered to and refused by a loopback SMTP server, then the
decision through the served API; the report times the decision from the delivered notice and counts the
interrupt whose notice died."""

from __future__ import annotations

from pathlib import Path

import pytest

from openwop_bridge.notify.worker import Settled
from tests.conftest import auth
from tests.notify.host import gate, notify_host

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

ROUTES = [{"match": {"workflowId": "expense"}, "notify": ["email:alice@example.com"], "onUndeliverable": "wait"}]


async def test_notice_times_and_dead_letters_come_from_the_outbox(tmp_path: Path) -> None:
    async with notify_host(tmp_path, routes=ROUTES, workflows=[gate("expense")], with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        told, _ = await host.start_gate()
        await host.until(lambda: any(s.status == "delivered" for s in settled), "the mail delivered")
        host.smtp.rcpt_replies["alice@example.com"] = "550 5.1.1 No such user"
        refused, _ = await host.start_gate()
        await host.until(lambda: any(s.status == "dead" for s in settled), "the second mail dead")
        for run_id, action in ((told, "accept"), (refused, "reject")):
            r = await host.client.post(
                f"/v1/runs/{run_id}/interrupts/review",
                json={"resumeValue": {"action": action, "voter": "alice"}},
                headers=auth("admin"),
            )
            assert r.status_code == 200, r.text

        r = await host.client.get("/v1/analytics/decisions", headers=auth("admin"))
        assert r.status_code == 200, r.text
        (alice,) = r.json()["groups"]
        assert alice["key"] == "alice" and alice["decisions"] == 2
        assert (alice["outcomes"]["approved"], alice["outcomes"]["rejected"]) == (1, 1)
        assert alice["undeliverable"] == 1, "the refused mail's interrupt"
        notice, request = alice["noticeToDecisionMs"], alice["requestToDecisionMs"]
        assert notice["count"] == 1, "only the delivered mail starts a notice time"
        assert request["count"] == 2 and notice["median"] <= request["p90"]
        assert alice["fastDecisions"] == 2 and alice["rubberStamp"] is True
        other = await host.client.get("/v1/analytics/decisions", headers=auth("other"))
        assert other.status_code == 200 and other.json()["groups"] == []
