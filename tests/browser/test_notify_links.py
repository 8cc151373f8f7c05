"""A mailed link opened in headless Chromium: the link page shows the request, answers as the person, then says so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import expect

from openwop_bridge.notify.worker import Settled
from tests.browser import browser_page, said
from tests.browser.test_web_inbox import open_request, sign_in
from tests.notify.host import gate, notify_host
from tests.notify.receivers import mail_parts

LINK = re.compile(r"(http://127\.0\.0\.1:\d+/v1/interrupts/\S+)")


@pytest.mark.browser
async def test_each_approver_answers_from_their_own_mail_in_the_browser(tmp_path: Path) -> None:
    people = {name: {"email": f"{name}@example.com"} for name in ("alice", "bob")}
    wf = gate("expense", requiredApprovals=2, approversList=["alice", "bob"])
    async with notify_host(tmp_path, routes=[], workflows=[wf], people=people, with_teams=False) as host:
        _, record = await host.start_gate()
        await host.until(lambda: len(host.smtp.mails) == 2, "two mails")
        links = {rcpts[0].split("@")[0]: LINK.findall(mail_parts(m)[0])[0] for rcpts, m in host.smtp.mails}
        async with browser_page(tmp_path / "profile", "notify-links") as page:
            for who in ("bob", "alice"):
                response = await page.goto(links[who])
                assert response is not None and response.status == 200
                main = page.locator("main")
                await expect(main.get_by_role("heading", level=1)).to_have_text("Approve expense report EXP-1042")
                await expect(main.locator("dl.meta")).to_contain_text(f"Answers as{who}")
                await main.get_by_label("Accept", exact=True).check()
                await main.get_by_role("button", name="Submit decision").click()
                await expect(said(main, "Decide")).to_contain_text("Accept")
            again = await page.goto(links["bob"])
            assert again is not None and again.status == 409
            await expect(page.locator("main h1")).to_have_text("This link was already used")
        closed = await host.engine.interrupt_record(record.interrupt_id)
        assert closed is not None and closed.status == "resolved"
        assert [v["voter"] for v in closed.state["votes"]] == ["bob", "alice"]


@pytest.mark.browser
async def test_the_inbox_detail_shows_who_was_told_and_that_nobody_could_be(tmp_path: Path) -> None:
    routes = [{"match": {"workflowId": "expense"}, "notify": ["alice"], "onUndeliverable": "wait"}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        host.smtp.rcpt_replies["alice@example.com"] = "550 5.1.1 No such user"
        host.slack.unknown_channels.add("U0ALICE")
        await host.start_gate()
        await host.until(lambda: sum(1 for s in settled if s.status == "dead") == 2, "two dead notices")
        async with browser_page(tmp_path / "profile", "notify-inbox") as page:
            await sign_in(page, host.url, "admin")
            detail = await open_request(page, "Approve expense report EXP-1042")
            facts = detail.locator("dl.meta")
            await expect(facts).to_contain_text("Undeliverable: no notice reached anyone")
            told = facts.locator("ul.notifications li")
            await expect(told).to_have_count(2)
            await expect(told.filter(has_text="alice by email: dead (1 attempt")).to_have_count(1)
            await expect(told.filter(has_text="alice by slack: dead (1 attempt")).to_have_count(1)
            await expect(facts).not_to_contain_text("@")
