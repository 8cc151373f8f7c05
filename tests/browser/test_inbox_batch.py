"""The inbox answers several approvals together: tick them, review what each will do, confirm."""

from __future__ import annotations

import httpx
import pytest
from playwright.async_api import Page, expect

from openwop_bridge import Engine, Workflow
from tests.browser import start
from tests.browser.test_web_inbox import rows, sign_in
from tests.helpers import settle


def _gate(engine: Engine, workflow_id: str, title: str, **config: object) -> None:
    wf = Workflow(workflow_id)
    wf.node("gate", type_id="core.approvalGate", config={"title": title, "actions": ["accept", "reject"], **config})
    wf.register(engine)


async def _decided(engine: Engine, run_id: str) -> str | None:
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None
    return None if record.open else str(record.resolution["resumeValue"]["action"]) if record.resolution else None


@pytest.mark.browser
async def test_approve_two_of_three_together_after_reviewing_them(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    for n in (1, 2, 3):
        _gate(engine, f"batch-{n}", f"Refund order {n}")
    run_ids = [await start(api, engine, f"batch-{n}") for n in (1, 2, 3)]
    await sign_in(page, site)
    await expect(rows(page)).to_have_count(3)
    bar = page.locator("#batch-bar")
    await expect(bar).to_be_hidden()
    await page.get_by_label("Select Refund order 1").check()
    await page.get_by_label("Select Refund order 3").check()
    await expect(bar.locator("#batch-count")).to_have_text("2 selected")
    await bar.get_by_role("button", name="Approve selected").click()
    review = page.get_by_role("group", name="Approve 2 requests?")
    await expect(review).to_be_visible()
    await expect(review.locator("li")).to_have_text(
        ["Approve Refund order 1 — batch-1", "Approve Refund order 3 — batch-3"]
    )
    await review.get_by_role("button", name="Approve all").click()
    await expect(bar.get_by_role("status")).to_have_text("Approved 2 requests.")
    await expect(rows(page)).to_have_count(1)
    assert [await _decided(engine, r) for r in run_ids] == ["accept", None, "accept"]
    for run_id in (run_ids[0], run_ids[2]):
        assert (await settle(engine, run_id)).status == "completed"


@pytest.mark.browser
async def test_a_refused_item_changes_nothing_and_says_which(
    page: Page, site: str, api: httpx.AsyncClient, engine: Engine
) -> None:
    _gate(engine, "batch-open", "Pay supplier")
    _gate(engine, "batch-listed", "Pay bonus", approversList=["carol"])
    run_ids = [await start(api, engine, w) for w in ("batch-open", "batch-listed")]
    await sign_in(page, site)  # as bob, who is not among the bonus's approvers
    await expect(rows(page)).to_have_count(2)
    await page.get_by_label("Select Pay supplier").check()
    await page.get_by_label("Select Pay bonus").check()
    await page.get_by_role("button", name="Reject selected").click()
    await page.get_by_role("group", name="Reject 2 requests?").get_by_role("button", name="Reject all").click()
    result = page.locator("#batch-result")
    await expect(result).to_contain_text("Nothing was changed: “Pay bonus” was refused")
    await expect(result).to_contain_text("not among this gate's approvers")
    assert [await _decided(engine, r) for r in run_ids] == [None, None]
    await expect(rows(page)).to_have_count(2)
