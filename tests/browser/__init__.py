"""Headless Chromium for the web tests: Debian's ``chromium`` driven by Playwright.

Playwright's own browser downloads are not used; the tests need the system
package (``apt-get install chromium``, which ``.ci/run`` does) and fail, never
skip, when it is missing. Each test gets a fresh profile directory, the flags
that keep Chromium off the network, and a screenshot in
``artifacts/screenshots/<test-name>.png`` when it ends (also when it fails).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Locator, Page, async_playwright, expect

from openwop_bridge import Engine
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.host.app import create_app
from openwop_bridge.host.cli import demo_workflows
from openwop_bridge.host.web import link_page, web_routes
from tests.conftest import KEYS, auth
from tests.helpers import settle
from tests.server import uvicorn_server

CHROMIUM = Path(os.environ.get("BRIDGE_TEST_CHROMIUM", "/usr/bin/chromium"))
FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"

# Live updates travel through real sockets on a 2-core machine: give them a moment.
expect.set_options(timeout=10_000)

# Chromium reports every 4xx/5xx answer to fetch() on the console; the pages show
# those to the person, so they are expected. A stylesheet answered by an error envelope
# (JSON, which nosniff keeps from being applied) is the same 4xx told twice. Anything else
# on the console is a bug.
_EXPECTED_CONSOLE = re.compile(
    r"^Failed to load resource: the server responded with a status of (4\d\d|5\d\d)"
    r"|^Refused to apply style from '[^']+' because its MIME type \('application/json'\) is not a supported "
    r"stylesheet MIME type"
)


def require_chromium() -> Path:
    """The Chromium binary, or fail the test with how to install it."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"the browser tests need Debian's Chromium at {CHROMIUM}, which is missing: "
            "install it with `apt-get install chromium` (.ci/run does) "
            "or point BRIDGE_TEST_CHROMIUM at a Chromium binary",
            pytrace=False,
        )
    return CHROMIUM


def screenshot_path(name: str) -> Path:
    """Where the screenshot called ``name`` goes (a safe file name)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS / (re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") + ".png")


def current_test() -> str:
    """The name of the running test (``test_x[param]``), from pytest's environment."""
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    return current.rsplit("::", 1)[-1].split(" ", 1)[0] or "browser"


async def screenshot(page: Page, step: str | None = None) -> Path:
    """Write a full-page screenshot artifact, ``<test-name>[-<step>].png``, and return its path."""
    path = screenshot_path(current_test() + (f"-{step}" if step else ""))
    await page.screenshot(path=str(path), full_page=True)
    return path


@contextlib.asynccontextmanager
async def browser_page(profile: Path, name: str) -> AsyncIterator[Page]:
    """A page in a fresh headless Chromium; on exit, a screenshot and a check that
    no script error or unexpected console error happened."""
    binary = require_chromium()
    problems: list[str] = []
    async with async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(binary),
            headless=True,
            args=list(FLAGS),
            viewport={"width": 1280, "height": 900},
            locale="en-GB",
            timezone_id="UTC",
        )
        try:
            page = context.pages[0] if context.pages else await context.new_page()
            page.set_default_timeout(10_000)
            page.on("pageerror", lambda exc: problems.append(f"script error: {exc}"))
            page.on(
                "console",
                lambda msg: (
                    problems.append(f"console {msg.type}: {msg.text}")
                    if msg.type == "error" and not _EXPECTED_CONSOLE.match(msg.text)
                    else None
                ),
            )
            try:
                yield page
            finally:
                with contextlib.suppress(Exception):
                    await page.screenshot(path=str(screenshot_path(name)), full_page=True)
        finally:
            await context.close()
    assert not problems, "the page reported problems:\n" + "\n".join(problems)


def require_built(artifact: Path, what: str, build: str) -> None:
    """Fail (never skip) when ``artifact``, the build of ``what``, is missing; ``build`` says how to make it."""
    if not artifact.is_file():
        pytest.fail(
            f"{what} is not built ({artifact} is missing): build it with `{build}` (scripts/test does)", pytrace=False
        )


@contextlib.asynccontextmanager
async def demo_server(engine: Engine, extra_routes: list[Any], **options: Any) -> AsyncIterator[str]:
    """The host with the demo workflows and ``extra_routes`` (``options`` go to ``create_app``) on real
    uvicorn; yields its URL."""
    for workflow in demo_workflows():
        engine.add_workflow(workflow)
    app = create_app(
        engine, KeyRing(KEYS.values()), extra_routes=extra_routes, manage_engine=False, keepalive_s=0.5, **options
    )
    async with uvicorn_server(app) as url:
        yield url


@contextlib.asynccontextmanager
async def ui_server(engine: Engine) -> AsyncIterator[str]:
    """The host with the web pages (and the demo workflows) on real uvicorn; yields its URL."""
    async with demo_server(engine, web_routes(), link_page=link_page) as url:
        yield url


async def assert_controls_labelled(scope: Locator) -> None:
    """Every visible form control inside ``scope`` has an accessible name and is reachable by Tab."""
    unlabelled = await scope.evaluate(
        """(root) => {
          const bad = [];
          for (const el of root.querySelectorAll("input, select, textarea, button")) {
            if (!el.getClientRects().length) continue;  // not rendered
            const byLabel = Array.from(el.labels || []).map((l) => l.textContent.trim()).join(" ");
            const byAria = el.getAttribute("aria-label") || "";
            const byRef = (el.getAttribute("aria-labelledby") || "").split(" ").filter(Boolean)
              .map((id) => (document.getElementById(id) || {}).textContent || "").join(" ");
            const byText = el.tagName === "BUTTON" ? el.textContent.trim() : "";
            if (!(byLabel || byAria.trim() || byRef.trim() || byText)) bad.push(el.outerHTML.slice(0, 120));
            if (el.tabIndex < 0) bad.push("not tabbable: " + el.outerHTML.slice(0, 120));
          }
          return bad;
        }"""
    )
    assert unlabelled == [], unlabelled


async def assert_tab_reaches_every_control(page: Page, scope: Locator) -> None:
    """Walking with Tab from the top of the page focuses every enabled control in ``scope``
    (a radio group counts once: Tab enters it, the arrow keys move inside it)."""
    stops: list[str] = await scope.evaluate(
        """(root) => {
          const stops = new Set();
          for (const el of root.querySelectorAll("input, select, textarea, button")) {
            if (el.disabled || !el.getClientRects().length) continue;
            el.dataset.tabStop = el.type === "radio" ? "radio:" + el.name : "id:" + (el.id || el.textContent.trim());
            stops.add(el.dataset.tabStop);
          }
          return [...stops];
        }"""
    )
    assert stops, "nothing to reach"
    await page.evaluate("document.activeElement && document.activeElement.blur()")
    reached: set[str] = set()
    for _ in range(len(stops) + 120):
        await page.keyboard.press("Tab")
        stop = await page.evaluate("document.activeElement ? document.activeElement.dataset.tabStop || '' : ''")
        if stop:
            reached.add(stop)
        if reached >= set(stops):
            return
    raise AssertionError(f"Tab never reached {sorted(set(stops) - reached)}")


async def assert_keyboard_basics(page: Page, scope: Locator) -> None:
    """Every control in ``scope`` is labelled and reachable with Tab."""
    await assert_controls_labelled(scope)
    await assert_tab_reaches_every_control(page, scope)


async def tab_to(page: Page, target: Locator, *, limit: int = 80) -> int:
    """Press Tab until ``target`` has the focus; returns how many presses it took."""
    for presses in range(1, limit + 1):
        await page.keyboard.press("Tab")
        if await target.evaluate("(el) => el === document.activeElement"):
            return presses
    raise AssertionError(f"{target} was not reached with {limit} presses of Tab")


async def start(api: httpx.AsyncClient, engine: Engine, workflow: str, who: str = "admin") -> str:
    """Start a run of ``workflow`` as ``who`` over REST and let it settle; its id."""
    r = await api.post("/v1/runs", json={"workflowId": workflow}, headers=auth(who))
    assert r.status_code == 201, r.text
    run_id: str = r.json()["runId"]
    await settle(engine, run_id)
    return run_id


def said(scope: Locator, form: str, role: str = "status") -> Locator:
    """The success (``status``) or error (``alert``) message of one form inside ``scope``."""
    return scope.get_by_role("form", name=form).get_by_role(role)


async def node_outputs(engine: Engine, run_id: str, node: str) -> Any:
    """The outputs of ``node`` once the run has completed."""
    run = await settle(engine, run_id)
    assert run.status == "completed", run.status
    return run.state["nodes"][node]["outputs"]


async def assert_unknown_key_refused(page: Page) -> Locator:
    """An unknown key typed into the sign-in form is refused as ``unknown API key``; the key field."""
    key = page.get_by_label("API key")
    await key.fill("not-a-key")
    await key.press("Enter")
    await expect(page.locator("#sign-in-error")).to_have_text("unknown API key")
    return key
