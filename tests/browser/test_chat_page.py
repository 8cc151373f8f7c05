"""The chat example (``examples/chat``) driven in headless Chromium against real uvicorn.

The page talks AG-UI to the bridge through the bundled ``@ag-ui/client``: it
streams the assistant's text, turns every interrupt into a card built from its
``responseSchema``, resumes the same thread with ``resume[]``, and after a reload
asks the endpoint for the open interrupts again. What the runs did is checked
through the REST API, not through the page.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from playwright.async_api import Locator, Page, expect

from openwop_bridge import Engine, NodeContext, Workflow
from openwop_bridge.agui import agui_routes
from openwop_bridge.host.web.pages import CONTENT_SECURITY_POLICY
from tests.browser import (
    assert_keyboard_basics,
    assert_unknown_key_refused,
    demo_server,
    require_built,
    screenshot,
    tab_to,
)
from tests.conftest import TOKENS, auth
from tests.helpers import two_sign_offs
from tests.server import free_port

ROOT = Path(__file__).resolve().parents[2]
CHAT = ROOT / "examples" / "chat"


def _load_serve() -> ModuleType:
    spec = importlib.util.spec_from_file_location("chat_example_serve", CHAT / "serve.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


serve = _load_serve()


def require_bundle() -> None:
    """Fail (never skip) when the page's script has not been built."""
    require_built(serve.BUNDLE, "the chat page's bundle", "cd examples/chat && npm ci && npm run build")


@pytest.fixture
async def site(engine: Engine) -> AsyncIterator[str]:
    require_bundle()
    async with demo_server(engine, [*agui_routes(engine), *serve.chat_routes()]) as url:
        yield url


@pytest.fixture
async def api(site: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=site, timeout=10, headers=auth("admin")) as client:
        yield client


async def sign_in(page: Page, site: str, who: str = "admin") -> None:
    await page.goto(f"{site}/chat/")
    await page.get_by_label("API key").fill(TOKENS[who])
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#app")).to_be_visible()


async def open_agent(page: Page, site: str, workflow: str, who: str = "admin") -> None:
    """Sign in, pick the agent and start it."""
    await sign_in(page, site, who)
    await page.get_by_label("Agent").select_option(workflow)
    await expect(page.locator("#thread-id")).not_to_be_empty()
    await page.get_by_role("button", name="Start", exact=True).click()


async def open_card(page: Page, site: str, workflow: str, title: str) -> Locator:
    """Sign in, start ``workflow``'s agent and wait for its interrupt card titled ``title``; the card."""
    await open_agent(page, site, workflow)
    opened = card(page, title)
    await expect(opened).to_be_visible()
    return opened


def card(page: Page, title: str) -> Locator:
    """The interrupt card with this heading."""
    return page.get_by_role("region", name=title)


def transcript(page: Page) -> Locator:
    return page.get_by_role("log")


def status(page: Page) -> Locator:
    return page.locator("#run-status")


async def run_of(page: Page) -> str:
    """The OpenWOP run behind the page's thread (shown under the agent picker)."""
    await expect(page.locator("#run-id")).to_have_text(re.compile(r"^run_"))
    return await page.locator("#run-id").inner_text()


async def snapshot(api: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    r = await api.get(f"/v1/runs/{run_id}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def run_events(api: httpx.AsyncClient, run_id: str, type_: str) -> list[dict[str, Any]]:
    r = await api.get(f"/v1/runs/{run_id}/events", headers={"Accept": "application/json"})
    assert r.status_code == 200, r.text
    return [e for e in r.json()["events"] if e["type"] == type_]


def agui_events(body: str) -> list[dict[str, Any]]:
    """The AG-UI events of one streamed response."""
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]


# --- the page and its script ---------------------------------------------------------------


def test_the_routes_refuse_to_start_without_the_bundle(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"npm ci && npm run build"):
        serve.chat_routes(tmp_path / "missing.js")


@pytest.mark.slow
def test_serve_script_starts_the_host_with_the_page(tmp_path: Path) -> None:
    require_bundle()
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(CHAT / "serve.py"), "--db", str(tmp_path / "chat.db"), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while "chat     :" not in log.read_text():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        printed = log.read_text()
        assert f"chat     : {url}/chat/" in printed
        key = re.search(r"dev API key \(every scope, tenant 'default'\): (\S+)", printed)
        assert key, printed
        page = httpx.get(f"{url}/chat/")
        assert page.status_code == 200 and page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert page.headers["x-frame-options"] == "DENY" and page.headers["referrer-policy"] == "no-referrer"
        script = httpx.get(f"{url}/chat/chat.js")
        assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
        assert httpx.get(f"{url}/chat/package.json").status_code == 404
        assert httpx.get(f"{url}/chat", follow_redirects=False).headers["location"] == "chat/"
        agents = httpx.get(f"{url}/v1/workflows", headers={"Authorization": f"Bearer {key.group(1)}"})
        assert "demo-conversation" in [w["id"] for w in agents.json()["workflows"]]
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.browser
async def test_sign_in_lists_the_agents_and_keeps_the_key_in_the_tab(page: Page, site: str) -> None:
    await page.goto(f"{site}/chat/")
    await assert_keyboard_basics(page, page.locator("#sign-in"))
    key = await assert_unknown_key_refused(page)

    # bob may run and answer but not read workflow definitions: the agents come from discovery.
    await key.fill(TOKENS["bob"])
    await key.press("Enter")
    await expect(page.locator("#app")).to_be_visible()
    options = await page.get_by_label("Agent").locator("option").all_inner_texts()
    assert {"demo-expense-approval", "demo-conversation", "demo-tool-approval"} <= set(options)
    assert await page.evaluate("sessionStorage.getItem('openwop.chat.apiKey')") == TOKENS["bob"]
    assert TOKENS["bob"] not in page.url
    stored = "Object.keys(sessionStorage).filter((k) => k.startsWith('openwop.chat.thread.'))"
    assert await page.evaluate(stored) != []
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.locator("#sign-in")).to_be_visible()
    assert await page.evaluate("sessionStorage.getItem('openwop.chat.apiKey')") is None
    assert await page.evaluate(stored) == []  # the next person in this tab starts afresh

    await sign_in(page, site, "admin")
    await expect(page.get_by_label("Agent").locator("option", has_text="Demo: expense approval")).to_have_count(1)
    await page.get_by_label("Agent").select_option("demo-conversation")
    await expect(page.locator("#agent-description")).to_contain_text("A three-turn conversation")
    await page.reload()
    await expect(page.get_by_label("Agent")).to_have_value("demo-conversation")


# --- 1. an approval -----------------------------------------------------------------------


@pytest.mark.browser
async def test_expense_approval_answered_from_its_card(page: Page, site: str, api: httpx.AsyncClient) -> None:
    review = await open_card(page, site, "demo-expense-approval", "Approve expense report EXP-1042")
    await expect(review).to_contain_text("Team offsite, 3 nights, 4 people.")
    await expect(review).to_contain_text('"total": 1840.5')
    # One button per action the approval allows (the others behind their own section).
    await expect(review.locator("button")).to_have_text(
        ["Accept", "Reject", "Request changes", "Accept with edits", "Ask"]
    )
    await expect(status(page)).to_have_text("Waiting for your answer.")
    await expect(page.get_by_role("button", name="Send")).to_be_disabled()
    await expect(page.locator("#transcript-empty")).to_be_hidden()

    # "Ask" keeps the approval open; the answer streams into the chat as assistant text.
    await review.get_by_text("Ask a question first").click()
    await review.get_by_label("Your question").fill("Who approved the offsite budget?")
    async with page.expect_response(re.compile(r"/agui/demo-expense-approval$")) as asked:
        await review.get_by_role("button", name="Ask", exact=True).click()
    streamed = agui_events(await (await asked.value).text())
    deltas = [e["delta"] for e in streamed if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert any(d.startswith("Your question is recorded") for d in deltas), deltas
    chat = transcript(page)
    await expect(chat.locator(".msg.user .text")).to_have_text(["Who approved the offsite budget?"])
    await expect(chat.locator(".msg.assistant")).to_contain_text("Your question is recorded")
    await expect(review.get_by_label("Your question")).to_have_count(1)  # the same approval, asked again

    # A reload while it waits: the endpoint re-emits the approval and its card comes back.
    await page.reload()
    await expect(review).to_be_visible()
    await expect(review.locator("button")).to_have_count(5)
    await expect(chat.locator(".msg.user .text")).to_have_text(["Who approved the offsite budget?"])
    await expect(chat.locator(".msg.assistant .text")).to_contain_text(["Your question is recorded"])

    await review.get_by_label("Feedback").fill("Paid from the offsite budget.")
    await screenshot(page, "approval-card")
    await review.get_by_role("button", name="Accept", exact=True).click()
    await expect(status(page)).to_have_text("Run finished.")
    await expect(review).to_have_count(0)
    await expect(page.locator("#run-state")).to_have_text("completed")

    run = await snapshot(api, await run_of(page))
    assert run["status"] == "completed"
    assert run["nodeStates"]["pay"]["status"] == "completed"
    [resolved] = await run_events(api, run["runId"], "interrupt.resolved")
    assert resolved["payload"]["action"] == "accept"
    assert resolved["payload"]["resumeValue"]["feedback"] == "Paid from the offsite budget."
    assert resolved["payload"]["resolvedBy"] == "alice"


@pytest.mark.browser
async def test_request_changes_then_accept_with_edits(page: Page, site: str, api: httpx.AsyncClient) -> None:
    await open_agent(page, site, "demo-expense-approval")
    review = card(page, "Approve expense report EXP-1042")
    first = await review.get_attribute("data-interrupt-id")
    await review.locator("summary", has_text="Request changes").click()
    await review.get_by_label("Scope").select_option(label="items")
    await review.get_by_label("Item ids").fill("hotel, train")
    await review.get_by_label("Text", exact=True).fill("Attach the receipts.")
    await review.get_by_role("button", name="Request changes").click()
    # The report goes back to be revised and comes round again: a new interrupt, a fresh card.
    await expect(review).not_to_have_attribute("data-interrupt-id", first or "")
    await review.get_by_text("Edit, then accept").click()
    edited = review.get_by_label("Edited artifact")
    report = json.loads(await edited.input_value())
    await edited.fill(json.dumps({**report, "total": 1700}))
    await review.get_by_role("button", name="Accept with edits").click()
    await expect(status(page)).to_have_text("Run finished.")

    run_id = await run_of(page)
    refined, accepted = await run_events(api, run_id, "interrupt.resolved")
    assert refined["payload"]["action"] == "refine"
    assert refined["payload"]["resumeValue"]["refineFeedback"] == {
        "scope": "items",
        "itemIds": ["hotel", "train"],
        "text": "Attach the receipts.",
    }
    assert accepted["payload"]["action"] == "edit-accept"
    assert accepted["payload"]["resumeValue"]["editedArtifactData"]["total"] == 1700


# --- 2. a tool call, approved with edited arguments -------------------------------------------


@pytest.mark.browser
async def test_tool_call_approved_with_edited_arguments(page: Page, site: str, api: httpx.AsyncClient) -> None:
    approval = await open_card(page, site, "demo-tool-approval", "Approve the call to send_email?")
    await expect(approval).to_contain_text("The assistant drafted this e-mail to every customer.")
    # The call itself is in the chat, as the assistant's tool call.
    await expect(transcript(page).locator(".tool-call")).to_contain_text("send_email")
    arguments = approval.get_by_label("Arguments")
    assert json.loads(await arguments.input_value()) == {
        "to": "customers@example.com",
        "subject": "Version 2.0 is out",
        "body": "Hello! Version 2.0 ships today.",
    }

    # JSON that does not parse is refused on the spot, and the text stays.
    await arguments.fill('{"to": "beta-testers@example.com",')
    await approval.get_by_role("button", name="Approve").click()
    await expect(approval.get_by_role("alert")).to_contain_text("Arguments is not valid JSON")
    await expect(arguments).to_have_value('{"to": "beta-testers@example.com",')

    edited = {"to": "beta-testers@example.com", "subject": "Version 2.0 is out", "body": "Try 2.0 first!"}
    await arguments.fill(json.dumps(edited, indent=2))
    await screenshot(page, "tool-card")
    await approval.get_by_role("button", name="Approve").click()
    await expect(status(page)).to_have_text("Run finished.")
    await expect(transcript(page).locator(".msg.tool")).to_contain_text("beta-testers@example.com")

    run = await snapshot(api, await run_of(page))
    assert run["status"] == "completed"
    result = run["nodeStates"]["send-announcement"]["outputs"]
    assert result["approved"] is True
    assert result["result"] == {"executed": True, "tool": "send_email", "args": edited}
    [resolved] = await run_events(api, run["runId"], "interrupt.resolved")
    assert resolved["payload"]["action"] == "edit-accept"


# --- 3. a clarification --------------------------------------------------------------------


@pytest.mark.browser
async def test_clarification_answered_from_its_form(page: Page, site: str, api: httpx.AsyncClient) -> None:
    form = await open_card(page, site, "demo-clarification", "A few questions for you")
    await expect(form.locator(".eyebrow")).to_have_text("Input needed")
    audience = form.get_by_label("Who is the announcement for?")
    await expect(audience.locator("option")).to_have_text(["Choose…", "customers", "staff", "press"])
    await audience.select_option(label="press")
    await form.get_by_label("When must it go out (YYYY-MM-DD)?").fill("2026-12-01")
    await form.get_by_role("button", name="Send answer").click()
    await expect(status(page)).to_have_text("Run finished.")
    await expect(form).to_have_count(0)

    run = await snapshot(api, await run_of(page))
    assert run["status"] == "completed"
    assert run["nodeStates"]["ask"]["outputs"]["answers"] == {"audience": "press", "deadline": "2026-12-01"}


# --- 4. a conversation, with a reload in the middle ------------------------------------------


@pytest.mark.browser
async def test_two_turn_conversation_survives_a_reload(page: Page, site: str, api: httpx.AsyncClient) -> None:
    await open_agent(page, site, "demo-conversation")
    chat = transcript(page)
    await expect(chat.locator(".msg.assistant .text")).to_have_text(
        ["Hi! I will ask you three short questions about your trip.", "Where are you travelling, and why?"]
    )
    await expect(page.locator("#cards")).to_be_empty()  # turns are answered in the chat itself
    await expect(page.locator("#composer-hint")).to_have_text("The assistant is waiting for your reply.")
    message = page.get_by_label("Message")
    await message.fill("Lisbon, for a conference")
    await message.press("Enter")
    await expect(chat.locator(".msg .text").last).to_have_text("When, and for how long?")
    await expect(message).to_have_value("")
    run_id = await run_of(page)

    # Reload mid-interrupt: the page asks the endpoint again and it re-emits the open turn.
    async with page.expect_response(re.compile(r"/agui/demo-conversation$")) as rejoined:
        await page.reload()
    events = agui_events(await (await rejoined.value).text())
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"]["type"] == "interrupt"
    [turn] = events[-1]["outcome"]["interrupts"]
    assert turn["message"] == "When, and for how long?"
    await expect(chat.locator(".msg .text")).to_have_text(
        [
            "Hi! I will ask you three short questions about your trip.",
            "Where are you travelling, and why?",
            "Lisbon, for a conference",
            "When, and for how long?",
        ]
    )
    await expect(chat.locator(".msg .who")).to_have_text(["Assistant", "Assistant", "You", "Assistant"])
    await expect(status(page)).to_have_text("Waiting for your reply.")
    await expect(page.locator("#composer-hint")).to_have_text("The assistant is waiting for your reply.")
    assert await run_of(page) == run_id
    await screenshot(page, "after-reload")

    await message.fill("May, three nights")
    await page.get_by_role("button", name="Send").click()
    await expect(chat.locator(".msg .text").last).to_have_text("How many travellers?")
    await page.get_by_role("button", name="End the conversation").click()
    await expect(status(page)).to_have_text("Run finished.")
    await expect(page.get_by_role("button", name="End the conversation")).to_be_hidden()
    # Each message once (the canonical turns replaced what the page showed while sending);
    # closing without words is the host's note, not something the person said.
    await expect(chat.locator(".msg.user .text")).to_have_text(["Lisbon, for a conference", "May, three nights"])
    await expect(chat.locator(".msg.system .text").last).to_have_text("alice closed the conversation")

    run = await snapshot(api, run_id)
    assert run["status"] == "completed"
    outputs = run["nodeStates"]["chat"]["outputs"]
    assert outputs["outcome"] == {"replies": ["Lisbon, for a conference", "May, three nights"]}
    assert outputs["closedBy"] == "user" and outputs["turns"] == 2
    exchanged = await run_events(api, run_id, "conversation.exchanged")
    assert [e["payload"]["turn"]["content"] for e in exchanged if e["payload"]["turn"]["role"] == "user"] == [
        "Lisbon, for a conference",
        "May, three nights",
    ]


# --- 5. a refused answer ----------------------------------------------------------------------


@pytest.mark.browser
async def test_a_refused_answer_shows_why_and_keeps_what_was_typed(
    page: Page, site: str, api: httpx.AsyncClient
) -> None:
    await open_agent(page, site, "demo-clarification")
    form = page.locator(".interrupt").first
    await form.get_by_label("Who is the announcement for?").select_option(label="staff")
    deadline = form.get_by_label("When must it go out (YYYY-MM-DD)?")
    await deadline.fill("next Tuesday")
    await form.get_by_role("button", name="Send answer").click()
    alert = form.get_by_role("alert")
    await expect(alert.locator("p")).to_have_text("answers/deadline does not match its schema")
    await expect(alert.locator("li")).to_have_text([re.compile(r"^answers/deadline: 'next Tuesday' does not match")])
    await expect(status(page)).to_have_text("Not sent: see the message above.")
    await expect(deadline).to_have_value("next Tuesday")
    await expect(form.get_by_label("Who is the announcement for?")).to_have_value("1")  # still "staff"
    await screenshot(page, "refused")
    run_id = await run_of(page)
    assert (await snapshot(api, run_id))["status"] == "waiting-input"

    await deadline.fill("2026-12-24")
    await form.get_by_role("button", name="Send answer").click()
    await expect(status(page)).to_have_text("Run finished.")
    run = await snapshot(api, run_id)
    assert run["nodeStates"]["ask"]["outputs"]["answers"] == {"audience": "staff", "deadline": "2026-12-24"}


@pytest.mark.browser
async def test_a_failed_run_is_reported_in_the_chat(page: Page, site: str, engine: Engine) -> None:
    wf = Workflow("breaks-after-approval")
    wf.node("gate", type_id="core.approvalGate", config={"title": "Go ahead?", "actions": ["accept", "reject"]})

    @wf.node("explode", after="gate")
    async def explode(ctx: NodeContext) -> dict[str, Any]:
        raise RuntimeError("the printer is on fire")

    wf.register(engine)
    await open_agent(page, site, "breaks-after-approval")
    gate = card(page, "Go ahead?")
    await gate.get_by_role("button", name="Accept").click()
    await expect(page.locator("#run-error")).to_contain_text("The run failed")
    await expect(gate).to_have_count(0)
    await expect(page.get_by_role("button", name="Start", exact=True)).to_be_enabled()


@pytest.mark.browser
async def test_two_open_requests_are_answered_in_one_resume(page: Page, site: str, engine: Engine) -> None:
    two_sign_offs(engine, "two-sign-offs", ["accept", "reject"])
    await open_agent(page, site, "two-sign-offs")
    legal, finance = card(page, "legal sign-off"), card(page, "finance sign-off")
    await expect(finance).to_be_visible()
    ids = {name: await c.get_attribute("data-interrupt-id") for name, c in (("legal", legal), ("finance", finance))}
    sent: list[Any] = []
    page.on("request", lambda r: sent.append(r.post_data_json) if "/agui/" in r.url else None)

    await legal.get_by_role("button", name="Accept").click()
    await expect(legal.get_by_role("status")).to_have_text("Answer kept. 1 more request to answer before it is sent.")
    assert sent == []
    await finance.get_by_label("Feedback").fill("Within budget.")
    await finance.get_by_role("button", name="Accept").click()
    await expect(status(page)).to_have_text("Run finished.")
    [body] = sent  # one request, answering both
    assert sorted(body["resume"], key=lambda e: e["interruptId"] != ids["legal"]) == [
        {"interruptId": ids["legal"], "status": "resolved", "payload": {"action": "accept"}},
        {
            "interruptId": ids["finance"],
            "status": "resolved",
            "payload": {"feedback": "Within budget.", "action": "accept"},
        },
    ]


@pytest.mark.browser
async def test_an_expired_request_can_only_be_cancelled(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    wf = Workflow("sign-off-today")
    wf.node(
        "gate",
        type_id="core.approvalGate",
        config={"title": "Sign off today?", "actions": ["accept", "reject"], "timeoutMs": 3_600_000},
    )
    wf.register(engine)
    await page.clock.install()
    await open_agent(page, site, "sign-off-today")
    gate = card(page, "Sign off today?")
    await expect(gate).to_contain_text("Answer before")
    await page.clock.fast_forward("02:00:00")  # the page's clock only: the server still waits
    await gate.get_by_role("button", name="Accept").click()
    await expect(gate.get_by_role("alert")).to_contain_text("can no longer be answered")
    await expect(gate.get_by_role("button")).to_have_text(["Cancel the request"])
    await gate.get_by_role("button", name="Cancel the request").click()
    await expect(gate).to_have_count(0)
    # A cancelled approval fails closed: rejected, so this run (with nothing after a rejection) fails.
    await expect(page.locator("#run-error")).to_have_text("The run failed: the approval was rejected by alice")
    run_id = await run_of(page)
    assert (await snapshot(api, run_id))["status"] == "failed"
    [resolved] = await run_events(api, run_id, "interrupt.resolved")
    assert resolved["payload"]["action"] == "reject" and resolved["payload"]["resumeValue"]["reason"] == "cancelled"


# --- 6. keyboard and labels ------------------------------------------------------------------


@pytest.mark.browser
async def test_card_controls_are_labelled_and_work_from_the_keyboard(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    review = await open_card(page, site, "demo-expense-approval", "Approve expense report EXP-1042")
    for section in await review.locator("details").all():
        await section.locator("summary").click()
    await assert_keyboard_basics(page, review)
    await screenshot(page, "every-action")
    await assert_keyboard_basics(page, page.locator("#agent-bar"))

    # A tool call, approved with the keyboard alone.
    await page.get_by_role("button", name="New thread").click()
    await page.get_by_label("Agent").select_option("demo-tool-approval")
    await page.get_by_role("button", name="Start", exact=True).click()
    approval = card(page, "Approve the call to send_email?")
    await expect(approval).to_be_visible()
    await assert_keyboard_basics(page, approval)
    approve = approval.get_by_role("button", name="Approve")
    await tab_to(page, approve)
    await page.keyboard.press("Enter")
    await expect(status(page)).to_have_text("Run finished.")

    # A clarification answered with the keyboard alone: Tab, arrows, typing, Enter.
    await page.get_by_label("Agent").select_option("demo-clarification")
    await page.get_by_role("button", name="Start", exact=True).click()
    form = page.locator(".interrupt").first
    await expect(form).to_be_visible()
    await assert_keyboard_basics(page, form)
    audience = form.get_by_label("Who is the announcement for?")
    await tab_to(page, audience)
    await page.keyboard.press("ArrowDown")
    await page.keyboard.press("Tab")
    await expect(form.get_by_label("When must it go out (YYYY-MM-DD)?")).to_be_focused()
    await page.keyboard.type("2027-01-15")
    await page.keyboard.press("Enter")
    await expect(status(page)).to_have_text("Run finished.")
    run = await snapshot(api, await run_of(page))
    assert run["nodeStates"]["ask"]["outputs"]["answers"] == {"audience": "customers", "deadline": "2027-01-15"}

    # The composer, too.
    await assert_keyboard_basics(page, page.locator("#composer"))


@pytest.mark.browser
async def test_text_from_the_server_is_never_markup(page: Page, site: str, engine: Engine) -> None:
    hostile = "<img src=x onerror=\"document.title='pwned'\">"
    wf = Workflow("hostile-chat")
    wf.node(
        "gate",
        type_id="core.approvalGate",
        config={"title": hostile, "description": hostile, "actions": ["accept"], "artifactData": {"x": hostile}},
    )
    wf.register(engine)
    await open_agent(page, site, "hostile-chat")
    await expect(card(page, hostile)).to_be_visible()
    assert await page.locator("#app img").count() == 0
    assert await page.title() == "Chat · OpenWOP"
