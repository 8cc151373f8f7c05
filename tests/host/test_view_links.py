"""Links in views are reused, not minted on every read.

The interrupt detail, the snapshot and the inbox hand a reader the same link for one
interrupt and intent while it is fresh; a new one is issued only as time moves on, so
the links alive at once for one (interrupt, reader, intent) stay few, and each one
handed out is still valid for most of the link lifetime.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openwop_bridge import Engine, SqliteStore
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.core.clock import SystemClock, parse_iso_ms
from openwop_bridge.host.app import create_app
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.runtime.links import LINK_WINDOWS
from tests.conftest import KEYS, auth, fixture_workflows
from tests.helpers import settle

TTL_MS = 30 * 60 * 1000


class SteppedClock(SystemClock):
    """The system clock moved forward by ``offset_ms`` (a test sets it)."""

    def __init__(self) -> None:
        self.offset_ms = 0

    def now_ms(self) -> int:
        return super().now_ms() + self.offset_ms


@pytest.fixture
async def stepped(tmp_path: Path) -> AsyncIterator[tuple[Engine, SteppedClock, httpx.AsyncClient]]:
    clock = SteppedClock()
    engine = Engine(
        SqliteStore(tmp_path / "links.db"),
        workflows=fixture_workflows(),
        clock=clock,
        config=EngineConfig(token_ttl_ms=TTL_MS),
    )
    await engine.start()
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test") as client:
            yield engine, clock, client
    finally:
        await engine.stop()


def _expiry(token: str) -> int:
    head = token.rsplit("/", 1)[-1].split(".")[0]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    return parse_iso_ms(str(claims["expiresAt"]))


async def _waiting(client: httpx.AsyncClient, engine: Engine, workflow: str = "conformance-approval") -> str:
    r = await client.post("/v1/runs", json={"workflowId": workflow}, headers=auth("admin"))
    assert r.status_code == 201, r.text
    await settle(engine, r.json()["runId"])
    return str(r.json()["runId"])


async def test_repeated_reads_hand_out_one_link(stepped: tuple[Engine, SteppedClock, httpx.AsyncClient]) -> None:
    engine, _, client = stepped
    run_id = await _waiting(client, engine)
    before = await engine.store.read_events(run_id)
    detail, snapshot, inbox = set(), set(), set()
    for _ in range(40):
        view = (await client.get(f"/v1/runs/{run_id}/interrupts/gate", headers=auth("bob"))).json()
        detail.add(view["interruptToken"])
        snapshot.add((await client.get(f"/v1/runs/{run_id}", headers=auth("bob"))).json()["interrupt"]["callbackUrl"])
        rows = (await client.get("/v1/interrupts", headers=auth("bob"))).json()["items"]
        inbox.add(next(r["inspectUrl"] for r in rows if r["runId"] == run_id))
    assert (len(detail), len(snapshot), len(inbox)) == (1, 1, 1)
    assert await engine.store.read_events(run_id) == before  # reading records nothing


async def test_links_alive_at_once_stay_few_and_each_is_fresh(
    stepped: tuple[Engine, SteppedClock, httpx.AsyncClient],
) -> None:
    engine, clock, client = stepped
    run_id = await _waiting(client, engine)
    handed: dict[str, int] = {}  # token -> its expiry
    for minute in range(240):  # a read a minute for four hours
        clock.offset_ms = minute * 60_000
        now = clock.now_ms()
        token = (await client.get(f"/v1/runs/{run_id}/interrupts/gate", headers=auth("bob"))).json()["interruptToken"]
        handed[token] = _expiry(token)
        assert handed[token] - now > TTL_MS - TTL_MS // LINK_WINDOWS  # valid for most of its lifetime
        alive = [t for t, expires in handed.items() if expires > now]
        assert len(alive) <= LINK_WINDOWS + 1
        claims, record = await engine.verify_token(token)
        assert record.open and claims.interrupt_id == record.interrupt_id
    assert len(handed) <= 240 * 60_000 // (TTL_MS // LINK_WINDOWS) + 1  # one per window, not one per read
