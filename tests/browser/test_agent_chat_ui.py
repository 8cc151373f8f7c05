"""agent-chat-ui, LangChain's chat frontend for LangGraph servers, in headless Chromium against ``/langgraph``.

The app is the one ``create-agent-chat-app`` publishes on npm (its Vite
template, unchanged; ``tests/browser/agent-chat-ui`` builds it, and
``scripts/test`` runs that build). It talks to the bridge only through
``@langchain/langgraph-sdk``'s ``useStream``, as it talks to any LangGraph
server: the person signs in with the deployment URL, the assistant id and an
API key, writes a message, sees the workflow's approval in the Agent Inbox view
the app draws for ``HumanInterrupt`` values, and accepts it. What the run did
is checked through the REST API, not through the page.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from playwright.async_api import Page, expect
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from openwop_bridge import Engine
from openwop_bridge.core.workflow import load_workflow
from openwop_bridge.langgraph_api import langgraph_routes
from tests.browser import browser_page, demo_server, require_built, screenshot
from tests.conftest import TOKENS, auth

APP = Path(__file__).resolve().parent / "agent-chat-ui"
DIST = APP / "dist"
WORKFLOW = "demo-expense-approval"
QUORUM = "release-quorum"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def site(engine: Engine) -> AsyncIterator[str]:
    """The host with ``/langgraph`` and the built app under ``/agent-chat-ui`` on loopback."""
    require_built(DIST / "index.html", "agent-chat-ui", "cd tests/browser/agent-chat-ui && npm ci && npm run build")
    static = Mount("/agent-chat-ui", app=StaticFiles(directory=DIST, html=True))
    async with demo_server(engine, [*langgraph_routes(engine), static]) as url:
        yield url


@pytest.fixture
async def page(site: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """The app's page; every request it made must have gone to the host on loopback."""
    elsewhere: list[str] = []
    async with browser_page(tmp_path / "chromium-profile", request.node.name) as opened:
        opened.on("request", lambda r: None if r.url.startswith(f"{site}/") else elsewhere.append(r.url))
        yield opened
    assert not elsewhere, f"the app reached beyond the host: {elsewhere}"


async def connect(page: Page, site: str, who: str = "admin", *, workflow: str = WORKFLOW) -> None:
    """The app's own sign-in form: deployment URL, assistant id, API key."""
    await page.goto(f"{site}/agent-chat-ui/")
    await page.get_by_label("Deployment URL").fill(f"{site}/langgraph")
    await page.get_by_label("Assistant / Graph ID").fill(workflow)
    await page.get_by_label("LangSmith API Key").fill(TOKENS[who])
    await page.get_by_role("button", name="Continue").click()


async def run_of_thread(api: httpx.AsyncClient, thread_id: str, status: str) -> dict[str, Any]:
    """The OpenWOP run behind a LangGraph thread, once it has ``status`` (read over REST)."""
    for _ in range(100):
        runs = (await api.get("/v1/runs", params={"limit": 100})).json()["runs"]
        for listed in runs:
            run: dict[str, Any] = (await api.get(f"/v1/runs/{listed['runId']}")).json()
            if run.get("metadata", {}).get("langgraph", {}).get("threadId") == thread_id and run["status"] == status:
                return run
        await asyncio.sleep(0.1)
    raise AssertionError(f"no run of thread {thread_id} reached {status}")


def thread_of(page: Page) -> str:
    """The thread the app shows: it keeps its id in the page's URL (``?threadId=…``)."""
    [thread_id] = parse_qs(urlparse(page.url).query)["threadId"]
    return thread_id


@pytest.mark.browser
async def test_agent_chat_ui_shows_an_approval_and_accepts_it(site: str, page: Page) -> None:
    await connect(page, site)
    await page.get_by_placeholder("Type your message...").fill("Please file my offsite expenses.")
    await page.get_by_role("button", name="Send").click()

    # The approval arrives as a HumanInterrupt: the Agent Inbox view shows its title, the artifact as
    # editable fields (the gate allows edit-accept), a response box and the buttons the gate's actions allow.
    await expect(page.get_by_text("Approve expense report EXP-1042").first).to_be_visible()
    await expect(page.get_by_text("Currency", exact=True)).to_be_visible()
    await expect(page.get_by_text("Respond to assistant")).to_be_visible()  # refine: Agent Inbox's "response"
    await expect(page.get_by_role("button", name="Ignore")).to_be_visible()
    accept = page.get_by_role("button", name="Accept", exact=True)
    await expect(accept).to_be_visible()
    await screenshot(page, "interrupt")

    async with httpx.AsyncClient(base_url=site, headers=auth("admin"), timeout=10) as api:
        thread_id = thread_of(page)
        await run_of_thread(api, thread_id, "waiting-approval")
        await accept.click()
        await expect(page.get_by_text("Response submitted successfully.")).to_be_visible()
        await expect(accept).to_have_count(0)
        run = await run_of_thread(api, thread_id, "completed")
    await screenshot(page, "accepted")
    review = run["nodeStates"]["review"]["outputs"]
    assert (review["action"], review["approved"], review["decidedBy"]) == ("accept", True, "alice")
    assert run["nodeStates"]["pay"]["status"] == "completed" and run["nodeStates"]["revise"]["status"] == "skipped"
    assert run["variables"]["messages"][0]["content"] == "Please file my offsite expenses."


def quorum_workflow() -> dict[str, Any]:
    """The demo release gate, for two approvers (alice, the admin key, and bob) who must both accept."""
    doc: dict[str, Any] = json.loads((ROOT / "bridge" / "demo" / "demo-governed-release.json").read_text())
    doc["id"] = QUORUM
    [gate] = [n for n in doc["nodes"] if n["typeId"] == "core.approvalGate"]
    gate["config"] |= {"requiredApprovals": 2, "approversList": ["alice", "bob"]}
    return doc


@pytest.mark.browser
async def test_agent_chat_ui_two_people_accept_a_quorum_approval(
    engine: Engine, site: str, page: Page, tmp_path: Path
) -> None:
    engine.add_workflow(load_workflow(quorum_workflow()))
    await connect(page, site, workflow=QUORUM)
    await page.get_by_placeholder("Type your message...").fill("Ship the build.")
    await page.get_by_role("button", name="Send").click()
    await expect(page.get_by_text("Promote build 2026.11.21-3 to production").first).to_be_visible()
    # The gate has no artifact data: the view shows its title and description, no empty "Artifact" field.
    await expect(page.get_by_text(re.compile(r"^\s*Artifact\b"))).to_have_count(0)
    await page.get_by_role("button", name="Accept", exact=True).click()
    await expect(page.get_by_text("Response submitted successfully.")).to_be_visible()

    async with httpx.AsyncClient(base_url=site, headers=auth("admin"), timeout=10) as api:
        thread_id = thread_of(page)
        # One vote of two: the interrupt stays open, and the app shows it again.
        run = await run_of_thread(api, thread_id, "waiting-approval")
        detail = (await api.get(f"/v1/runs/{run['runId']}/interrupts/release-gate")).json()
        assert detail["status"] == "pending" and (detail["votes"]["accept"], detail["votes"]["required"]) == (1, 2)
        await expect(page.get_by_role("button", name="Accept", exact=True)).to_be_visible()
        await screenshot(page, "one-vote")

        # Bob finds the same thread in the app's thread history (its threads of this assistant, searched
        # by metadata graph_id), opens it in his own browser, with his own key, and accepts.
        async with browser_page(tmp_path / "bob-profile", "test_agent_chat_ui_quorum_bob") as bob:
            await connect(bob, site, "bob", workflow=QUORUM)
            await bob.goto(f"{bob.url}&chatHistoryOpen=true")
            await expect(bob.get_by_text("Thread History")).to_be_visible()
            await bob.get_by_role("button", name="Ship the build.").click()
            await expect(bob).to_have_url(re.compile(f"threadId={thread_id}"))
            await expect(bob.get_by_text("Promote build 2026.11.21-3 to production").first).to_be_visible()
            await bob.get_by_role("button", name="Accept", exact=True).click()
            await expect(bob.get_by_text("Response submitted successfully.")).to_be_visible()
            done = await run_of_thread(api, thread_id, "completed")
            await screenshot(bob, "bob-accepted")
    assert done["runId"] == run["runId"]
    gate = done["nodeStates"]["release-gate"]["outputs"]
    assert (gate["approved"], gate["action"], gate["quorum"]) == (True, "accept", "quorum:2-of-2")
    assert [(v["voter"], v["action"]) for v in gate["votes"]] == [("alice", "accept"), ("bob", "accept")]
    assert done["nodeStates"]["deploy"]["status"] == "completed"
