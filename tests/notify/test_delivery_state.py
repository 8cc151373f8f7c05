"""Per-person delivery state in the interrupt's detail and the inbox: recipient ids (never an address),
channel, state, attempts and the last attempt's time; ``undeliverable`` once every first notice died."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge import Engine
from openwop_bridge.notify.worker import Settled
from openwop_bridge.store import open_store
from tests.conftest import auth
from tests.helpers import events
from tests.notify.host import NotifyHost, gate, notify_host

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

ROUTE = {"match": {"workflowId": "expense"}, "notify": ["alice", "email:finance-team@example.com"]}


async def _views(host: NotifyHost, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    detail = await host.client.get(f"/v1/runs/{run_id}/interrupts/review", headers=auth("admin"))
    assert detail.status_code == 200, detail.text
    inbox = await host.client.get("/v1/interrupts", headers=auth("admin"))
    assert inbox.status_code == 200, inbox.text
    (item,) = [i for i in inbox.json()["items"] if i["runId"] == run_id]
    assert "@" not in detail.text and "@" not in inbox.text, "never an address"
    return detail.json(), item


def _states(view: dict[str, Any]) -> dict[tuple[str, str], tuple[str, int]]:
    return {(n["recipient"], n["channel"]): (n["state"], n["attempts"]) for n in view["notifications"]["recipients"]}


async def test_every_notice_dead_under_wait_shows_undeliverable(tmp_path: Path) -> None:
    routes = [{**ROUTE, "onUndeliverable": "wait"}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        host.smtp.rcpt_replies.update(
            dict.fromkeys(("alice@example.com", "finance-team@example.com"), "550 5.1.1 No such user")
        )
        host.slack.unknown_channels.add("U0ALICE")
        run_id, _ = await host.start_gate()
        await host.until(lambda: sum(1 for s in settled if s.status == "dead") == 3, "three dead notices")
        for view in await _views(host, run_id):
            states = _states(view)
            assert states[("alice", "email")] == ("dead", 1) and states[("alice", "slack")] == ("dead", 1)
            ((team, team_state),) = [(r, s) for (r, c), s in states.items() if r.startswith("email:")]
            assert team_state == ("dead", 1) and "finance-team" not in team
            assert view["notifications"]["total"] == 3
            assert all(n["lastAttemptAt"].endswith("Z") for n in view["notifications"]["recipients"])
            assert view["undeliverable"] is True
        v2 = await host.client.get("/interrupts", headers={**auth("admin"), "OpenWOP-Version": "2.0"})
        assert v2.status_code == 200, v2.text
        (item,) = v2.json().get("interrupts", v2.json().get("items"))
        assert item["notifications"]["total"] == 3 and item["undeliverable"] is True and "@" not in v2.text


async def test_delivered_and_waiting_notices_show_their_state(tmp_path: Path) -> None:
    routes = [{**ROUTE, "onUndeliverable": "wait"}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        host.smtp.rcpt_replies["finance-team@example.com"] = "451 4.3.0 Try again later"
        run_id, _ = await host.start_gate()
        await host.until(lambda: len(settled) >= 3, "three attempts")
        for view in await _views(host, run_id):
            states = _states(view)
            assert states[("alice", "email")] == ("delivered", 1) and states[("alice", "slack")] == ("delivered", 1)
            ((team_state),) = [s for (r, c), s in states.items() if r.startswith("email:")]
            assert team_state[0] in ("failed", "queued") and team_state[1] >= 1
            assert "undeliverable" not in view


async def test_a_shared_mailbox_shows_as_a_keyed_id_no_guess_list_reverses(tmp_path: Path) -> None:
    routes = [{**ROUTE, "onUndeliverable": "wait"}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        run_id, record = await host.start_gate()
        await host.until(lambda: len(settled) >= 3, "three notices delivered")
        detail, item = await _views(host, run_id)
        ((team,),) = [(r,) for (r, _) in _states(detail) if r.startswith("email:")]
        assert (team, "email") in _states(item)
        # A reader who guesses the address cannot confirm it: no unkeyed digest of any spelling of it matches.
        guesses = ["finance-team@example.com", "email:finance-team@example.com", "FINANCE-TEAM@example.com"]
        for guess in guesses:
            for digest in (hashlib.sha256, hashlib.sha1, hashlib.md5):
                assert digest(guess.encode()).hexdigest()[: len(team) - 6] != team[6:]
        # The run's events name the same id.
        sent = [e for e in await events(host.engine, run_id, "notification.sent") if "@" not in str(e)]
        assert team in {e["payload"]["recipient"] for e in sent}
        # A second instance on the same PostgreSQL database shows the same id.
        location = host.engine.store_location
        if location.startswith("postgresql"):
            assert team in await _recipients_seen_anew(location, record.interrupt_id)
    # A restart on the same SQLite file shows the same id (SQLite serves one instance at a time).
    if not location.startswith("postgresql"):
        assert team in await _recipients_seen_anew(location, record.interrupt_id)


async def _recipients_seen_anew(location: str, interrupt_id: str) -> set[str]:
    """The recipient ids an interrupt's delivery state shows through a new engine on the database at ``location``."""
    other = Engine(open_store(location))
    await other.store.open()
    try:
        await other.load_signing_keys()
        again = await other.notify.delivery_state([interrupt_id])
    finally:
        await other.store.close()
    return {n["recipient"] for n in again[interrupt_id]["notifications"]["recipients"]}
