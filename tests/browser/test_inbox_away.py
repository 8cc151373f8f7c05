"""The inbox's "While you are away": alice lets bob answer for her until tomorrow, bob sees it and answers as
her, alice ends it; bob's inbox marks what he may answer "for alice", answers it in her place, and keeps to one
vote where he is an approver himself; all in headless Chromium against real uvicorn."""

from __future__ import annotations

from datetime import datetime, timedelta

import httpx
import pytest
from playwright.async_api import Page, expect

from openwop_bridge import Engine, Workflow
from tests.browser import said, screenshot, start
from tests.browser.test_web_inbox import open_request, rows, sign_in
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


async def _delegate_to_bob(api: httpx.AsyncClient) -> str:
    """alice lets bob answer for her for a day; the delegation's id."""
    until = int((datetime.now() + timedelta(days=1)).timestamp() * 1000)
    made = await api.post("/v1/delegations", json={"delegate": "bob", "until": until}, headers=auth("admin"))
    assert made.status_code == 201, made.text
    return str(made.json()["delegationId"])


def _approval(engine: Engine, workflow_id: str, title: str, **config: object) -> None:
    wf = Workflow(workflow_id)
    wf.node("gate", type_id="core.approvalGate", config={"title": title, "actions": ["accept", "reject"], **config})
    wf.register(engine)


@pytest.mark.browser
async def test_bob_answers_alices_approval_for_her_in_the_inbox(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    _approval(engine, "hers", "Pay the printer?", approversList=["alice"])
    _approval(engine, "his", "Order paper?", approversList=["bob"])
    hers = await start(api, engine, "hers", who="operator")
    await start(api, engine, "his", who="operator")
    delegation = await _delegate_to_bob(api)

    await sign_in(page, site, "bob")
    row = rows(page).filter(has_text="Pay the printer?")
    await expect(row.locator(".for-whom")).to_have_text("for alice")
    await expect(rows(page).filter(has_text="Order paper?").locator(".for-whom")).to_have_count(0)

    detail = await open_request(page, "Pay the printer?")
    whose = detail.get_by_role("group", name="Whose vote is this")
    await expect(whose.get_by_label("For alice")).to_be_checked()  # the only place bob may answer this in
    await expect(whose).to_contain_text("You answer this for alice, in their place.")
    await screenshot(page, "for-alice")
    await detail.get_by_label("Accept", exact=True).check()
    await detail.get_by_role("button", name="Submit decision").click()
    await expect(said(detail, "Decide")).to_have_text("Decision recorded for alice: Accept.")
    await expect(row).to_have_count(0)  # answered: gone from the list

    # The same decision the API makes when bob names alice as the voter.
    record = await engine.store.interrupt_at(hers, "gate")
    assert record is not None and record.status == "resolved"
    (vote,) = record.state["votes"]
    assert (vote["voter"], vote["actingPrincipal"], vote["delegation"]) == ("alice", "bob", delegation)
    assert record.resolution is not None and record.resolution["resumeValue"]["decidedBy"] == "alice"


@pytest.mark.browser
async def test_an_approver_who_also_stands_in_chooses_the_slot_and_votes_once(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    _approval(engine, "both", "Hire a temp?", approversList=["alice", "bob", "carol"], requiredApprovals=2)
    run_id = await start(api, engine, "both", who="operator")
    delegation = await _delegate_to_bob(api)

    await sign_in(page, site, "bob")
    await expect(rows(page).filter(has_text="Hire a temp?").locator(".for-whom")).to_have_text("for alice")
    detail = await open_request(page, "Hire a temp?")
    whose = detail.get_by_role("group", name="Whose vote is this")
    await expect(whose.get_by_label("Your own vote (bob)")).not_to_be_checked()
    await expect(whose.get_by_label("For alice")).not_to_be_checked()
    await expect(whose).to_contain_text("one person, one vote")
    await detail.get_by_label("Accept", exact=True).check()
    await detail.get_by_role("button", name="Submit decision").click()
    await expect(said(detail, "Decide", "alert")).to_have_text("Choose whose vote this is first.")

    await whose.get_by_label("For alice").check()
    await detail.get_by_role("button", name="Submit decision").click()
    await expect(said(detail, "Decide")).to_contain_text("Your vote for alice is recorded.")
    await expect(detail.locator(".vote-list")).to_contain_text("alice: accept (answered by bob)")

    # A second vote, now in bob's own slot: the host does not count it, and the inbox says why.
    await whose.get_by_label("Your own vote (bob)").check()
    await detail.get_by_role("button", name="Submit decision").click()
    await expect(said(detail, "Decide", "alert")).to_have_text(
        "Not counted: you have already voted on this request for alice (accept). "
        "One person, one vote: your first vote stands."
    )
    await expect(detail.locator(".vote-list li")).to_have_text(["alice: accept (answered by bob)"])
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None and record.open
    assert [(v["voter"], v.get("actingPrincipal"), v.get("delegation")) for v in record.state["votes"]] == [
        ("alice", "bob", delegation)
    ]
    duplicate = [a for a in await engine.audit(run_id) if a["action"] == "approval.duplicate-vote"]
    assert [(a["principal"], a["details"]["actingPrincipal"]) for a in duplicate] == [("bob", "bob")]
