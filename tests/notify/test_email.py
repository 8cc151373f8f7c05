"""The e-mail channel against a real SMTP server (aiosmtpd on 127.0.0.1), and the links the mails carry."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from openwop_bridge.notify.email import EmailChannelSender
from openwop_bridge.notify.notice import Notice
from tests.notify.host import NotifyHost, gate, notify_host
from tests.notify.receivers import mail_parts

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

HOUR = 3_600_000
LINK = re.compile(r"(http://127\.0\.0\.1:\d+/v1/interrupts/[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+)")


def _notice(record_id: str, run_id: str, person: str | None, address: str, attempt: int = 1) -> Notice:
    return Notice(
        notice_id="ntc_test",
        channel="email",
        tenant="default",
        run_id=run_id,
        interrupt_id=record_id,
        recipient=person or f"email:{address}",
        payload={"address": address, "person": person, "purpose": "notice"},
        attempt=attempt,
        not_before_ms=0,
    )


def _sender(host: NotifyHost) -> EmailChannelSender:
    sender = host.setup.channels.get("email")
    assert isinstance(sender, EmailChannelSender)
    return sender


async def test_each_person_gets_one_mail_naming_the_request_with_a_link_of_their_own(tmp_path: Path) -> None:
    routes = [{"match": {"workflowId": "expense"}, "notify": ["alice", "role:finance", "email:team@example.com"]}]
    wf = gate("expense", timeoutMs=2 * HOUR)
    async with notify_host(tmp_path, routes=routes, workflows=[wf], with_teams=False) as host:
        _, record = await host.start_gate()
        await host.until(lambda: len(host.smtp.mails) == 3, "three mails")
        by_rcpt = {rcpts[0]: message for rcpts, message in host.smtp.mails}
        assert set(by_rcpt) == {"alice@example.com", "bob@example.com", "team@example.com"}, (
            "mallory is of another tenant"
        )
        links = {}
        for address, message in by_rcpt.items():
            assert message["Subject"] == "[Approval] Approve expense report EXP-1042"
            assert message["To"] == address
            text, html = mail_parts(message)
            for part in (text, html):
                assert "Approve expense report EXP-1042" in part
                assert "Team offsite, 3 nights, 4 people." in part
                assert "expense" in part
            assert record.deadline_ms is not None
            from openwop_bridge.notify.content import human_deadline

            assert human_deadline(record.deadline_ms) in text
            (link,) = set(LINK.findall(text))
            assert link in html
            links[address] = link
        assert len(set(links.values())) == 3, "every recipient has a link of their own"
        # A person's link answers as them; a shared mailbox's link only shows the request.
        for address, intent, subject in (
            ("alice@example.com", "resolve", "alice"),
            ("bob@example.com", "resolve", "bob"),
            ("team@example.com", "inspect", None),
        ):
            seen = (await host.client.get(links[address], headers={"Accept": "application/json"})).json()
            assert seen["intent"] == intent and seen.get("subject") == subject
            # The link lives as long as the interrupt may wait, not the 30 minutes of an API-minted link.
            assert seen["tokenExpiresAt"] == seen["expiresAt"]


async def test_the_link_page_shows_on_get_and_never_answers_then_answers_on_post(tmp_path: Path) -> None:
    routes = [{"notify": ["alice", "bob"]}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], with_teams=False) as host:
        _, record = await host.start_gate()
        await host.until(lambda: len(host.smtp.mails) == 2, "two mails")
        links = {rcpts[0]: LINK.findall(mail_parts(m)[0])[0] for rcpts, m in host.smtp.mails}
        alice = links["alice@example.com"]
        for _ in range(3):  # a mail scanner prefetching the link
            page = await host.client.get(alice, headers={"Accept": "text/html"})
            assert page.status_code == 200 and "Approve expense report EXP-1042" in page.text
            assert "Answers as" in page.text and "alice" in page.text
        current = await host.engine.interrupt_record(record.interrupt_id)
        assert current is not None and current.open, "a GET never answers"
        r = await host.client.post(alice, json={"resumeValue": {"action": "accept"}})
        assert r.status_code == 200, r.text
        closed = await host.engine.interrupt_record(record.interrupt_id)
        assert closed is not None and closed.status == "resolved"
        assert closed.resolution is not None and closed.resolution["resolvedBy"] == "alice"
        # A decided interrupt withdraws every link it handed out: alice's, used, and bob's, never used.
        for link in (alice, links["bob@example.com"]):
            page = await host.client.get(link, headers={"Accept": "text/html"})
            assert page.status_code == 409 and "This link was already used" in page.text
            again = await host.client.post(link, json={"resumeValue": {"action": "reject"}})
            assert again.status_code == 409 and again.json()["error"] == "interrupt_already_resolved"


async def test_message_id_is_stable_per_interrupt_and_person_across_retries(tmp_path: Path) -> None:
    async with notify_host(tmp_path, routes=[], workflows=[gate("expense")], with_teams=False) as host:
        run_id, record = await host.start_gate()
        sender = _sender(host)
        for attempt in (1, 2):
            outcome = await sender.deliver(_notice(record.interrupt_id, run_id, "alice", "alice@example.com", attempt))
            assert outcome.kind == "delivered"
        await sender.deliver(_notice(record.interrupt_id, run_id, "bob", "bob@example.com"))
        ids = [str(m["Message-ID"]).strip() for _, m in host.smtp.mails]
        assert ids[0] == ids[1] != ids[2]
        assert ids[0].startswith(f"<{record.interrupt_id}.") and ids[0].endswith("@example.com>")


async def test_a_4xx_reply_is_retried_and_a_5xx_for_the_recipient_is_dead_at_once(tmp_path: Path) -> None:
    async with notify_host(tmp_path, routes=[], workflows=[gate("expense")], with_teams=False) as host:
        run_id, record = await host.start_gate()
        host.smtp.rcpt_replies["alice@example.com"] = "450 4.2.1 Mailbox busy, try later"
        host.smtp.rcpt_replies["bob@example.com"] = "550 5.1.1 No such user"
        sender = _sender(host)
        busy = await sender.deliver(_notice(record.interrupt_id, run_id, "alice", "alice@example.com"))
        assert (busy.kind, busy.reason) == ("retry", "smtp_450_recipient")
        gone = await sender.deliver(_notice(record.interrupt_id, run_id, "bob", "bob@example.com"))
        assert (gone.kind, gone.reason) == ("dead", "smtp_550_recipient")
        assert host.smtp.refused == ["alice@example.com", "bob@example.com"] and host.smtp.mails == []
        assert "example.com" not in busy.reason + gone.reason, "reasons never carry an address"


async def test_an_unreachable_server_is_retried(tmp_path: Path) -> None:
    from tests.server import free_port

    closed = {"email": {"smtp": f"smtp://127.0.0.1:{free_port()}", "from": "a@example.com", "timeoutMs": 2000}}
    async with notify_host(tmp_path, routes=[], workflows=[gate("expense")], channels=closed, with_teams=False) as host:
        run_id, record = await host.start_gate()
        outcome = await _sender(host).deliver(_notice(record.interrupt_id, run_id, "alice", "alice@example.com"))
        assert outcome.kind == "retry" and outcome.reason.startswith("smtp_")


async def test_no_mail_once_the_interrupt_has_closed(tmp_path: Path) -> None:
    async with notify_host(tmp_path, routes=[], workflows=[gate("expense")], with_teams=False) as host:
        run_id, record = await host.start_gate()
        from tests.conftest import KEYS

        admin = next(iter(KEYS.values())).principal
        await host.engine.resolve(admin, {"action": "accept"}, interrupt_id=record.interrupt_id)
        outcome = await _sender(host).deliver(_notice(record.interrupt_id, run_id, "alice", "alice@example.com"))
        assert (outcome.kind, outcome.reason) == ("delivered", "interrupt_closed")
        assert host.smtp.mails == []


async def test_link_ttl_shortens_the_link_and_an_expired_link_page_says_so(tmp_path: Path) -> None:
    wf = gate("expense", timeoutMs=HOUR)
    async with notify_host(tmp_path, routes=[], workflows=[wf], email_options={"linkTtlMs": 1}) as host:
        run_id, record = await host.start_gate()
        assert (await _sender(host).deliver(_notice(record.interrupt_id, run_id, "alice", "a@example.com"))).kind == (
            "delivered"
        )
        ((_, message),) = host.smtp.mails
        (link,) = set(LINK.findall(mail_parts(message)[0]))
        await asyncio.sleep(0.01)  # past the link's one millisecond
        page = await host.client.get(link, headers={"Accept": "text/html"})
        assert page.status_code == 410 and "This link has expired" in page.text
        current = await host.engine.interrupt_record(record.interrupt_id)
        assert current is not None and current.open


async def test_a_title_with_line_breaks_cannot_inject_headers(tmp_path: Path) -> None:
    wf = gate("expense", title="Pay\r\nBcc: mallory@example.com\nnow")
    async with notify_host(tmp_path, routes=[{"notify": ["alice"]}], workflows=[wf], with_teams=False) as host:
        await host.start_gate()
        await host.until(lambda: len(host.smtp.mails) == 1, "alice's mail")
        ((rcpts, message),) = host.smtp.mails
        assert rcpts == ["alice@example.com"] and message["Bcc"] is None
        assert message["Subject"] == "[Approval] Pay Bcc: mallory@example.com now"


#: About 1,200 characters of one paragraph, and 440 Japanese characters (1,320 bytes in UTF-8).
LONG_ASCII = " ".join(f"item{n:03d} costs {n * 7} EUR," for n in range(80))[:1200]
LONG_JAPANESE = "経費精算の承認をお願いします。" * 29 + "以上です。"


@pytest.mark.parametrize("description", [LONG_ASCII, LONG_JAPANESE[:440]], ids=["ascii", "japanese"])
async def test_a_description_of_one_long_paragraph_is_delivered_whole(tmp_path: Path, description: str) -> None:
    from openwop_bridge.notify.content import what_is_asked

    assert len(description.encode()) > 998 and "\n" not in description
    wf = gate("expense", description=description)
    routes = [{"notify": ["alice"], "onUndeliverable": "fail"}]
    async with notify_host(tmp_path, routes=routes, workflows=[wf], with_teams=False) as host:
        _, record = await host.start_gate()
        # The real SMTP server refuses a line over 998 bytes ("500 Line too long"): the mail must still arrive.
        await host.until(lambda: len(host.smtp.mails) == 1, "alice's mail")
        (raw,) = host.smtp.raw
        longest = max(len(line) for line in raw.split(b"\r\n"))
        assert longest <= 998, f"a line of {longest} bytes"
        ((_, message),) = host.smtp.mails
        text, html = mail_parts(message)
        asked = what_is_asked({"description": description})
        assert asked in text, "the text part decodes back to the words, unbroken"
        import html as html_module

        assert html_module.escape(asked) in html
        current = await host.engine.interrupt_record(record.interrupt_id)
        assert current is not None and current.open, "the gate still waits for its answer"
