"""The inbox's "While you are away": alice lets bob answer for her until tomorrow, bob sees it and answers as
her, alice ends it; all in headless Chromium against real uvicorn."""

from __future__ import annotations

from datetime import datetime, timedelta

import httpx
import pytest
from playwright.async_api import Page, expect

from openwop_bridge import Engine, Workflow
from tests.browser import start
from tests.browser.test_web_inbox import sign_in
from tests.conftest import auth


def _in_two_days() -> str:
    """A local date and time two days ahead, as a datetime-local field takes it."""
    return (datetime.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")


def _gate(engine: Engine) -> None:
    wf = Workflow("away-gate")
    wf.node("gate", type_id="core.approvalGate", config={"title": "Pay?", "approversList": ["alice"]})
    wf.register(engine)


@pytest.mark.browser
async def test_alice_delegates_bob_answers_for_her_alice_ends_it(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    _gate(engine)
    await sign_in(page, site, "admin")  # alice
    away = page.get_by_role("region", name="While you are away")
    await expect(away).to_be_visible()
    await expect(away.locator("#away-list")).to_contain_text("Nothing is delegated")
    await away.get_by_label("Who answers for you").fill("bob")
    await away.get_by_label("Until").fill(_in_two_days())
    await away.get_by_label("Reason (optional)").fill("on leave")
    await away.get_by_role("button", name="Delegate").click()
    await expect(away.get_by_role("status")).to_contain_text("bob answers for you until")
    await expect(away.locator("#away-list li")).to_contain_text(["bob answers for you until"])

    # bob sees it, and answers as alice over the API (the inbox names her as the voter through the API).
    listed = (await api.get("/v1/delegations", headers=auth("bob"))).json()["delegations"]
    assert [(d["delegator"], d["reason"]) for d in listed] == [("alice", "on leave")]
    run_id = await start(api, engine, "away-gate", who="operator")
    voted = await api.post(
        f"/v1/runs/{run_id}/interrupts/gate",
        json={"resumeValue": {"action": "accept", "voter": "alice"}},
        headers=auth("bob"),
    )
    assert voted.status_code == 200 and voted.json()["resumeValue"]["decidedBy"] == "alice", voted.text

    await away.get_by_role("button", name="End now").click()
    await expect(away.get_by_role("status")).to_have_text("bob no longer answers for you.")
    await expect(away.locator("#away-list li")).to_contain_text(["ended"])
    assert "endedAt" in (await api.get("/v1/delegations", headers=auth("bob"))).json()["delegations"][0]


@pytest.mark.browser
async def test_a_refused_delegation_says_why_and_signing_out_takes_the_section_away(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    await sign_in(page, site, "admin")
    away = page.get_by_role("region", name="While you are away")
    await away.get_by_label("Who answers for you").fill("alice")  # herself
    await away.get_by_label("Until").fill(_in_two_days())
    await away.get_by_role("button", name="Delegate").click()
    await expect(away.get_by_role("alert")).to_contain_text("someone other than the delegator")
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.locator("#away")).to_be_hidden()
    assert await page.locator("#away").inner_html() == ""
