"""Separation of duties holds for a Slack click: the run's requester's button decides nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from openwop_bridge.core.auth import Principal
from tests.helpers import envelope, settle
from tests.notify.host import SIGNING_SECRET, notify_host
from tests.notify.receivers import block_action, slack_signed

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

INTERACTIONS = "/notify/slack/interactions"


async def test_the_requesters_click_is_refused_and_anothers_decides(tmp_path: Path) -> None:
    from tests.notify.host import gate

    routes = [{"notify": ["alice", "bob"]}]
    async with notify_host(
        tmp_path, routes=routes, workflows=[gate("expense", separationOfDuties=True)], with_teams=False
    ) as host:
        run = await host.engine.create_run(Principal("alice"), "expense", tenant="default")
        await settle(host.engine, run.run_id)
        (record,) = await host.engine.run_interrupts(run.run_id, open_only=True)
        body, headers = slack_signed(SIGNING_SECRET, block_action("U0ALICE", "accept", record.interrupt_id))
        refused = envelope(await host.client.post(INTERACTIONS, content=body, headers=headers), 403, "forbidden")
        assert "separation of duties" in refused["message"]
        current = await host.engine.interrupt_record(record.interrupt_id)
        assert current is not None and current.open and not current.state.get("votes")
        body, headers = slack_signed(SIGNING_SECRET, block_action("U0BOB", "accept", record.interrupt_id))
        accepted = await host.client.post(INTERACTIONS, content=body, headers=headers)
        assert accepted.status_code == 200, accepted.text
        closed = await host.engine.interrupt_record(record.interrupt_id)
        assert closed is not None and closed.resolution is not None and closed.resolution["resolvedBy"] == "bob"
