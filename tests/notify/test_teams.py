"""Teams: an Adaptive Card posted to a Workflows webhook (a loopback receiver), with one button to the link."""

from __future__ import annotations

from pathlib import Path

import pytest

from openwop_bridge.notify.notice import Notice
from tests.notify.host import gate, notify_host

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store


async def test_the_card_names_the_request_and_opens_its_link(tmp_path: Path) -> None:
    routes = [{"notify": ["teams:ops"]}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense", timeoutMs=3_600_000)]) as host:
        _, record = await host.start_gate()
        await host.until(lambda: len(host.teams.bodies) == 1, "one card")
        (message,) = host.teams.bodies
        assert message["type"] == "message"
        (attachment,) = message["attachments"]
        assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
        card = attachment["content"]
        assert card["type"] == "AdaptiveCard" and card["version"] == "1.4"
        assert all(b["type"] == "RichTextBlock" for b in card["body"])
        texts = [b["inlines"][0]["text"] for b in card["body"] if len(b["inlines"]) == 1]
        assert texts == ["[Approval] Approve expense report EXP-1042", "Team offsite, 3 nights, 4 people."]
        facts = {b["inlines"][0]["text"]: b["inlines"][1]["text"] for b in card["body"] if len(b["inlines"]) == 2}
        assert facts["Workflow: "] == "expense" and facts["Answer by: "].endswith("UTC")
        (action,) = card["actions"]
        assert action["type"] == "Action.OpenUrl" and action["url"].startswith(f"{host.url}/v1/interrupts/")
        page = await host.client.get(action["url"], headers={"Accept": "application/json"})
        assert page.status_code == 200 and page.json()["interruptId"] == record.interrupt_id
        current = await host.engine.interrupt_record(record.interrupt_id)
        assert current is not None and current.open, "opening the card's link (a link preview) answers nothing"


async def test_receiver_statuses_decide_retry_or_dead(tmp_path: Path) -> None:
    async with notify_host(tmp_path, routes=[], workflows=[gate("expense")]) as host:
        run_id, record = await host.start_gate()
        teams = host.setup.channels.get("teams")
        assert teams is not None
        notice = Notice(
            "ntc_t", "teams", "default", run_id, record.interrupt_id, "teams:ops",
            {"address": "ops", "person": None, "purpose": "notice"}, 1, 0,
        )  # fmt: skip
        for status, kind in ((202, "delivered"), (503, "retry"), (429, "retry"), (400, "dead"), (302, "dead")):
            host.teams.status = status
            outcome = await teams.deliver(notice)
            assert outcome.kind == kind, (status, outcome)


def _rendered(element: object, container: str = "") -> list[tuple[str, str]]:
    """``(element type, string)`` for every string a card shows, with the type of the element holding it."""
    if isinstance(element, list):
        return [pair for e in element for pair in _rendered(e, container)]
    if not isinstance(element, dict):
        return []
    kind = str(element.get("type", container))
    out = [(kind, v) for k, v in element.items() if k in ("text", "title", "value") and isinstance(v, str)]
    return out + [pair for k, v in element.items() if isinstance(v, (list, dict)) for pair in _rendered(v, kind)]


async def test_markdown_in_a_request_is_shown_as_text_never_as_a_link(tmp_path: Path) -> None:
    phish = "[Open the request and approve](https://evil.example/phish) **now**"
    wf = gate("expense", title=f"Pay {phish}", description=phish)
    async with notify_host(tmp_path, routes=[{"notify": ["teams:ops"]}], workflows=[wf]) as host:
        await host.start_gate()
        await host.until(lambda: len(host.teams.bodies) == 1, "one card")
        card = host.teams.bodies[0]["attachments"][0]["content"]
        shown = _rendered(card["body"])
        hostile = [(kind, text) for kind, text in shown if "evil.example" in text]
        assert [text for _, text in hostile] == [f"[Approval] Pay {phish}", phish], "shown whole, as written"
        # Only a TextRun shows text without reading markdown in it (a TextBlock or a fact would make a link).
        assert {kind for kind, _ in hostile} == {"TextRun"}
