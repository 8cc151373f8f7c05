"""The inbox's Decisions view, in headless Chromium against real uvicorn: the last 30 days by approver,
with its bar chart, for a key holding ``audit:read`` only."""

from __future__ import annotations

import httpx
import pytest
from playwright.async_api import Page, Request, expect

from openwop_bridge import Engine
from openwop_bridge.core.auth import SYSTEM
from tests.browser import screenshot, start
from tests.browser.test_web_inbox import sign_in
from tests.conftest import auth
from tests.helpers import settle


async def _decide(api: httpx.AsyncClient, engine: Engine, run_id: str, who: str, action: str) -> None:
    r = await api.post(
        f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": action}}, headers=auth(who)
    )
    assert r.status_code == 200, r.text
    await settle(engine, run_id)


@pytest.mark.browser
async def test_an_auditor_sees_decisions_by_approver_and_others_do_not(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    for who, action in (("bob", "accept"), ("bob", "accept"), ("admin", "reject")):
        await _decide(api, engine, await start(api, engine, "conformance-approval"), who, action)
    theirs = await engine.create_run(SYSTEM, "conformance-approval", tenant="other")
    await settle(engine, theirs.run_id)
    await _decide(api, engine, theirs.run_id, "other", "accept")

    asked: list[str] = []

    def note(request: Request) -> None:
        if "/v1/analytics/" in request.url:
            asked.append(request.url)

    page.on("request", note)
    await sign_in(page, site, "admin")
    panel = page.locator("#decisions")
    await expect(panel).to_be_visible()
    await expect(panel.get_by_role("heading", level=2)).to_have_text("Decisions, last 30 days")
    await expect(panel.locator("#decisions-summary")).to_contain_text("3 decisions from ")
    table = panel.locator("#decisions-table")
    await expect(table.locator("tbody tr")).to_have_count(2)
    bob = table.locator('tr[data-approver="bob"]')
    alice = table.locator('tr[data-approver="alice"]')
    # Approver, decisions, approved, rejected, answered, cancelled, expired, …, undeliverable, fast share.
    cells = bob.locator("td")
    await expect(cells.nth(0)).to_have_text("2")
    await expect(cells.nth(1)).to_have_text("2")
    await expect(cells.nth(2)).to_have_text("0")
    await expect(cells.nth(9)).to_have_text("0")
    await expect(cells.nth(10)).to_have_text("100 %")
    await expect(alice.locator("td").nth(2)).to_have_text("1")
    # Decided within milliseconds of the request: both flagged.
    await expect(bob.locator(".flag")).to_have_text("possible rubber stamp")
    await expect(alice.locator(".flag")).to_be_visible()
    await expect(table).not_to_contain_text("olga")  # another tenant's decision

    chart = panel.get_by_role("img", name="Decisions by approver, fast ones apart")
    await expect(chart).to_be_visible()
    widths = {}
    for who in ("bob", "alice"):
        bar = chart.locator(f'g[data-approver="{who}"]')
        whole = float(await bar.locator("rect.bar").get_attribute("width") or "0")
        fast = float(await bar.locator("rect.bar-fast").get_attribute("width") or "0")
        assert whole > 0 and fast == whole, (who, whole, fast)
        widths[who] = whole
    assert widths["bob"] == 2 * widths["alice"]
    assert len(asked) == 1 and "groupBy=approver" in asked[0]
    await screenshot(page, "auditor")

    await page.get_by_role("button", name="Sign out").click()
    await expect(panel).to_be_hidden()
    await sign_in(page, site, "bob")
    await expect(page.locator("#inbox-title")).to_be_visible()
    await expect(panel).to_be_hidden()
    await expect(panel).to_be_empty()
    assert len(asked) == 1, "a key without audit:read never asks for the figures"
