"""Passkey-confirmed decisions in headless Chromium with the DevTools virtual authenticator.

The inbox registers a passkey (WebAuthn registration verified by py_webauthn) and approves a
key-bound gate with it; the signed-link page confirms its subject's decision the same way. The
pages run on ``localhost`` (a relying party id must be a host name, and localhost is a secure context).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from playwright.async_api import CDPSession, Page, expect

from openwop_bridge import Engine, Workflow
from tests.browser import node_outputs, said, start, ui_server
from tests.conftest import KEYS, TOKENS, auth
from tests.helpers import settle


def key_bound_workflow(engine: Engine) -> None:
    wf = Workflow("kb-pay")
    wf.node(
        "gate",
        type_id="core.approvalGate",
        config={"title": "Pay the invoice?", "assurance": "key-bound", "actions": ["accept", "reject"]},
    )
    wf.register(engine)


@pytest.fixture
async def site(engine: Engine) -> AsyncIterator[str]:
    key_bound_workflow(engine)
    async with ui_server(engine) as url:
        yield url.replace("://127.0.0.1:", "://localhost:")


async def authenticator(page: Page) -> tuple[CDPSession, str]:
    """A virtual platform authenticator (CTAP2, resident keys, user verification) in this page's browser."""
    cdp = await page.context.new_cdp_session(page)
    await cdp.send("WebAuthn.enable")
    added: dict[str, Any] = await cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    return cdp, str(added["authenticatorId"])


async def credentials(cdp: CDPSession, authenticator_id: str) -> list[dict[str, Any]]:
    found: dict[str, Any] = await cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator_id})
    return list(found["credentials"])


async def sign_in_and_register(page: Page, site: str, who: str = "bob") -> tuple[CDPSession, str]:
    cdp, authenticator_id = await authenticator(page)
    await page.goto(f"{site}/ui/")
    await page.get_by_label("API key").fill(TOKENS[who])
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#whoami")).to_contain_text("Signed in as")
    await page.get_by_role("button", name="Add a passkey").click()
    await expect(page.locator("#passkey-status")).to_have_text(
        "Passkey added: you can now confirm decisions that need it."
    )
    assert len(await credentials(cdp, authenticator_id)) == 1
    return cdp, authenticator_id


@pytest.mark.browser
async def test_the_inbox_registers_a_passkey_and_approves_a_key_bound_gate(
    page: Page, api: httpx.AsyncClient, engine: Engine, site: str
) -> None:
    run_id = await start(api, engine, "kb-pay")
    await sign_in_and_register(page, site)
    listed = (await api.get("/ui/api/passkeys", headers=auth("bob"))).json()["passkeys"]
    assert len(listed) == 1

    await page.locator("#inbox-rows").get_by_role("button", name="Pay the invoice?").click()
    detail = page.locator("#detail")
    await expect(detail.locator("#passkey-needed")).to_contain_text("confirmed with your passkey")
    await detail.get_by_label("Accept", exact=True).check()
    await detail.get_by_role("button", name="Submit decision").click()
    await expect(said(detail, "Decide")).to_have_text("Decision recorded: Accept.")
    out = await node_outputs(engine, run_id, "gate")
    assert out["action"] == "accept" and out["decidedBy"] == "bob"
    audit = [a for a in await engine.audit(run_id) if a["action"] == "approval.vote.accept"]
    assert [a["details"]["assurance"] for a in audit] == ["key-bound"]


@pytest.mark.browser
async def test_the_inbox_without_a_passkey_is_refused_and_the_gate_stays_open(
    page: Page, api: httpx.AsyncClient, engine: Engine, site: str
) -> None:
    run_id = await start(api, engine, "kb-pay")
    await authenticator(page)
    await page.goto(f"{site}/ui/")
    await page.get_by_label("API key").fill(TOKENS["bob"])
    await page.get_by_role("button", name="Sign in").click()
    await page.locator("#inbox-rows").get_by_role("button", name="Pay the invoice?").click()
    detail = page.locator("#detail")
    await detail.get_by_label("Accept", exact=True).check()
    await detail.get_by_role("button", name="Submit decision").click()
    await expect(said(detail, "Decide", "alert")).to_contain_text("has no passkey")
    view = (await api.get(f"/v1/runs/{run_id}/interrupts/gate", headers=auth("admin"))).json()
    assert view["status"] == "pending"


@pytest.mark.browser
async def test_the_link_page_confirms_its_subjects_decision_with_a_passkey(
    page: Page, api: httpx.AsyncClient, engine: Engine, site: str
) -> None:
    run_id = await start(api, engine, "kb-pay")
    await sign_in_and_register(page, site)
    minted = await api.post(
        f"/v1/runs/{run_id}/interrupts/gate/links", json={"intent": "resolve", "subject": "bob"}, headers=auth("admin")
    )
    assert minted.status_code == 201, minted.text
    await page.goto(minted.json()["url"])
    main = page.locator("main")
    await expect(main).to_contain_text("confirmed with your passkey")
    await main.get_by_label("Reject", exact=True).check()
    await main.get_by_role("button", name="Submit decision").click()
    await expect(said(main, "Decide")).to_have_text("Decision recorded: Reject.")
    await settle(engine, run_id)
    record = await engine.interrupt_at(run_id, "gate", KEYS["admin"].principal)
    assert record.resolution is not None and record.resolution["assurance"] == "key-bound"
    assert record.resolution["resolvedBy"] == "bob"


@pytest.mark.browser
async def test_assertions_chromium_made_for_one_decision_confirm_no_other(
    page: Page, api: httpx.AsyncClient, engine: Engine, site: str
) -> None:
    run_a = await start(api, engine, "kb-pay")
    run_b = await start(api, engine, "kb-pay")
    await sign_in_and_register(page, site)
    # The page's own module asks the virtual authenticator for an assertion over one decision,
    # then the answer is sent with another value, to another interrupt, or a second time.
    outcome = await page.evaluate(
        """async ([key, runA, runB]) => {
          const { confirmation } = await import("./static/passkeys.js");
          const post = async (run, value, headers) => {
            const r = await fetch(`/v1/runs/${run}/interrupts/gate`, {
              method: "POST",
              headers: { "Content-Type": "application/json", Authorization: `Bearer ${key}`, ...headers },
              body: JSON.stringify({ resumeValue: value }),
            });
            return [r.status, (await r.json()).error || "ok"];
          };
          const accept = { action: "accept" };
          const decision = { runId: runA, nodeId: "gate", resumeValue: accept };
          const proof = () => confirmation("api/passkeys/challenge", decision, { key });
          return {
            usedToReject: await post(runA, { action: "reject" }, await proof()),
            otherInterrupt: await post(runB, accept, await proof()),
            none: await post(runA, accept, {}),
            replayed: await (async () => {
              const once = await proof();
              return [await post(runA, accept, once), await post(runA, accept, once)];
            })(),
          };
        }""",
        [TOKENS["bob"], run_a, run_b],
    )
    refused = [401, "sender_constraint_missing"]
    assert outcome["usedToReject"] == refused
    assert outcome["otherInterrupt"] == refused
    assert outcome["none"] == refused
    # The first use decides; the same assertion again is refused: its challenge is used up.
    assert outcome["replayed"] == [[200, "ok"], refused]
    view_b = (await api.get(f"/v1/runs/{run_b}/interrupts/gate", headers=auth("admin"))).json()
    assert view_b["status"] == "pending"
