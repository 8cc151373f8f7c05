"""Signing in to the inbox through the organisation's OpenID provider, in headless Chromium: the person signs
in at the real provider (npm ``oidc-provider``), sees their name, approves a pending demo approval as
themselves, signs out, and the old cookie is then refused as revoked; signed in so, a delegate answers an
approval for the person who delegated to them."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, expect

from openwop_bridge.spec import load_fixture
from tests.browser import browser_page
from tests.identity.provider import OpenIdProvider
from tests.identity.signin_flow import ACCOUNTS, identity_file, secret_env
from tests.server import ServerProcess, free_port, wait_for_status

pytestmark = [pytest.mark.browser, pytest.mark.node, pytest.mark.slow]

KEY = "ops-key-browser-signin-01"
OPS = {"Authorization": f"Bearer {KEY}"}
ADMIN_KEY = "admin-key-browser-signin-1"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
TITLE = "Approve expense report EXP-1042"


@pytest.fixture(scope="module")
def port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def idp(port: int) -> Iterator[OpenIdProvider]:
    started = OpenIdProvider(redirect_uris=[f"http://127.0.0.1:{port}/ui/auth/callback"], accounts=ACCOUNTS)
    yield started
    started.stop()


@pytest.fixture(scope="module")
def server(idp: OpenIdProvider, port: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("browser-signin")
    workflows = folder / "workflows"
    workflows.mkdir()
    carols = load_fixture("conformance-approval")
    carols["id"] = "carols-gate"
    carols["nodes"][0]["config"].update(title="Sign for the courier", approversList=["carol"])
    (workflows / "carols-gate.json").write_text(json.dumps(carols))
    args = [
        "--identity-config",
        str(identity_file(folder, idp)),
        "--api-key",
        f"ops={KEY}",
        "--api-key",
        f"root={ADMIN_KEY}+admin",
        "--workflows",
        str(workflows),
    ]
    with ServerProcess(folder / "serve.db", args, port=port, env=secret_env()) as started:
        yield started


@pytest.fixture
async def page(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    async with browser_page(tmp_path / "chromium-profile", request.node.name) as opened:
        # The provider's development login pages style themselves with a web font: it is answered empty
        # here, so nothing leaves the loopback network and the page reports no failed load.
        await opened.context.route(
            lambda url: not url.startswith("http://127.0.0.1:"),
            lambda route: route.fulfill(status=200, body="", content_type="text/css"),
        )
        yield opened


async def _sign_in_at_the_provider(page: Page, server: ServerProcess, login: str) -> None:
    await page.goto(f"{server.url}/ui/")
    provider = page.get_by_role("link", name="Sign in with 127.0.0.1")
    await expect(provider).to_be_visible()
    await expect(page.get_by_label("API key")).to_be_visible()  # pasting a key stays available
    await provider.click()
    await page.locator("input[name=login]").fill(login)
    await page.locator("input[name=password]").fill("any password")
    await page.get_by_role("button", name="Sign-in").click()
    await page.get_by_role("button", name="Continue").click()
    await page.wait_for_url(f"{server.url}/ui/")


async def test_sign_in_approve_as_the_person_sign_out(page: Page, server: ServerProcess) -> None:
    idp_login = "alice"
    created = httpx.post(f"{server.url}/v1/runs", json={"workflowId": "demo-expense-approval"}, headers=OPS)
    run_id = created.json()["runId"]
    wait_for_status(server.url, OPS, run_id, ("waiting-approval",))

    await _sign_in_at_the_provider(page, server, idp_login)
    await expect(page.locator("#whoami")).to_have_text(
        f"Signed in as {ACCOUNTS[idp_login]['name']} (alice, tenant default)"
    )
    cookies = {c["name"]: c for c in await page.context.cookies(server.url)}
    session = cookies["owb_session"]
    assert session["httpOnly"] and session["sameSite"] == "Lax" and session["path"] == "/"
    assert "owb_login" not in cookies  # the sign-in in progress is spent

    await page.locator("#inbox-rows").get_by_role("button", name=TITLE, exact=True).first.click()
    detail = page.locator("#detail")
    await expect(detail.get_by_role("heading", level=2)).to_have_text(TITLE)
    await detail.get_by_label("Accept", exact=True).check()
    await detail.get_by_role("button", name="Submit decision").click()
    await expect(detail).to_contain_text("Decision recorded: Accept.")
    await expect(page.locator("#inbox-rows tr[data-interrupt-id]")).to_have_count(0)
    snapshot = wait_for_status(server.url, OPS, run_id, ("completed",))
    assert snapshot["status"] == "completed"
    events = httpx.get(f"{server.url}/v1/runs/{run_id}/events", headers={**OPS, "Accept": "application/json"}).json()
    events = events["events"]
    decided = [e["payload"]["resumeValue"]["decidedBy"] for e in events if e["type"] == "interrupt.resolved"]
    assert decided == ["alice"]

    # A reload keeps the person signed in (the cookie, not the tab's storage).
    await page.reload()
    await expect(page.locator("#whoami")).to_contain_text("Alice Example")

    await page.get_by_role("button", name="Sign out").click()
    await expect(page.locator("#sign-in")).to_be_visible()
    await expect(page.get_by_role("link", name="Sign in with 127.0.0.1")).to_be_visible()

    def revoked() -> bool:
        answer = httpx.get(f"{server.url}/ui/api/me", cookies={"owb_session": session["value"]})
        return answer.status_code == 401 and answer.json()["error"] == "credential_revoked"

    for _ in range(50):
        if revoked():
            break
        await page.wait_for_timeout(100)
    assert revoked()
    await page.reload()
    await expect(page.locator("#sign-in")).to_be_visible()


async def test_the_pasted_key_still_signs_in_beside_the_provider(page: Page, server: ServerProcess) -> None:
    await page.goto(f"{server.url}/ui/")
    await expect(page.get_by_role("link", name="Sign in with 127.0.0.1")).to_be_visible()
    await page.get_by_label("API key").fill(KEY)
    await page.get_by_role("button", name="Sign in", exact=True).click()
    await expect(page.locator("#whoami")).to_have_text("Signed in as ops (tenant default)")
    assert [c for c in await page.context.cookies(server.url) if c["name"] == "owb_session"] == []


async def test_signed_in_by_session_a_delegate_answers_for_the_delegator(page: Page, server: ServerProcess) -> None:
    until = int(time.time() * 1000) + 3_600_000
    made = httpx.post(
        f"{server.url}/v1/delegations",
        json={"delegator": "carol", "delegate": "alice", "until": until},  # an admin makes it for carol
        headers=ADMIN,
    )
    assert made.status_code == 201, made.text
    created = httpx.post(f"{server.url}/v1/runs", json={"workflowId": "carols-gate"}, headers=ADMIN)
    run_id = created.json()["runId"]
    wait_for_status(server.url, ADMIN, run_id, ("waiting-approval",))

    await _sign_in_at_the_provider(page, server, "alice")
    row = page.locator("#inbox-rows tr[data-interrupt-id]").filter(has_text="Sign for the courier")
    await expect(row.locator(".for-whom")).to_have_text("for carol")
    await row.get_by_role("button", name="Sign for the courier").click()
    detail = page.locator("#detail")
    await expect(detail.get_by_role("group", name="Whose vote is this").get_by_label("For carol")).to_be_checked()
    await detail.get_by_label("Accept", exact=True).check()
    await detail.get_by_role("button", name="Submit decision").click()
    await expect(detail).to_contain_text("Decision recorded for carol: Accept.")
    assert wait_for_status(server.url, ADMIN, run_id, ("completed",))["status"] == "completed"
    gate = httpx.get(f"{server.url}/v1/runs/{run_id}/interrupts/gate", headers=ADMIN).json()
    assert [(v["voter"], v["actingPrincipal"], v["delegation"]) for v in gate["votes"]["votes"]] == [
        ("carol", "alice", made.json()["delegationId"])
    ]
    assert gate["resolution"]["resumeValue"]["decidedBy"] == "carol"
