"""Digests: one mail per period listing everything waiting on a person, each with its own link."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest

from openwop_bridge.core.auth import Principal
from openwop_bridge.notify.worker import Settled
from tests.notify.host import gate, notify_host
from tests.notify.receivers import mail_parts

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

LINK = re.compile(r"(http://127\.0\.0\.1:\d+/v1/interrupts/\S+)")


async def test_a_digest_lists_each_waiting_request_once_per_period(tmp_path: Path) -> None:
    people = {
        "alice": {"email": "alice@example.com", "digestEveryMs": 1500},
        "bob": {"email": "bob@example.com"},
    }
    routes = [{"notify": ["alice", "bob"]}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], people=people) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        # Open both requests early in one period (periods are aligned to multiples of 1500 ms).
        await asyncio.sleep((1500 - time.time() * 1000 % 1500 + 20) / 1000)
        _, first = await host.start_gate()
        _, second = await host.start_gate()
        await host.until(lambda: any(r == ["alice@example.com"] for r, _ in host.smtp.mails), "alice's digest")
        to_alice = [m for r, m in host.smtp.mails if r == ["alice@example.com"]]
        to_bob = [m for r, m in host.smtp.mails if r == ["bob@example.com"]]
        assert len(to_bob) == 2, "bob takes a mail per request"
        (digest,) = to_alice
        assert digest["Subject"] == "2 requests waiting for you"
        text, html = mail_parts(digest)
        links = LINK.findall(text)
        assert len(links) == 2 and len(set(links)) == 2 and all(link in html for link in links)
        seen = [(await host.client.get(link, headers={"Accept": "application/json"})).json() for link in links]
        assert sorted(s["interruptId"] for s in seen) == sorted([first.interrupt_id, second.interrupt_id])
        assert {s["subject"] for s in seen} == {"alice"}, "each link answers as alice"
        # Both requests planned a digest for the period: the second finds it sent.
        await host.until(lambda: len([s for s in settled if s.notice.payload.get("purpose") == "digest"]) >= 2, "both")
        digests = [s for s in settled if s.notice.payload.get("purpose") == "digest"]
        assert sorted(s.reason for s in digests[:2]) == ["", "digest_sent"]
        # Answered, nothing waits: the next period's digest sends nothing and plans no further one.
        for link in links:
            assert (await host.client.post(link, json={"resumeValue": {"action": "accept"}})).status_code == 200
        await host.until(lambda: any(s.reason == "nothing_waiting" for s in settled), "the next period")
        assert len([m for r, m in host.smtp.mails if r == ["alice@example.com"]]) == 1


async def test_a_digest_finds_a_persons_request_behind_a_backlog_of_others(tmp_path: Path) -> None:
    people = {"alice": {"email": "alice@example.com", "digestEveryMs": 1000}}
    routes = [{"match": {"workflowId": "expense"}, "notify": ["alice"]}]
    workflows = [gate("expense"), gate("backlog", title="Someone else's request")]
    async with notify_host(tmp_path, routes=routes, workflows=workflows, people=people, with_teams=False) as host:
        # 500 older requests wait in the tenant, none of them on alice (the inbox's largest page).
        for _ in range(10):
            await asyncio.gather(*(host.start_gate("backlog") for _ in range(50)))
        _, mine = await host.start_gate()
        await host.until(lambda: len(host.smtp.mails) == 1, "alice's digest", timeout=30)
        ((rcpts, digest),) = host.smtp.mails
        assert rcpts == ["alice@example.com"] and digest["Subject"] == "1 request waiting for you"
        (link,) = LINK.findall(mail_parts(digest)[0])
        seen = (await host.client.get(link, headers={"Accept": "application/json"})).json()
        assert seen["interruptId"] == mine.interrupt_id


async def test_a_digest_leaves_out_a_request_the_person_already_voted_on(tmp_path: Path) -> None:
    people = {
        "alice": {"email": "alice@example.com", "digestEveryMs": 2000},
        "bob": {"email": "bob@example.com"},
    }
    quorum = gate("quorum", requiredApprovals=2, approversList=["alice", "bob"])
    workflows = [quorum, gate("plain", approversList=["alice"])]
    async with notify_host(tmp_path, routes=[], workflows=workflows, people=people, with_teams=False) as host:
        await asyncio.sleep((2000 - time.time() * 1000 % 2000 + 20) / 1000)
        _, voted = await host.start_gate("quorum")
        _, waiting = await host.start_gate("plain")
        alice = Principal(id="alice", tenant="default", scopes=frozenset({"approvals:respond"}))
        result = await host.engine.resolve(alice, {"action": "accept"}, interrupt_id=voted.interrupt_id)
        assert result["status"] == "pending", "the quorum still waits on bob"
        await host.until(lambda: any(r == ["alice@example.com"] for r, _ in host.smtp.mails), "alice's digest")
        (digest,) = [m for r, m in host.smtp.mails if r == ["alice@example.com"]]
        assert digest["Subject"] == "1 request waiting for you"
        (link,) = LINK.findall(mail_parts(digest)[0])
        seen = (await host.client.get(link, headers={"Accept": "application/json"})).json()
        assert seen["interruptId"] == waiting.interrupt_id
