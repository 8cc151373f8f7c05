"""Reminders, escalations and staggered channels: durable notices due later, sent only while still owed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from openwop_bridge.notify.worker import Settled
from tests.notify.host import NotifyHost, gate, notify_host
from tests.notify.receivers import mail_parts

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

LINK = re.compile(r"(http://127\.0\.0\.1:\d+/v1/interrupts/\S+)")


def _mails(host: NotifyHost, subject_prefix: str) -> dict[str, str]:
    out = {}
    for rcpts, message in host.smtp.mails:
        if str(message["Subject"]).startswith(subject_prefix):
            out[rcpts[0].split("@")[0]] = LINK.findall(mail_parts(message)[0])[0]
    return out


async def test_one_reminder_with_a_fresh_link_to_whoever_has_not_voted_and_an_escalation(tmp_path: Path) -> None:
    people = {
        "alice": {"email": "alice@example.com", "roles": ["finance"]},
        "bob": {"email": "bob@example.com", "roles": ["finance"]},
        "carol": {"email": "carol@example.com", "roles": ["director"]},
    }
    wf = gate("expense", requiredApprovals=2, approversList=["alice", "bob"])
    routes = [
        {"notify": ["role:finance"], "remindAfterMs": 1500, "escalateAfterMs": 1500, "escalateTo": ["role:director"]}
    ]
    async with notify_host(tmp_path, routes=routes, workflows=[wf], people=people, with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        await host.start_gate()
        await host.until(lambda: len(host.smtp.mails) == 2, "the first two mails")
        first = _mails(host, "[Approval]")
        r = await host.client.post(first["alice"], json={"resumeValue": {"action": "accept"}})
        assert r.status_code == 200 and r.json()["status"] == "pending"
        delayed = {"reminder", "escalation"}
        await host.until(
            lambda: sum(1 for s in settled if s.notice.payload.get("purpose") in delayed) == 3, "the delayed notices"
        )
        reminders = _mails(host, "Reminder: [Approval]")
        assert list(reminders) == ["bob"], "alice voted: no reminder for her"
        assert reminders["bob"] != first["bob"], "a reminder carries a fresh link"
        escalated = _mails(host, "Escalated: [Approval]")
        assert list(escalated) == ["carol"]
        for link, subject in ((first["bob"], "bob"), (reminders["bob"], "bob"), (escalated["carol"], "carol")):
            seen = (await host.client.get(link, headers={"Accept": "application/json"})).json()
            assert (seen["status"], seen["subject"]) == ("pending", subject), "earlier links keep working"
        reminder_mail = next(m for r, m in host.smtp.mails if str(m["Subject"]).startswith("Reminder"))
        first_mail = next(m for r, m in host.smtp.mails if r == ["bob@example.com"])
        assert str(reminder_mail["In-Reply-To"]).strip() == str(first_mail["Message-ID"]).strip()


async def test_delayed_notices_are_not_sent_once_the_interrupt_closed(tmp_path: Path) -> None:
    routes = [{"notify": ["alice"], "remindAfterMs": 1000, "escalateAfterMs": 1000, "escalateTo": ["carol"]}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        await host.start_gate()
        await host.until(lambda: len(host.smtp.mails) == 1, "alice's mail")
        link = _mails(host, "[Approval]")["alice"]
        assert (await host.client.post(link, json={"resumeValue": {"action": "reject"}})).status_code == 200
        await host.until(
            lambda: len([s for s in settled if s.notice.payload.get("purpose") in {"reminder", "escalation"}]) == 3,
            "the reminders (Slack and e-mail) and the escalation fall due",
        )
        delayed = [s for s in settled if s.notice.payload.get("purpose") in {"reminder", "escalation"}]
        assert {(s.status, s.reason) for s in delayed} == {("delivered", "interrupt_closed")}
        assert len(host.smtp.mails) == 1 and len(host.slack.of("chat.postMessage")) == 1


async def test_fallback_tells_the_next_channel_only_while_the_interrupt_is_open(tmp_path: Path) -> None:
    routes = [{"notify": ["alice", "bob"], "fallbackAfterMs": 1000}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        await host.start_gate()
        await host.until(lambda: len(settled) == 4, "every notice settled")
        # Slack first for both; e-mail a second later, still open then: both mailed.
        assert sorted(p["channel"] for p in host.slack.of("chat.postMessage")) == ["U0ALICE", "U0BOB"]
        assert sorted(r[0] for r, _ in host.smtp.mails) == ["alice@example.com", "bob@example.com"]
        order = [(s.notice.channel, s.notice.recipient) for s in settled]
        assert order.index(("slack", "alice")) < order.index(("email", "alice"))
