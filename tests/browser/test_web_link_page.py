"""The signed-link page: ``GET /v1/interrupts/{token}`` opened in headless Chromium.

An inspect link shows its interrupt read-only, a resolve link lets the holder
answer without signing in, and a link that cannot be used any more says why
(expired, already used, withdrawn, not valid) with the matching status.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.async_api import Locator, Page, expect

from openwop_bridge import Engine, Workflow
from tests.browser import assert_keyboard_basics, node_outputs, said, screenshot, start, tab_to
from tests.conftest import TOKENS, auth
from tests.helpers import settle

HOSTILE = '<img src=x onerror="document.title=\'pwned\'"> & "friends"'


async def mint(api: httpx.AsyncClient, run_id: str, node: str, intent: str, subject: str | None = None) -> str:
    body: dict[str, Any] = {"intent": intent}
    if subject:
        body["subject"] = subject
    r = await api.post(f"/v1/runs/{run_id}/interrupts/{node}/links", json=body, headers=auth("admin"))
    assert r.status_code == 201, r.text
    url: str = r.json()["url"]
    return url


async def open_link(page: Page, api: httpx.AsyncClient, run_id: str, node: str, intent: str) -> Locator:
    """Open a fresh ``intent`` link to the interrupt at ``node``; the page's ``main``."""
    await page.goto(await mint(api, run_id, node, intent))
    return page.locator("main")


def hostile_workflow(engine: Engine) -> None:
    wf = Workflow("hostile-link")
    wf.node(
        "gate",
        type_id="core.approvalGate",
        config={
            "title": HOSTILE,
            "description": "<b>bold?</b> </script><script>document.title='pwned'</script>",
            "artifactId": "NOTE-1",
            "artifactType": "note",
            "artifactData": {"html": "<script>document.title='pwned'</script>"},
            "actions": ["accept", "reject", "ask"],
        },
    )
    wf.register(engine)


@pytest.mark.browser
async def test_an_inspect_link_is_read_only_and_shows_untrusted_text_as_text(
    page: Page, api: httpx.AsyncClient, engine: Engine
) -> None:
    hostile_workflow(engine)
    run_id = await start(api, engine, "hostile-link")
    asked = await api.post(
        f"/v1/runs/{run_id}/interrupts/gate",
        json={"resumeValue": {"action": "ask", "question": "Why <now>?"}},
        headers=auth("admin"),
    )
    assert asked.json()["status"] == "pending", asked.text

    response = await page.goto(await mint(api, run_id, "gate", "inspect"))
    assert response is not None and response.status == 200
    main = page.locator("main")
    await expect(main.get_by_role("heading", level=1)).to_have_text(HOSTILE)
    await expect(main.locator("#intent")).to_have_text(
        "This link lets you view the request. It cannot be used to answer it."
    )
    await expect(main.locator(".summary")).to_contain_text("<b>bold?</b> </script><script>")
    await expect(main.locator(".summary pre")).to_contain_text("<script>document.title='pwned'</script>")
    await expect(main.locator(".qa")).to_contain_text("Why <now>?")
    await expect(main.locator("dl.meta")).to_contain_text("Link valid until")
    assert await main.locator("form, input, select, textarea, button").count() == 0
    assert await main.locator("img, b").count() == 0
    assert await page.title() == f"{HOSTILE} · OpenWOP"
    assert (await engine.store.load_run(run_id)).status == "waiting-approval"


@pytest.mark.browser
async def test_a_resolve_link_answers_without_signing_in_once(
    page: Page, api: httpx.AsyncClient, engine: Engine
) -> None:
    run_id = await start(api, engine, "conformance-approval")
    link = await mint(api, run_id, "gate", "resolve", subject="carol")
    response = await page.goto(link)
    assert response is not None and response.status == 200
    main = page.locator("main")
    await expect(main.get_by_role("heading", level=1)).to_have_text("Conformance approval")
    await expect(main.get_by_text("You can answer this request on this page")).to_be_visible()
    await expect(main.locator("dl.meta")).to_contain_text("Answers ascarol")
    await assert_keyboard_basics(page, main)

    accept = main.get_by_label("Accept", exact=True)
    await tab_to(page, accept)
    await page.keyboard.press("Space")
    await tab_to(page, main.get_by_role("button", name="Submit decision"))
    await screenshot(page, "before")
    await page.keyboard.press("Enter")
    await expect(said(main, "Decide")).to_have_text("Decision recorded: Accept.")
    out = await node_outputs(engine, run_id, "gate")
    assert out["action"] == "accept" and out["decidedBy"] == "carol"

    again = await page.reload()
    assert again is not None and again.status == 409
    await expect(page.get_by_role("heading", level=1)).to_have_text("This link was already used")
    await expect(page.locator(".server-message")).to_contain_text("this interrupt was already resolved")
    assert await page.locator("form, input, button").count() == 0


@pytest.mark.browser
async def test_a_resolve_link_keeps_what_was_typed_when_the_answer_is_refused(
    page: Page, api: httpx.AsyncClient, engine: Engine
) -> None:
    run_id = await start(api, engine, "demo-clarification")
    main = await open_link(page, api, run_id, "ask", "resolve")
    audience = main.get_by_label("Who is the announcement for?", exact=True)
    deadline = main.get_by_label("When must it go out (YYYY-MM-DD)?")
    await audience.select_option(label="press")
    await deadline.fill("31/12/2026")
    await main.get_by_role("button", name="Send answers").click()
    error = said(main, "Answer the questions", "alert")
    await expect(error).to_contain_text("answers/deadline does not match its schema")
    await expect(deadline).to_have_value("31/12/2026")
    await expect(audience.locator("option:checked")).to_have_text("press")
    await screenshot(page, "refused")

    await deadline.fill("2026-12-31")
    await main.get_by_role("button", name="Send answers").click()
    await expect(said(main, "Answer the questions")).to_have_text("Thank you, your answers are recorded.")
    assert await node_outputs(engine, run_id, "ask") == {"answers": {"audience": "press", "deadline": "2026-12-31"}}


@pytest.mark.browser
async def test_a_conversation_turn_by_link(page: Page, api: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await start(api, engine, "demo-conversation")
    main = await open_link(page, api, run_id, "chat", "resolve")
    await expect(main.locator(".summary")).to_contain_text("Where are you travelling, and why?")
    await main.get_by_label("Your reply").fill("Oslo, to see a client.")
    await main.get_by_role("button", name="Send reply").click()
    await expect(said(main, "Reply")).to_have_text("Reply sent. Waiting for the next turn…")
    await settle(engine, run_id)
    snapshot = (await api.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()
    assert snapshot["interrupt"]["payload"]["data"]["prompt"] == "When, and for how long?"

    # The link was for that one turn.
    again = await page.reload()
    assert again is not None and again.status == 409
    await expect(page.get_by_role("heading", level=1)).to_have_text("This link was already used")


@pytest.mark.browser
async def test_an_expired_link(page: Page, site: str, api: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await start(api, engine, "conformance-approval")
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None and engine.signer is not None
    token = engine.signer.mint(run_id, "gate", record.interrupt_id, engine.clock.now_ms() - 1000, "resolve")
    response = await page.goto(f"{site}/v1/interrupts/{token}")
    assert response is not None and response.status == 410
    await expect(page.get_by_role("heading", level=1)).to_have_text("This link has expired")
    await expect(page.locator(".lead")).to_contain_text("Ask whoever sent it for a new one.")
    await expect(page.locator(".server-message")).to_contain_text("interrupt_expired")
    assert await page.locator("form, input, button").count() == 0
    assert (await engine.store.load_run(run_id)).status == "waiting-approval"


@pytest.mark.browser
async def test_links_to_withdrawn_and_made_up_requests(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    run_id = await start(api, engine, "conformance-approval")
    link = await mint(api, run_id, "gate", "resolve")
    r = await api.post(f"/v1/runs/{run_id}/cancel", headers=auth("admin"))
    assert r.status_code == 200, r.text
    await settle(engine, run_id)
    response = await page.goto(link)
    assert response is not None and response.status == 409
    await expect(page.get_by_role("heading", level=1)).to_have_text("This link was already used")
    await expect(page.locator(".server-message")).to_contain_text("the interrupt was cancelled")

    response = await page.goto(f"{site}/v1/interrupts/not-a-real-token")
    assert response is not None and response.status == 404
    await expect(page.get_by_role("heading", level=1)).to_have_text("This link is not valid")
    await screenshot(page, "not-valid")


@pytest.mark.browser
async def test_a_link_that_also_needs_a_key_asks_for_one(page: Page, api: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await start(api, engine, "conformance-interrupt-auth-required")
    main = await open_link(page, api, run_id, "gate", "resolve")
    await expect(main.locator("#intent")).to_have_text("You can answer this request on this page, with your API key.")
    key = main.get_by_label("Your API key")
    await expect(key).to_be_visible()
    await assert_keyboard_basics(page, main)
    await main.get_by_label("Accept", exact=True).check()
    submit = main.get_by_role("button", name="Submit decision")
    await submit.click()
    await expect(said(main, "Decide", "alert")).to_contain_text("needs an authenticated answer")
    await expect(main.get_by_label("Accept", exact=True)).to_be_checked()

    await key.fill(TOKENS["bob"])
    await submit.click()
    await expect(said(main, "Decide")).to_have_text("Decision recorded: Accept.")
    out = await node_outputs(engine, run_id, "gate")
    assert out["decidedBy"] == "bob"


async def test_a_link_that_names_no_one_asks_for_a_key_on_a_quorum_gate(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    run_id = await start(api, engine, "conformance-interrupt-quorum")
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None and engine.signer is not None
    # A resolve link without a subject, as hosts minted them before quorum links named their reader.
    token = engine.signer.mint(run_id, "gate", record.interrupt_id, engine.clock.now_ms() + 600_000, "resolve")
    await page.goto(f"{site}/v1/interrupts/{token}")
    main = page.locator("main")
    await expect(main.locator("#intent")).to_contain_text("needs 3 approvals from different people")
    key = main.get_by_label("Your API key")
    await expect(key).to_be_visible()
    await main.get_by_label("Accept", exact=True).check()
    submit = main.get_by_role("button", name="Submit decision")
    await key.fill("")
    await submit.click()
    await expect(said(main, "Decide", "alert")).to_contain_text("names no one")
    fresh = await engine.store.interrupt_at(run_id, "gate")
    assert fresh is not None and not fresh.state.get("votes")
    await key.fill(TOKENS["bob"])
    await submit.click()
    await expect(said(main, "Decide")).to_contain_text("Your vote is recorded")
    fresh = await engine.store.interrupt_at(run_id, "gate")
    assert fresh is not None and [v["voter"] for v in fresh.state["votes"]] == ["bob"]


async def test_the_html_is_escaped_and_json_clients_are_unaffected(api: httpx.AsyncClient, engine: Engine) -> None:
    hostile_workflow(engine)
    run_id = await start(api, engine, "hostile-link")
    link = await mint(api, run_id, "gate", "inspect")

    html = await api.get(link, headers={"Accept": "text/html,application/xhtml+xml"})
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in html.headers["content-security-policy"]
    assert html.headers["referrer-policy"] == "no-referrer" and html.headers["cache-control"] == "no-store"
    escaped = "&lt;img src=x onerror=&quot;document.title=&#x27;pwned&#x27;&quot;&gt; &amp; &quot;friends&quot;"
    assert f'<h1 id="page-title">{escaped}</h1>' in html.text
    assert "<img" not in html.text and "<b>" not in html.text
    assert "</script><script>" not in html.text
    assert html.text.count("<script") == 2  # the inert JSON block and the page's own module
    assert "\\u003cimg src=x" in html.text

    as_json = await api.get(link)
    assert as_json.headers["content-type"] == "application/json"
    assert as_json.json()["intent"] == "inspect" and as_json.json()["title"] == HOSTILE

    gone = await api.get("/v1/interrupts/not-a-real-token", headers={"Accept": "text/html"})
    assert gone.status_code == 404 and "This link is not valid" in gone.text
    assert (await api.get("/v1/interrupts/not-a-real-token")).json()["error"] == "interrupt_not_found"
