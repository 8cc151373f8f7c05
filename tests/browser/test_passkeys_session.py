"""A person signed in to the inbox through the OpenID provider (a session cookie, no key) registers a passkey
and approves a key-bound gate with it, in headless Chromium with the DevTools virtual authenticator.

The host and the inbox are on ``localhost`` (a WebAuthn relying party id is a host name); the provider
(npm ``oidc-provider``) stays on 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect

from openwop_bridge import Workflow
from tests.browser import browser_page
from tests.browser.test_passkeys import authenticator, credentials
from tests.identity.provider import OpenIdProvider
from tests.identity.signin_flow import ACCOUNTS, identity_file, secret_env
from tests.server import ServerProcess, free_port, wait_for_status

pytestmark = [pytest.mark.browser, pytest.mark.node, pytest.mark.slow]

KEY = "ops-key-browser-passkey-1"
OPS = {"Authorization": f"Bearer {KEY}"}


def gate_definition() -> dict[str, Any]:
    wf = Workflow("kb-wire")
    wf.node(
        "gate",
        type_id="core.approvalGate",
        config={"title": "Wire the funds?", "assurance": "key-bound", "actions": ["accept", "reject"]},
    )
    return wf.definition()


@pytest.fixture(scope="module")
def port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def idp(port: int) -> Iterator[OpenIdProvider]:
    started = OpenIdProvider(redirect_uris=[f"http://localhost:{port}/ui/auth/callback"], accounts=ACCOUNTS)
    yield started
    started.stop()


@pytest.fixture(scope="module")
def server(idp: OpenIdProvider, port: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("browser-passkey-session")
    workflows = folder / "workflows"
    workflows.mkdir()
    (workflows / "kb-wire.json").write_text(json.dumps(gate_definition()))
    args = [
        "--identity-config",
        str(identity_file(folder, idp)),
        "--api-key",
        f"ops={KEY}",
        "--workflows",
        str(workflows),
    ]
    with ServerProcess(folder / "serve.db", args, port=port, env=secret_env()) as started:
        yield started


@pytest.fixture
async def page(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    async with browser_page(tmp_path / "chromium-profile", request.node.name) as opened:
        # Nothing leaves the loopback network (the provider's pages ask for a web font).
        await opened.context.route(
            lambda url: not url.startswith(("http://127.0.0.1:", "http://localhost:")),
            lambda route: route.fulfill(status=200, body="", content_type="text/css"),
        )
        yield opened


async def test_a_signed_in_person_registers_a_passkey_and_confirms_a_key_bound_decision(
    page: Page, server: ServerProcess
) -> None:
    site = server.url.replace("://127.0.0.1:", "://localhost:")
    created = httpx.post(f"{server.url}/v1/runs", json={"workflowId": "kb-wire"}, headers=OPS)
    assert created.status_code == 201, created.text
    run_id = created.json()["runId"]
    wait_for_status(server.url, OPS, run_id, ("waiting-approval",))
    cdp, authenticator_id = await authenticator(page)

    await page.goto(f"{site}/ui/")
    await page.get_by_role("link", name="Sign in with 127.0.0.1").click()
    await page.locator("input[name=login]").fill("alice")
    await page.locator("input[name=password]").fill("any password")
    await page.get_by_role("button", name="Sign-in").click()
    await page.get_by_role("button", name="Continue").click()
    await page.wait_for_url(f"{site}/ui/")
    await expect(page.locator("#whoami")).to_contain_text(ACCOUNTS["alice"]["name"])

    await page.get_by_role("button", name="Add a passkey").click()
    await expect(page.locator("#passkey-status")).to_have_text(
        "Passkey added: you can now confirm decisions that need it."
    )
    assert len(await credentials(cdp, authenticator_id)) == 1

    await page.locator("#inbox-rows").get_by_role("button", name="Wire the funds?").click()
    detail = page.locator("#detail")
    await detail.get_by_label("Accept", exact=True).check()
    await detail.get_by_role("button", name="Submit decision").click()
    await expect(detail).to_contain_text("Decision recorded: Accept.")
    wait_for_status(server.url, OPS, run_id, ("completed",))
    events = httpx.get(f"{server.url}/v1/runs/{run_id}/events", headers={**OPS, "Accept": "application/json"}).json()
    resolved = [e["payload"] for e in events["events"] if e["type"] == "interrupt.resolved"]
    assert [p["resumeValue"]["decidedBy"] for p in resolved] == ["alice"]
    audit = httpx.get(f"{server.url}/v1/runs/{run_id}/audit", headers=OPS)
    assert audit.status_code == 200, audit.text
    votes = [a for a in audit.json()["entries"] if a["action"] == "approval.vote.accept"]
    assert [(a["principal"], a["details"]["assurance"]) for a in votes] == [("alice", "key-bound")]
