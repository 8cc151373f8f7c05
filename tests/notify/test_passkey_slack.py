"""A key-bound gate in Slack: its Approve and Reject buttons open the link page (where the passkey is
asked for) instead of deciding, and a click that tries to decide is refused with nothing recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import envelope
from tests.notify.host import SIGNING_SECRET, gate, notify_host
from tests.notify.receivers import block_action, slack_signed

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

INTERACTIONS = "/notify/slack/interactions"


def _buttons(call: dict[str, Any]) -> list[dict[str, Any]]:
    actions = [b for b in call["blocks"] if b["type"] == "actions"]
    return list(actions[0]["elements"])


async def test_the_buttons_of_a_key_bound_gate_open_the_link_page_and_a_click_decides_nothing(
    tmp_path: Path,
) -> None:
    routes = [{"notify": ["alice"]}]
    async with notify_host(
        tmp_path, routes=routes, workflows=[gate("expense", assurance="key-bound")], with_teams=False
    ) as host:
        _, record = await host.start_gate()
        await host.until(lambda: len(host.slack.of("chat.postMessage")) >= 1, "a Slack post")
        (post,) = host.slack.of("chat.postMessage")
        buttons = _buttons(post)
        assert [b["text"]["text"] for b in buttons] == ["Approve", "Reject", "More answers"]
        # No button carries an answer: each opens the link page, which asks for the passkey.
        assert all(b["url"].startswith(f"{host.url}/v1/interrupts/") for b in buttons)
        assert not [b for b in buttons if b["action_id"].startswith(("accept", "reject"))]
        for button in buttons:
            body, headers = slack_signed(SIGNING_SECRET, block_action("U0ALICE", button["action_id"], ""))
            assert (await host.client.post(INTERACTIONS, content=body, headers=headers)).status_code == 200
        # A forged click that tries to decide is refused by the gate itself.
        body, headers = slack_signed(SIGNING_SECRET, block_action("U0ALICE", "accept", record.interrupt_id))
        envelope(await host.client.post(INTERACTIONS, content=body, headers=headers), 401, "sender_constraint_missing")
        current = await host.engine.interrupt_record(record.interrupt_id)
        assert current is not None and current.open and not current.state.get("votes")
