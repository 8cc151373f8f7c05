"""The operator inbox at /ui/, driven in headless Chromium against real uvicorn.

A person signs in with a key, watches the list change as runs pause and
resume, filters and pages, and answers every kind of interrupt from the forms
the page builds out of the interrupt itself, with the keyboard where it matters.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Locator, Page, expect

from openwop_bridge import Engine, NodeContext, Workflow, custom
from openwop_bridge.host.web import link, pages
from openwop_bridge.host.web.feed import inbox_changes
from tests.browser import (
    assert_keyboard_basics,
    assert_unknown_key_refused,
    node_outputs,
    said,
    screenshot,
    start,
    tab_to,
)
from tests.conftest import KEYS, TOKENS, auth
from tests.helpers import ADMIN, events, settle
from tests.server import ServerProcess


async def sign_in(page: Page, site: str, who: str = "bob") -> None:
    await page.goto(f"{site}/ui/")
    await page.get_by_label("API key").fill(TOKENS[who])
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#whoami")).to_contain_text("Signed in as")


def rows(page: Page) -> Locator:
    """The list's rows; their first cell is the batch selection, the request's title the second."""
    return page.locator("#inbox-rows tr[data-interrupt-id]")


async def open_request(page: Page, title: str) -> Locator:
    """Open a row by its title; returns the detail pane once its form is there."""
    await page.locator("#inbox-rows").get_by_role("button", name=title, exact=True).first.click()
    detail = page.locator("#detail")
    await expect(detail.get_by_role("heading", level=2)).to_have_text(title)
    await expect(detail.locator(".panel")).to_be_visible()
    return detail


async def open_started(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine, workflow: str, title: str
) -> tuple[str, Locator]:
    """Start a run of ``workflow``, sign in and open its request titled ``title``: the run id and the detail pane."""
    run_id = await start(api, engine, workflow)
    await sign_in(page, site)
    return run_id, await open_request(page, title)


# --- signing in, the live list, filters, pages --------------------------------------------


@pytest.mark.browser
async def test_sign_in_then_the_list_follows_the_server_live(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    await page.goto(f"{site}/ui/")
    sign_in_form = page.locator("#sign-in")
    await expect(sign_in_form).to_be_visible()
    await assert_keyboard_basics(page, sign_in_form)

    key = await assert_unknown_key_refused(page)

    await key.fill(TOKENS["reader"])
    await key.press("Enter")
    await expect(page.locator("#sign-in-error")).to_contain_text("needs the interrupts:read scope")

    await key.fill(TOKENS["bob"])
    await key.press("Enter")
    await expect(page.locator("#whoami")).to_have_text("Signed in as bob (tenant default)")
    await expect(page.locator("#live-status")).to_have_text("Live updates on")
    await expect(page.locator("#inbox-rows")).to_contain_text("No pending requests.")
    assert await page.evaluate("sessionStorage.getItem('openwop.inbox.apiKey')") == TOKENS["bob"]
    assert TOKENS["bob"] not in page.url
    assert await key.input_value() == ""
    await assert_keyboard_basics(page, page.locator("#app"))

    # Runs pause: their rows appear without a reload.
    run_id = await start(api, engine, "demo-expense-approval")
    row = rows(page).filter(has_text="Approve expense report EXP-1042")
    await expect(row).to_have_count(1)
    await expect(row.locator("td").nth(2)).to_have_text("Approval")
    await expect(row.locator("td").nth(3)).to_have_text("demo-expense-approval")
    await expect(row.locator("td").nth(4)).to_have_text(re.compile(r"^\d+ s$"))

    # Titles come from workflows: shown as text, never run as markup.
    hostile = "<img src=x onerror=\"document.title='pwned'\">"
    wf = Workflow("hostile-title")
    wf.node("gate", type_id="core.approvalGate", config={"title": hostile, "actions": ["accept", "reject"]})
    wf.register(engine)
    # Another tenant's run first: when our later one shows up, theirs must not be there.
    await start(api, engine, "demo-clarification", who="other")
    await start(api, engine, "hostile-title")
    await expect(rows(page).get_by_role("button", name=hostile)).to_have_count(1)
    await expect(rows(page)).to_have_count(2)
    assert await page.locator("#inbox-rows img").count() == 0
    assert await page.title() == "Inbox · OpenWOP"
    await screenshot(page, "live-list")

    # Answered elsewhere: the row goes away by itself.
    r = await api.post(
        f"/v1/runs/{run_id}/interrupts/review", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
    )
    assert r.status_code == 200, r.text
    await expect(row).to_have_count(0)
    await expect(rows(page)).to_have_count(1)

    # The key survives a reload of the tab, and signing out forgets it.
    await page.reload()
    await expect(page.locator("#whoami")).to_have_text("Signed in as bob (tenant default)")
    await expect(rows(page)).to_have_count(1)
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.locator("#sign-in")).to_be_visible()
    assert await page.evaluate("sessionStorage.getItem('openwop.inbox.apiKey')") is None


@pytest.mark.browser
async def test_the_list_stays_live_across_reconnections(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pages, "LIFETIME_S", 1.5)
    streams: list[str] = []
    page.on("request", lambda request: streams.append(request.url) if "/ui/api/inbox/events" in request.url else None)
    await sign_in(page, site)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 15
    while len(streams) < 3:
        assert loop.time() < deadline, f"the page opened {len(streams)} event streams"
        await asyncio.sleep(0.05)
    await expect(page.locator("#live-status")).to_have_text("Live updates on")
    await start(api, engine, "conformance-approval")
    await expect(rows(page)).to_have_count(1)


@pytest.mark.browser
async def test_filter_by_kind_and_page_through(page: Page, site: str, api: httpx.AsyncClient, engine: Engine) -> None:
    governed = await start(api, engine, "demo-governed-release")
    r = await api.post(
        f"/v1/runs/{governed}/interrupts/release-gate",
        json={"resumeValue": {"action": "accept", "voter": "alice"}},
        headers=auth("admin"),
    )
    assert r.json()["status"] == "pending", r.text
    for _ in range(8):
        await start(api, engine, "conformance-approval")
    for _ in range(2):
        await start(api, engine, "demo-clarification")

    await sign_in(page, site)
    await expect(rows(page)).to_have_count(11)
    release = rows(page).filter(has_text="Promote build 2026.11.21-3 to production")
    await expect(release.locator("td").nth(6)).to_have_text("1/3 accepted")
    await expect(release.locator("td").nth(5)).to_have_text(re.compile(r"^in 23 h 59 min$|^in 24 h$"))

    # Open, the request shows who voted, and follows new votes live.
    detail = await open_request(page, "Promote build 2026.11.21-3 to production")
    votes = detail.locator(".votes")
    await expect(votes).to_contain_text("Accepted 1 of 3 needed, 0 rejected (majority)")
    await expect(votes.locator("li")).to_have_text(["alice: accept"])
    await expect(detail.locator(".summary .facts")).to_contain_text("alice, bob, carol, dave")
    r = await api.post(
        f"/v1/runs/{governed}/interrupts/release-gate",
        json={"resumeValue": {"action": "reject", "voter": "carol", "feedback": "Not on a Friday."}},
        headers=auth("admin"),
    )
    assert r.json()["status"] == "pending", r.text
    await expect(votes).to_contain_text("Accepted 1 of 3 needed, 1 rejected (majority)")
    await expect(votes.locator("li")).to_have_text(["alice: accept", "carol: reject — Not on a Friday."])
    await expect(release.locator("td").nth(6)).to_have_text("1/3 accepted, 1 rejected")

    await page.get_by_label("Per page").select_option("5")
    seen: list[str] = []
    for number, count in ((1, 5), (2, 5), (3, 1)):
        await expect(page.locator("#page-label")).to_have_text(f"Page {number}")
        await expect(rows(page)).to_have_count(count)
        seen += await rows(page).locator("button").all_inner_texts()
        if number < 3:
            await page.get_by_role("button", name="Next page").click()
    assert len(seen) == 11 and seen[0] == "Promote build 2026.11.21-3 to production"
    await expect(page.get_by_role("button", name="Next page")).to_be_disabled()
    await page.get_by_role("button", name="Previous page").click()
    await expect(page.locator("#page-label")).to_have_text("Page 2")
    await expect(rows(page).locator("button")).to_have_text(seen[5:10])

    await page.get_by_label("Kind").select_option(label="Clarification")
    await expect(page.locator("#page-label")).to_have_text("Page 1")
    await expect(rows(page)).to_have_count(2)
    await expect(rows(page).locator("td:nth-child(3)")).to_have_text(["Clarification", "Clarification"])
    await screenshot(page, "filtered")

    # A new clarification shows up under the filter; a new approval does not.
    await start(api, engine, "conformance-approval")
    await start(api, engine, "demo-clarification")
    await expect(rows(page)).to_have_count(3)
    await page.get_by_label("Kind").select_option(label="Approval")
    await expect(rows(page)).to_have_count(5)
    await expect(page.get_by_role("button", name="Next page")).to_be_enabled()


@pytest.mark.browser
async def test_the_summary_counts_every_pending_request_and_times_are_utc_as_on_the_link_page(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    for _ in range(7):
        await start(api, engine, "conformance-approval")
    await start(api, engine, "demo-clarification")
    await sign_in(page, site)
    summary = page.locator("#inbox-summary")
    await expect(rows(page)).to_have_count(8)
    await expect(summary).to_have_text("8 pending, page 1 of 1")
    await page.get_by_label("Per page").select_option("5")
    await expect(summary).to_have_text("8 pending, page 1 of 2")
    await page.get_by_role("button", name="Next page").click()
    await expect(summary).to_have_text("8 pending, page 2 of 2")
    await start(api, engine, "conformance-approval")
    await expect(summary).to_have_text("9 pending, page 2 of 2")
    await page.get_by_label("Kind").select_option(label="Clarification")
    await expect(summary).to_have_text("1 pending (Clarification), page 1 of 1")

    [item] = (await api.get("/v1/interrupts?kind=clarification", headers=auth("bob"))).json()["items"]
    detail = await open_request(page, item["title"])
    requested = detail.locator(".facts div").filter(has=page.locator("dt", has_text="Requested")).locator("dd")
    await expect(requested).to_have_text(link.human_time(item["requestedAt"]))
    assert (await requested.inner_text()).endswith(" UTC")
    # A moment given in another zone is written in UTC, whatever the browser's own zone.
    written = await page.evaluate(
        "import('./static/dom.js').then((dom) => dom.utcTime('2026-11-22T08:30:00.000+09:00'))"
    )
    assert written == link.human_time("2026-11-21T23:30:00.000Z") == "21 Nov 2026, 23:30 UTC"


# --- answering each kind -----------------------------------------------------------------


@pytest.mark.browser
async def test_approve_from_the_inbox_with_the_keyboard(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    run_id = await start(api, engine, "conformance-approval")
    await sign_in(page, site)
    opener = page.locator("#inbox-rows").get_by_role("button", name="Conformance approval")
    await expect(opener).to_be_visible()
    await tab_to(page, opener)
    await page.keyboard.press("Enter")
    detail = page.locator("#detail")
    await expect(detail.get_by_role("heading", level=2)).to_be_focused()
    await expect(detail.get_by_role("heading", level=2)).to_have_text("Conformance approval")
    await expect(detail).to_contain_text("Conformance suite — please accept to complete the run.")
    await assert_keyboard_basics(page, detail)
    assert await detail.get_by_role("radio").count() == 2  # exactly the allowed actions

    accept = detail.get_by_label("Accept", exact=True)
    await tab_to(page, accept)
    await page.keyboard.press("Space")
    await expect(accept).to_be_checked()
    submit = detail.get_by_role("button", name="Submit decision")
    await tab_to(page, submit)
    await page.keyboard.press("Enter")

    await expect(said(detail, "Decide")).to_have_text("Decision recorded: Accept.")
    await expect(submit).to_be_disabled()
    await expect(rows(page)).to_have_count(0)
    out = await node_outputs(engine, run_id, "gate")
    assert out["action"] == "accept" and out["decidedBy"] == "bob"
    received = await events(engine, run_id, "approval.received")
    assert received[0]["payload"]["decidedBy"] == "bob"


@pytest.mark.browser
async def test_reject_with_feedback_then_refine_with_structured_feedback(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    run_id, detail = await open_started(
        page, site, api, engine, "demo-expense-approval", "Approve expense report EXP-1042"
    )
    assert await detail.get_by_role("radio").count() == 4  # accept, reject, refine, edit-accept; ask is separate

    await detail.get_by_label("Reject", exact=True).check()
    feedback = detail.get_by_label("Feedback for the requester (optional)")
    await expect(feedback).to_be_visible()
    await expect(detail.get_by_label("What should change")).to_be_hidden()
    await assert_keyboard_basics(page, detail)
    await feedback.fill("The train receipt is missing.")
    await detail.get_by_role("button", name="Submit decision").click()
    await expect(said(detail, "Decide")).to_have_text("Decision recorded: Reject.")

    first = (await events(engine, run_id, "approval.received"))[0]["payload"]
    assert first["action"] == "reject" and first["decidedBy"] == "bob"
    assert first["feedback"] == "The train receipt is missing."

    # The workflow sends the report back for revision and asks again.
    new_request = detail.get_by_role("button", name="Open the new request")
    await expect(new_request).to_be_visible()
    await new_request.click()
    await detail.get_by_label("Request changes", exact=True).check()
    await detail.get_by_label("Scope").select_option(label="One section")
    await detail.get_by_label("Section path").fill("lines[1]")
    await expect(detail.get_by_label("Item ids")).to_be_hidden()
    await detail.get_by_label("Tags (optional)").fill("amount, receipts")
    await detail.get_by_label("What should change").fill("The train fare looks twice too high.")
    await assert_keyboard_basics(page, detail)
    await screenshot(page, "refine-form")
    await detail.get_by_role("button", name="Submit decision").click()
    await expect(said(detail, "Decide")).to_have_text("Decision recorded: Request changes.")

    second = (await events(engine, run_id, "approval.received"))[1]["payload"]
    assert second["action"] == "refine"
    assert second["refineFeedback"] == {
        "scope": "section",
        "sectionPath": "lines[1]",
        "tags": ["amount", "receipts"],
        "text": "The train fare looks twice too high.",
    }


@pytest.mark.browser
async def test_ask_then_accept_with_edits(page: Page, site: str, api: httpx.AsyncClient, engine: Engine) -> None:
    run_id, detail = await open_started(
        page, site, api, engine, "demo-expense-approval", "Approve expense report EXP-1042"
    )
    await expect(detail.get_by_text("No questions asked yet.")).to_be_visible()

    question = detail.get_by_label("Your question")
    await question.fill("Who booked the hotel?")
    await detail.get_by_role("button", name="Ask", exact=True).click()
    qa = detail.locator(".qa li")
    await expect(qa).to_have_count(1)
    await expect(qa).to_contain_text("Who booked the hotel?")
    await expect(qa).to_contain_text("Your question is recorded")
    await expect(question).to_have_value("")
    assert (await engine.store.load_run(run_id)).status == "waiting-approval"

    await detail.get_by_label("Accept with edits").check()
    editor = detail.get_by_label("Edited artifact (JSON)")
    assert '"total": 1840.5' in await editor.input_value()
    await editor.fill('{"total": 1500, "currency": "EUR"')
    await detail.get_by_role("button", name="Submit decision").click()
    await expect(said(detail, "Decide", "alert")).to_contain_text("The edited artifact is not valid JSON")
    await expect(editor).to_have_value('{"total": 1500, "currency": "EUR"')
    assert (await engine.store.load_run(run_id)).status == "waiting-approval"

    await editor.fill('{"total": 1500, "currency": "EUR", "lines": [{"item": "Hotel", "amount": 1500}]}')
    await detail.get_by_role("button", name="Submit decision").click()
    await expect(said(detail, "Decide")).to_have_text("Decision recorded: Accept with edits.")
    out = await node_outputs(engine, run_id, "review")
    assert out["action"] == "edit-accept"
    assert out["artifactData"] == {"total": 1500, "currency": "EUR", "lines": [{"item": "Hotel", "amount": 1500}]}


@pytest.mark.browser
async def test_clarification_fields_and_a_refused_answer_keeps_what_was_typed(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    run_id, detail = await open_started(
        page, site, api, engine, "demo-clarification", "Who is the announcement for? (+1 more)"
    )
    audience = detail.get_by_label("Who is the announcement for?")
    deadline = detail.get_by_label("When must it go out (YYYY-MM-DD)?")
    await expect(audience.locator("option")).to_have_text(["Choose…", "customers", "staff", "press"])
    await expect(deadline).to_have_attribute("type", "text")
    await expect(detail).to_contain_text("Must match the pattern")
    await assert_keyboard_basics(page, detail)
    send = detail.get_by_role("button", name="Send answers")

    await send.click()
    error = said(detail, "Answer the questions", "alert")
    await expect(error).to_contain_text("the answers do not match the questions")
    await expect(error).to_contain_text("Unanswered: audience, deadline")

    await audience.select_option(label="staff")
    await deadline.fill("next Friday")
    await send.click()
    await expect(error).to_contain_text("answers/deadline does not match its schema")
    await expect(error).to_contain_text("'next Friday' does not match")
    await expect(deadline).to_have_value("next Friday")
    await expect(audience.locator("option:checked")).to_have_text("staff")
    await screenshot(page, "refused-answer")
    assert (await engine.store.load_run(run_id)).status == "waiting-input"

    await deadline.fill("2026-12-01")
    await deadline.press("Enter")
    await expect(said(detail, "Answer the questions")).to_have_text("Thank you, your answers are recorded.")
    await expect(error).to_be_empty()
    out = await node_outputs(engine, run_id, "ask")
    assert out == {"answers": {"audience": "staff", "deadline": "2026-12-01"}}


@pytest.mark.browser
async def test_low_confidence_ratify_and_correct(page: Page, site: str, api: httpx.AsyncClient, engine: Engine) -> None:
    ratified = await start(api, engine, "conformance-agent-low-confidence")
    corrected = await start(api, engine, "conformance-agent-low-confidence")
    title = "Ratify core.conformance.low-conf-decider's decision (confidence 0.5 < 0.7)"
    await sign_in(page, site)
    await expect(rows(page)).to_have_count(2)

    detail = await open_request(page, title)
    await expect(detail.locator(".summary .facts")).to_contain_text("core.conformance.low-conf-decider")
    await expect(detail.locator(".summary .facts")).to_contain_text("0.5 observed, below the 0.7 threshold")
    await expect(detail.locator("pre")).to_contain_text('"kind": "stub-low-conf"')
    await expect(detail.get_by_label("Corrected decision (JSON)")).to_be_hidden()
    await assert_keyboard_basics(page, detail)
    await detail.get_by_label("Ratify the proposed decision").check()
    await detail.get_by_role("button", name="Submit ruling").click()
    await expect(said(detail, "Rule on the decision")).to_have_text("Decision ratified.")
    assert (await node_outputs(engine, ratified, "low-conf-decider"))["decision"] == {"kind": "stub-low-conf"}

    await expect(rows(page)).to_have_count(1)
    detail = await open_request(page, title)
    await detail.get_by_label("Correct the decision").check()
    editor = detail.get_by_label("Corrected decision (JSON)")
    await editor.fill('{"kind": "operator-corrected", "note": "route to billing"}')
    await detail.get_by_role("button", name="Submit ruling").click()
    await expect(said(detail, "Rule on the decision")).to_have_text("Corrected decision recorded.")
    decision = (await node_outputs(engine, corrected, "low-conf-decider"))["decision"]
    assert decision == {"kind": "operator-corrected", "note": "route to billing"}


@pytest.mark.browser
async def test_conversation_reply_then_close(page: Page, site: str, api: httpx.AsyncClient, engine: Engine) -> None:
    run_id, detail = await open_started(
        page, site, api, engine, "demo-conversation", "Where are you travelling, and why?"
    )
    transcript = detail.locator(".transcript li")
    await expect(transcript).to_have_text(
        ["AgentHi! I will ask you three short questions about your trip.", "AgentWhere are you travelling, and why?"]
    )
    await assert_keyboard_basics(page, detail)

    reply = detail.get_by_label("Your reply")
    await reply.fill("Lisbon, for a conference.")
    await reply.press("Enter")  # a new line, not a submission
    await expect(reply).to_have_value("Lisbon, for a conference.\n")
    await reply.press("Backspace")
    await reply.press("Control+Enter")
    # The next turn arrives live in the same place, with an empty reply box.
    await expect(transcript).to_have_count(4)
    await expect(transcript.nth(2)).to_have_text("bobLisbon, for a conference.")
    await expect(transcript.nth(3)).to_have_text("AgentWhen, and for how long?")
    reply = detail.get_by_label("Your reply")
    await expect(reply).to_be_enabled()
    await expect(reply).to_have_value("")
    await expect(rows(page).locator("td").nth(6)).to_have_text("1 turn so far")
    await screenshot(page, "second-turn")

    await detail.get_by_label("Closing note (optional)").fill("That is all I know for now.")
    await detail.get_by_label("Outcome (optional JSON)").fill('{"destination": "Lisbon"}')
    await detail.get_by_role("button", name="Close conversation").click()
    await expect(said(detail, "Close the conversation")).to_have_text("Conversation closed.")
    out = await node_outputs(engine, run_id, "chat")
    assert out["outcome"] == {"destination": "Lisbon"}
    exchanged = (await events(engine, run_id, "conversation.exchanged"))[0]["payload"]["turn"]
    assert (exchanged["content"], exchanged["speakerId"]) == ("Lisbon, for a conference.", "bob")
    closed = (await events(engine, run_id, "conversation.closed"))[0]["payload"]
    assert closed["finalTurn"]["content"] == "That is all I know for now."
    await expect(rows(page)).to_have_count(0)


@pytest.mark.browser
async def test_external_event_must_match_its_correlation(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    run_id, detail = await open_started(
        page, site, api, engine, "demo-external-payment", "Waiting for payment.completed"
    )
    await expect(detail.locator(".summary .facts")).to_contain_text('orderId = "A-1001", status = "paid"')
    body = detail.get_by_label("Event body (JSON)")
    assert json.loads(await body.input_value()) == {"orderId": "A-1001", "status": "paid"}
    await assert_keyboard_basics(page, detail)

    await body.fill('{"orderId": "A-1001", "status": "pending"}')
    await detail.get_by_role("button", name="Deliver event").click()
    await expect(said(detail, "Deliver the event", "alert")).to_contain_text(
        "does not match this interrupt's correlation"
    )
    await expect(body).to_have_value('{"orderId": "A-1001", "status": "pending"}')

    await body.fill('{"orderId": "A-1001", "status": "paid", "amount": 42}')
    await detail.get_by_role("button", name="Deliver event").click()
    await expect(said(detail, "Deliver the event")).to_have_text("Event delivered.")
    await node_outputs(engine, run_id, "await-payment")


@pytest.mark.browser
async def test_custom_input_is_checked_against_its_schema(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    wf = Workflow("budget-split")
    schema = {
        "type": "object",
        "required": ["design", "build"],
        "properties": {"design": {"type": "number"}, "build": {"type": "number"}},
    }

    @wf.node("split")
    async def split(ctx: NodeContext) -> dict[str, Any]:
        return {"split": await ctx.interrupt(custom("budget-split", {"total": 100}, resume_schema=schema))}

    wf.register(engine)
    run_id, detail = await open_started(page, site, api, engine, "budget-split", "budget-split input")
    await expect(detail.locator(".summary pre")).to_contain_text('"total": 100')
    answer = detail.get_by_label("Answer (JSON)")
    await assert_keyboard_basics(page, detail)

    await answer.fill('{"design": 60}')
    await detail.get_by_role("button", name="Submit answer").click()
    await expect(said(detail, "Answer", "alert")).to_contain_text("does not match its schema")
    await expect(answer).to_have_value('{"design": 60}')
    await answer.fill('{"design": 60, "build": 40}')
    await detail.get_by_role("button", name="Submit answer").click()
    await expect(said(detail, "Answer")).to_have_text("Answer recorded.")
    assert (await node_outputs(engine, run_id, "split"))["split"] == {"design": 60, "build": 40}


# --- the pieces behind the page -----------------------------------------------------------------


async def test_change_feed_follows_one_tenant(engine: Engine) -> None:
    feed = inbox_changes(engine, "other", keepalive_s=0.05, lifetime_s=30, settle_s=0)
    assert await anext(feed) == b": connected\n\n"
    # Every event of this run is in the feed's queue before it is read again:
    # none of them is the other tenant's business.
    mine = await engine.create_run(ADMIN, "conformance-approval")
    await settle(engine, mine.run_id)
    assert await anext(feed) == b": keep-alive\n\n"
    olga = KEYS["other"].principal
    theirs = await engine.create_run(olga, "conformance-approval")
    await settle(engine, theirs.run_id)
    assert await anext(feed) == b"event: changed\ndata: {}\n\n"
    # Events committed by another instance arrive as a poke: re-read, to be safe.
    engine.hub.poke(theirs.run_id)
    assert await anext(feed) == b"event: changed\ndata: {}\n\n"
    await feed.aclose()

    short = inbox_changes(engine, "*", keepalive_s=0.05, lifetime_s=0.12)
    items = [item async for item in short]
    assert items[0] == b": connected\n\n" and set(items[1:]) <= {b": keep-alive\n\n"}


async def test_ui_routes_headers_and_auth(site: str, api: httpx.AsyncClient, engine: Engine) -> None:
    page = await api.get("/ui/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp
    assert page.headers["referrer-policy"] == "no-referrer"
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.text), "the page loads nothing from elsewhere"
    redirect = await api.get("/ui", follow_redirects=False)
    assert redirect.status_code == 308 and redirect.headers["location"] == "ui/"
    for asset, media in (("inbox.js", "javascript"), ("forms.js", "javascript"), ("style.css", "text/css")):
        r = await api.get(f"/ui/static/{asset}")
        assert r.status_code == 200 and media in r.headers["content-type"], asset
    missing = await api.get("/ui/static/nope.js")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"

    assert (await api.get("/ui/api/me")).status_code == 401
    me = (await api.get("/ui/api/me", headers=auth("bob"))).json()
    assert me["principal"] == "bob" and me["canAnswer"] and me["canReadInbox"] and me["tenant"] == "default"
    reader = (await api.get("/ui/api/me", headers=auth("reader"))).json()
    assert reader["scopes"] == ["runs:read"] and not reader["canAnswer"]

    assert (await api.get("/ui/api/inbox/count")).status_code == 401
    assert (await api.get("/ui/api/inbox/count", headers=auth("reader"))).status_code == 403
    unknown = await api.get("/ui/api/inbox/count?kind=nope", headers=auth("bob"))
    assert unknown.status_code == 400 and unknown.json()["error"] == "validation_error"
    await start(api, engine, "demo-clarification")
    counted = await api.get("/ui/api/inbox/count", headers=auth("bob"))
    assert counted.json() == {"pending": 1} and counted.headers["cache-control"] == "no-store"
    assert (await api.get("/ui/api/inbox/count?kind=approval", headers=auth("bob"))).json() == {"pending": 0}
    assert (await api.get("/ui/api/inbox/count", headers=auth("other"))).json() == {"pending": 0}  # another tenant

    assert (await api.get("/ui/api/inbox/events")).status_code == 401
    denied = await api.get("/ui/api/inbox/events", headers=auth("reader"))
    assert denied.status_code == 403 and denied.json()["error"] == "forbidden"
    async with api.stream("GET", "/ui/api/inbox/events", headers=auth("bob")) as stream:
        assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
        async for line in stream.aiter_lines():
            assert line == ": connected"
            break


@pytest.mark.slow
def test_serve_mounts_the_pages_unless_told_not_to(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "ui.db", ["--api-key", "ops=ops-key-123456"]).start()
    try:
        assert f"inbox    : {server.url}/ui/" in server.output()
        assert httpx.get(f"{server.url}/ui/").status_code == 200
        bad_link = httpx.get(f"{server.url}/v1/interrupts/not-a-token", headers={"Accept": "text/html"})
        assert bad_link.status_code == 404 and "This link is not valid" in bad_link.text
    finally:
        server.stop()
    plain = ServerProcess(tmp_path / "plain.db", ["--api-key", "ops=ops-key-123456", "--no-ui"]).start()
    try:
        assert "inbox" not in plain.output()
        assert httpx.get(f"{plain.url}/ui/").status_code == 404
        bad_link = httpx.get(f"{plain.url}/v1/interrupts/not-a-token", headers={"Accept": "text/html"})
        assert bad_link.status_code == 404 and bad_link.json()["error"] == "interrupt_not_found"
    finally:
        plain.stop()
    env = {"OPENWOP_BRIDGE_NO_UI": "1"}
    by_env = ServerProcess(tmp_path / "env.db", ["--api-key", "ops=ops-key-123456"], env=env).start()
    try:
        assert httpx.get(f"{by_env.url}/ui/").status_code == 404
    finally:
        by_env.stop()
