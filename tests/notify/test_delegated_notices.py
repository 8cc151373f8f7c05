"""Notices while away: a delegator's notices go to the delegate standing in, whose copy answers in their place."""

from __future__ import annotations

import asyncio
import re
import time
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge.notify.worker import Settled
from tests.conftest import auth
from tests.helpers import envelope, events
from tests.notify.host import NotifyHost, gate, notify_host
from tests.notify.receivers import block_action, mail_parts, slack_signed

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

LINK = re.compile(r"(http://127\.0\.0\.1:\d+/v1/interrupts/\S+)")
HOUR_MS = 3_600_000
SIGNING_SECRET = "slack-signing-secret-for-tests"
EMAIL_ONLY = {
    "alice": {"email": "alice@example.com", "roles": ["finance"]},
    "bob": {"email": "bob@example.com"},
    "carol": {"email": "carol@example.com"},
}


async def _delegate(host: NotifyHost, **body: Any) -> dict[str, Any]:
    """Alice (the ``admin`` key's principal) lets bob answer in her place for an hour."""
    doc = {"delegate": "bob", "until": int(time.time() * 1000) + HOUR_MS, "reason": "on leave", **body}
    made = await host.client.post("/v1/delegations", json=doc, headers=auth("admin"))
    assert made.status_code == 201, made.text
    assert made.json()["delegator"] == "alice"
    return dict(made.json())


def _to(host: NotifyHost, address: str) -> list[EmailMessage]:
    return [m for rcpts, m in host.smtp.mails if rcpts == [address]]


def _link(message: EmailMessage) -> str:
    (link,) = LINK.findall(mail_parts(message)[0])
    return str(link)


async def _sent(host: NotifyHost, run_id: str, n: int) -> list[dict[str, Any]]:
    """The run's ``notification.sent`` payloads, once there are ``n`` (appended after each delivery)."""
    for _ in range(500):
        sent = [e["payload"] for e in await events(host.engine, run_id, "notification.sent")]
        if len(sent) >= n:
            return sent
        await asyncio.sleep(0.02)
    raise AssertionError(f"never {n} notification.sent events")


async def _seen(host: NotifyHost, link: str) -> dict[str, Any]:
    return dict((await host.client.get(link, headers={"Accept": "application/json"})).json())


async def test_a_delegates_copy_answers_in_the_delegators_place_until_the_delegation_ends(tmp_path: Path) -> None:
    wf = gate("expense", approversList=["alice", "carol"])
    async with notify_host(tmp_path, routes=[], workflows=[wf], people=EMAIL_ONLY, with_teams=False) as host:
        delegation = await _delegate(host)
        run_id, record = await host.start_gate()
        _, later = await host.start_gate()
        await host.until(lambda: len(_to(host, "bob@example.com")) == 2, "bob's two copies")
        await host.until(lambda: len(_to(host, "carol@example.com")) == 2, "carol's own notices")
        assert _to(host, "alice@example.com") == [], "each notice goes to one of them: bob stands in"
        copies = {}
        for mail in _to(host, "bob@example.com"):
            assert mail["Subject"] == "[Approval] Approve expense report EXP-1042 (on behalf of alice)"
            text, html = mail_parts(mail)
            assert text.splitlines()[0] == "On behalf of alice" and "On behalf of alice" in html
            assert "recorded in alice's place" in text
            seen = await _seen(host, _link(mail))
            assert (seen["subject"], seen["onBehalfOf"]) == ("bob", "alice")
            copies[seen["interruptId"]] = _link(mail)
        assert set(copies) == {record.interrupt_id, later.interrupt_id}
        page = await host.client.get(copies[record.interrupt_id], headers={"Accept": "text/html"})
        assert page.status_code == 200 and "On behalf of" in page.text and "alice" in page.text
        # Bob's link answers in alice's slot, through the delegation: exactly a delegated vote.
        answered = await host.client.post(copies[record.interrupt_id], json={"resumeValue": {"action": "accept"}})
        assert answered.status_code == 200 and answered.json()["status"] == "resolved", answered.text
        assert answered.json()["resumeValue"]["decidedBy"] == "alice"
        closed = await host.engine.interrupt_record(record.interrupt_id)
        assert closed is not None
        (vote,) = closed.state["votes"]
        assert (vote["voter"], vote["actingPrincipal"], vote["delegation"]) == (
            "alice",
            "bob",
            delegation["delegationId"],
        )
        audit = [a for a in await host.engine.audit(run_id) if a["action"] == "approval.vote.accept"]
        assert [(a["principal"], a["details"]["actingPrincipal"], a["details"]["delegation"]) for a in audit] == [
            ("alice", "bob", delegation["delegationId"])
        ]
        sent = await _sent(host, run_id, 2)  # bob's copy and carol's own
        mine = [p for p in sent if p.get("onBehalfOf")]
        assert [(p["recipient"], p["onBehalfOf"], p["delegationId"]) for p in mine] == [
            ("bob", "alice", delegation["delegationId"])
        ]
        # The link names its slot and no other.
        named = await host.client.post(
            copies[later.interrupt_id], json={"resumeValue": {"action": "accept", "voter": "carol"}}
        )
        envelope(named, 403, "forbidden")
        # Ended: bob's copy no longer answers, and the next notice goes to alice again.
        ended = await host.client.delete(f"/v1/delegations/{delegation['delegationId']}", headers=auth("admin"))
        assert ended.status_code == 200, ended.text
        stale = await host.client.post(copies[later.interrupt_id], json={"resumeValue": {"action": "accept"}})
        envelope(stale, 401, "delegation_expired")
        still = await host.engine.interrupt_record(later.interrupt_id)
        assert still is not None and still.open and not still.state.get("votes")
        _, third = await host.start_gate()
        await host.until(lambda: len(_to(host, "alice@example.com")) == 1, "alice's own notice")
        (own,) = _to(host, "alice@example.com")
        assert own["Subject"] == "[Approval] Approve expense report EXP-1042"
        seen = await _seen(host, _link(own))
        assert (seen["interruptId"], seen["subject"]) == (third.interrupt_id, "alice") and "onBehalfOf" not in seen
        assert len(_to(host, "bob@example.com")) == 2


async def test_a_delegation_limited_to_workflows_leaves_the_others_with_the_delegator(tmp_path: Path) -> None:
    workflows = [gate("expense", approversList=["alice"]), gate("travel", approversList=["alice"])]
    async with notify_host(tmp_path, routes=[], workflows=workflows, people=EMAIL_ONLY, with_teams=False) as host:
        await _delegate(host, workflows=["expense"])
        _, expense = await host.start_gate("expense")
        _, travel = await host.start_gate("travel")
        await host.until(lambda: len(host.smtp.mails) == 2, "two notices")
        (to_bob,) = _to(host, "bob@example.com")
        (to_alice,) = _to(host, "alice@example.com")
        assert str(to_bob["Subject"]).endswith("(on behalf of alice)")
        assert "on behalf" not in str(to_alice["Subject"])
        assert (await _seen(host, _link(to_bob)))["interruptId"] == expense.interrupt_id
        assert (await _seen(host, _link(to_alice)))["interruptId"] == travel.interrupt_id


async def test_a_reminder_goes_to_whoever_stands_in_when_it_is_due(tmp_path: Path) -> None:
    routes = [{"notify": ["alice"], "remindAfterMs": 1500}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], people=EMAIL_ONLY) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        _, record = await host.start_gate()
        await host.until(lambda: len(_to(host, "alice@example.com")) == 1, "alice's first notice")
        # Alice leaves after the request reached her: the reminder, planned then, goes to bob.
        delegation = await _delegate(host)
        await host.until(lambda: any(s.notice.payload.get("purpose") == "reminder" for s in settled), "the reminder")
        (reminder,) = _to(host, "bob@example.com")
        subject = str(reminder["Subject"]).strip()  # a long Subject is folded; unfolded it starts with a space
        assert subject == "Reminder: [Approval] Approve expense report EXP-1042 (on behalf of alice)"
        (first,) = _to(host, "alice@example.com")
        assert reminder["Message-ID"] != first["Message-ID"]
        answered = await host.client.post(_link(reminder), json={"resumeValue": {"action": "reject"}})
        assert answered.status_code == 200, answered.text
        closed = await host.engine.interrupt_record(record.interrupt_id)
        assert closed is not None and closed.state["votes"][0]["delegation"] == delegation["delegationId"]


async def test_a_digest_goes_to_the_delegate_for_the_workflows_the_delegation_covers(tmp_path: Path) -> None:
    people = {**EMAIL_ONLY, "alice": {"email": "alice@example.com", "digestEveryMs": 2000}}
    workflows = [gate("expense", approversList=["alice"]), gate("travel", approversList=["alice"])]
    async with notify_host(tmp_path, routes=[], workflows=workflows, people=people, with_teams=False) as host:
        delegation = await _delegate(host, workflows=["expense"])
        await asyncio.sleep((2000 - time.time() * 1000 % 2000 + 20) / 1000)
        run_id, expense = await host.start_gate("expense")
        _, travel = await host.start_gate("travel")
        await host.until(lambda: len(host.smtp.mails) == 2, "the digest, in two mails")
        (to_bob,) = _to(host, "bob@example.com")
        (to_alice,) = _to(host, "alice@example.com")
        assert to_bob["Subject"] == "1 request waiting (on behalf of alice)"
        assert to_alice["Subject"] == "1 request waiting for you"
        seen = await _seen(host, _link(to_bob))
        assert (seen["interruptId"], seen["subject"], seen["onBehalfOf"]) == (expense.interrupt_id, "bob", "alice")
        assert (await _seen(host, _link(to_alice)))["interruptId"] == travel.interrupt_id
        answered = await host.client.post(_link(to_bob), json={"resumeValue": {"action": "accept"}})
        assert answered.status_code == 200, answered.text
        closed = await host.engine.interrupt_record(expense.interrupt_id)
        assert closed is not None
        (vote,) = closed.state["votes"]
        assert (vote["voter"], vote["actingPrincipal"], vote["delegation"]) == (
            "alice",
            "bob",
            delegation["delegationId"],
        )
        assert run_id


async def test_slack_buttons_of_a_delegates_copy_vote_in_the_delegators_slot(tmp_path: Path) -> None:
    # Alice on Slack and e-mail, bob on Slack only: her Slack notice goes to bob, her e-mail stays hers (bob has
    # no address there). Bob is an approver himself: his own DM and alice's, one per slot.
    people = {
        "alice": {"email": "alice@example.com", "slack": "U0ALICE"},
        "bob": {"slack": "U0BOB"},
    }
    wf = gate("expense", requiredApprovals=2, approversList=["alice", "bob"])
    async with notify_host(tmp_path, routes=[], workflows=[wf], people=people, with_teams=False) as host:
        delegation = await _delegate(host)
        run_id, record = await host.start_gate()
        await host.until(lambda: len(host.slack.of("chat.postMessage")) == 2, "two Slack posts")
        await host.until(lambda: len(host.smtp.mails) == 1, "alice's e-mail")
        posts = host.slack.of("chat.postMessage")
        assert sorted(p["channel"] for p in posts) == ["U0BOB", "U0BOB"], "nobody DMs alice"
        assert _to(host, "alice@example.com"), "her e-mail stays hers: bob has no address there"
        copy = next(p for p in posts if "on behalf of alice" in p["text"])
        own = next(p for p in posts if p is not copy)
        assert "On behalf of alice" in copy["blocks"][1]["elements"][0]["text"]
        buttons = next(b for b in copy["blocks"] if b["type"] == "actions")["elements"]
        assert buttons[0]["value"] == f"{record.interrupt_id} alice"
        assert next(b for b in own["blocks"] if b["type"] == "actions")["elements"][0]["value"] == record.interrupt_id
        body, headers = slack_signed(SIGNING_SECRET, block_action("U0BOB", "accept", buttons[0]["value"]))
        clicked = await host.client.post("/notify/slack/interactions", content=body, headers=headers)
        assert clicked.status_code == 200, clicked.text
        pending = await host.engine.interrupt_record(record.interrupt_id)
        assert pending is not None and pending.open
        (vote,) = pending.state["votes"]
        assert (vote["voter"], vote["actingPrincipal"], vote["delegation"]) == (
            "alice",
            "bob",
            delegation["delegationId"],
        )
        # One human, one vote: bob's own button casts no second one (a repeated vote changes nothing).
        body, headers = slack_signed(SIGNING_SECRET, block_action("U0BOB", "accept", record.interrupt_id))
        again = await host.client.post("/notify/slack/interactions", content=body, headers=headers)
        assert again.status_code == 200, again.text
        after = await host.engine.interrupt_record(record.interrupt_id)
        assert after is not None and len(after.state["votes"]) == 1
        sent = await _sent(host, run_id, 3)
        assert sorted((p["channel"], p["recipient"], p.get("onBehalfOf", "")) for p in sent) == [
            ("email", "alice", ""),
            ("slack", "bob", ""),
            ("slack", "bob", "alice"),
        ]


async def test_a_delegates_link_answers_a_gate_that_needs_a_role_only_with_the_delegates_key(tmp_path: Path) -> None:
    wf = gate("expense", approversList=["alice"], requiredRole="finance")
    async with notify_host(tmp_path, routes=[], workflows=[wf], people=EMAIL_ONLY, with_teams=False) as host:
        delegation = await _delegate(host)  # made by alice's key, an admin's
        _, record = await host.start_gate()
        await host.until(lambda: len(_to(host, "bob@example.com")) == 1, "bob's copy")
        link = _link(_to(host, "bob@example.com")[0])
        envelope(await host.client.post(link, json={"resumeValue": {"action": "accept"}}), 401, "unauthenticated")
        still = await host.engine.interrupt_record(record.interrupt_id)
        assert still is not None and still.open and not still.state.get("votes")
        # Another's key does not answer bob's copy.
        other = await host.client.post(link, json={"resumeValue": {"action": "accept"}}, headers=auth("admin"))
        envelope(other, 403, "forbidden")
        # With bob's own key, the delegation's rights count (alice's when she made it).
        keyed = await host.client.post(link, json={"resumeValue": {"action": "accept"}}, headers=auth("bob"))
        assert keyed.status_code == 200 and keyed.json()["status"] == "resolved", keyed.text
        closed = await host.engine.interrupt_record(record.interrupt_id)
        assert closed is not None
        (vote,) = closed.state["votes"]
        assert (vote["voter"], vote["actingPrincipal"], vote["delegation"]) == (
            "alice",
            "bob",
            delegation["delegationId"],
        )
