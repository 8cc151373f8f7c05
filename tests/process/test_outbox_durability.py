"""The outbox across processes: ``kill -9`` of a ``serve`` process with webhook deliveries queued and in
flight loses none of them (a restart delivers each, under the id it had), and two ``serve`` processes on
one PostgreSQL database share one outbox (each delivery made, and no attempt made twice)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from openwop_bridge.spec import load_fixture
from tests.host.webhook_receiver import Receiver, receiver
from tests.server import ServerProcess

pytestmark = [pytest.mark.slow]

KEY = "outbox-key-123456"
H = {"Authorization": f"Bearer {KEY}", "OpenWOP-Version": "2.0"}
WAIT_S = 60.0
FLAGS = [
    "--no-demo",
    "--api-key",
    f"alice={KEY}+admin",
    "--webhook-allow-loopback",
    "--webhook-retry-base-ms",
    "50",
    "--webhook-timeout-ms",
    "1500",
    "--lease-ms",
    "2000",
]


@pytest.fixture
def workflows(tmp_path: Path) -> Path:
    folder = tmp_path / "workflows"
    folder.mkdir()
    (folder / "conformance-approval.json").write_text(json.dumps(load_fixture("conformance-approval")))
    return folder


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(headers=H, timeout=WAIT_S) as client:
        yield client


async def subscribe(http: httpx.AsyncClient, server: ServerProcess, url: str) -> None:
    body = {"url": url, "events": ["run.started"], "secret": "a-subscription-secret-0123456789"}
    resp = await http.post(f"{server.url}/webhooks", json=body)
    assert resp.status_code == 201, resp.text


async def start_runs(http: httpx.AsyncClient, servers: list[ServerProcess], count: int) -> set[str]:
    runs = set()
    for i in range(count):
        resp = await http.post(f"{servers[i % len(servers)].url}/runs", json={"workflowId": "conformance-approval"})
        assert resp.status_code == 201, resp.text
        runs.add(resp.json()["runId"])
    return runs


async def test_kill_9_with_deliveries_queued_and_in_flight_loses_none(
    tmp_path: Path, workflows: Path, http: httpx.AsyncClient
) -> None:
    async with receiver() as rec:
        rec.hold.add("/hook")  # every delivery is held in flight until the server dies
        db = tmp_path / "bridge.db"
        server = ServerProcess(db, [*FLAGS, "--workflows", str(workflows)]).start()
        try:
            await subscribe(http, server, f"{rec.url}/hook")
            runs = await start_runs(http, [server], 12)
            await rec.wait(lambda: len(rec.at("/hook")) >= 4, WAIT_S)  # four in flight (one destination's share)
            held = {(r.json()["runId"], r.json()["event"]["eventId"]) for r in rec.at("/hook")}
            server.kill9()
        finally:
            server.stop()
        rec.release()
        before = len(rec.got)
        server = ServerProcess(db, [*FLAGS, "--workflows", str(workflows)]).start()
        try:
            await rec.wait(lambda: len({r.json()["runId"] for r in rec.got[before:]}) == len(runs), WAIT_S)
        finally:
            server.stop()
        after = rec.got[before:]
        assert {r.json()["runId"] for r in after} == runs  # every run's delivery, none lost
        # A delivery held when the server died comes again with the same event (and webhook ids are per notice).
        again = {(r.json()["runId"], r.json()["event"]["eventId"]) for r in after}
        assert held <= again
        attempts = Counter((r.json()["event"]["eventId"], r.headers["openwop-delivery-attempt"]) for r in rec.got)
        assert max(attempts.values()) == 1  # no attempt made twice
        retried = [r for r in after if (r.json()["runId"], r.json()["event"]["eventId"]) in held]
        assert retried and all(int(r.headers["openwop-delivery-attempt"]) >= 2 for r in retried)


@pytest.mark.postgres
async def test_two_instances_drain_one_outbox(
    pg_url: str, workflows: Path, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    async with receiver() as rec:
        servers = [ServerProcess(pg_url, [*FLAGS, "--workflows", str(workflows)]) for _ in range(2)]
        for s in servers:
            s.log = tmp_path / f"serve-{s.port}.log"
            s.start()
        try:
            await subscribe(http, servers[0], f"{rec.url}/hook")
            await asyncio.sleep(3)  # the other instance reads subscriptions every 2 seconds
            runs = await start_runs(http, servers, 30)
            await rec.wait(lambda: {r.json()["runId"] for r in rec.at("/hook")} == runs, WAIT_S)
            await asyncio.sleep(1)  # anything doubled would have arrived by now
        finally:
            for s in servers:
                s.stop()
        got = rec.at("/hook")
        assert {r.json()["runId"] for r in got} == runs
        attempts = Counter((r.json()["event"]["eventId"], r.headers["openwop-delivery-attempt"]) for r in got)
        assert max(attempts.values()) == 1 and len(got) == len(runs)  # each delivered once, no attempt twice


@pytest.mark.postgres
async def test_an_instance_killed_mid_delivery_leaves_its_deliveries_to_the_other(
    pg_url: str, workflows: Path, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    async with receiver() as rec:
        rec.hold.add("/hook")
        a, b = (ServerProcess(pg_url, [*FLAGS, "--workflows", str(workflows)]) for _ in range(2))
        for s in (a, b):
            s.log = tmp_path / f"serve-{s.port}.log"
            s.start()
        try:
            await subscribe(http, a, f"{rec.url}/hook")
            await asyncio.sleep(3)  # the other instance reads subscriptions every 2 seconds
            runs = await start_runs(http, [a, b], 10)
            await rec.wait(lambda: len(rec.at("/hook")) >= 4, WAIT_S)
            a.kill9()
            rec.release()  # what b holds is answered 503 and retried; what a held waits for its lease to run out
            await rec.wait(lambda: len(_delivered(rec)) == len(runs), WAIT_S)
        finally:
            a.stop()
            b.stop()
        assert _delivered(rec) == runs
        attempts = Counter((r.json()["event"]["eventId"], r.headers["openwop-delivery-attempt"]) for r in rec.got)
        assert max(attempts.values()) == 1


def _delivered(rec: Receiver) -> set[str]:
    """Runs whose delivery was answered 200 (requests made after the receiver stopped holding)."""
    return {r.json()["runId"] for r in rec.got if r.answered == 200}
