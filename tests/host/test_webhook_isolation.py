"""One tenant's receivers cannot slow or stop another tenant's deliveries: a tenant's deliveries in flight are
bounded (the rest wait their turn, attempts uncounted), an exchange ends by one deadline however slowly the
receiver drips its answer, and a tenant's endpoint challenges in flight are bounded (``429 rate_limited``).

Hostile receivers are local servers (:mod:`tests.host.hostile`); nothing here asserts a speed, only that
tenant-a's delivery arrives within a bounded wait while tenant-b's receivers hang.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

import httpx

from openwop_bridge import Engine
from openwop_bridge.core.notices import RetryPolicy
from openwop_bridge.notify.webhook.transport import ENDPOINT_SLOTS, TENANT_SLOTS, VERIFY_SLOTS
from openwop_bridge.runtime.config import EngineConfig
from tests.conftest import auth
from tests.host.hostile import hostile
from tests.host.test_v2_openapi_bodies import _document
from tests.host.test_webhooks import LOOPBACK, SECRET, register
from tests.host.test_webhooks_standard import OLD as WHSEC
from tests.host.v2_scenario import V2, suspended
from tests.host.webhook_receiver import bridge, receiver

OTHER = {**auth("other"), **V2}


def patient_config() -> EngineConfig:
    """Attempts that may take 30 s: a hung receiver holds its connection that long."""
    return EngineConfig(webhook_retry=RetryPolicy(base_ms=20, max_attempts=3, max_ms=60, timeout_ms=30_000))


async def test_a_tenants_hung_endpoints_do_not_hold_up_another_tenants_deliveries(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(patient_config())
    async with contextlib.AsyncExitStack() as stack:
        hung = [await stack.enter_async_context(hostile("hang")) for _ in range(6)]
        rec = await stack.enter_async_context(receiver())
        http = await stack.enter_async_context(bridge(engine, LOOPBACK))
        for i in range(60):
            url = f"http://127.0.0.1:{hung[i % len(hung)].port}/b{i}"
            body = {"url": url, "events": ["run.started", "interrupt.requested"], "secret": SECRET}
            assert (await http.post("/webhooks", json=body, headers=OTHER)).status_code == 201
        for _ in range(3):  # 360 deliveries for tenant-b, every one to a receiver that never answers
            assert (await http.post("/runs", json={"workflowId": "conformance-approval"}, headers=OTHER)).is_success
        await rec.wait(lambda: sum(h.open for h in hung) >= TENANT_SLOTS)
        await asyncio.sleep(0.5)
        assert (await register(http, f"{rec.url}/a", ["run.started"], secret=SECRET)).status_code == 201
        await suspended(http)
        await rec.wait(lambda: len(rec.at("/a")) == 1)
        # tenant-b holds its share, no more, and its waiting deliveries are not given up
        assert sum(h.open for h in hung) <= TENANT_SLOTS and max(h.open for h in hung) <= ENDPOINT_SLOTS
        assert engine.notify.counts[("webhook", "dead")] == 0


async def test_deliveries_waiting_for_a_tenants_slot_are_not_claimed_and_handed_back(make_engine) -> None:  # type: ignore[no-untyped-def]
    """While a tenant's receivers hang, its other deliveries wait for a slot without a store write each: none is
    claimed only to be given back (each hand-back is a write, and they came about once a second per delivery)."""
    engine: Engine = make_engine(patient_config())
    released: list[str] = []
    give_back = engine.store.outbox_release

    async def counted(notice_ids: Sequence[str], owner: str, next_attempt_ms: int) -> int:
        released.extend(notice_ids)
        return await give_back(notice_ids, owner, next_attempt_ms)

    engine.store.outbox_release = counted  # type: ignore[method-assign]
    async with contextlib.AsyncExitStack() as stack:
        hung = [await stack.enter_async_context(hostile("hang")) for _ in range(6)]
        rec = await stack.enter_async_context(receiver())
        http = await stack.enter_async_context(bridge(engine, LOOPBACK))
        for i in range(30):
            url = f"http://127.0.0.1:{hung[i % len(hung)].port}/b{i}"
            body = {"url": url, "events": ["run.started", "interrupt.requested"], "secret": SECRET}
            assert (await http.post("/webhooks", json=body, headers=OTHER)).status_code == 201
        for _ in range(2):  # 120 deliveries for tenant-b, every one to a receiver that never answers
            assert (await http.post("/runs", json={"workflowId": "conformance-approval"}, headers=OTHER)).is_success
        await rec.wait(lambda: sum(h.open for h in hung) >= TENANT_SLOTS)
        assert (await register(http, f"{rec.url}/a", ["run.started"], secret=SECRET)).status_code == 201
        await suspended(http)
        await rec.wait(lambda: len(rec.at("/a")) == 1)
        assert sum(h.open for h in hung) <= TENANT_SLOTS and max(h.open for h in hung) <= ENDPOINT_SLOTS
        assert released == [], f"{len(released)} deliveries were claimed only to be handed back"


async def test_a_dripping_endpoint_challenge_ends_by_its_deadline_and_challenges_are_bounded(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(patient_config())
    async with hostile("drip", every=1.0) as drip, receiver() as rec, bridge(engine, LOOPBACK) as http:
        body = {
            "url": f"http://127.0.0.1:{drip.port}/echo",
            "events": ["run.started"],
            "secret": WHSEC,
            "signatureAlgorithms": ["v1", "standard-webhooks-1"],
        }

        async def challenge() -> httpx.Response:
            return await http.post("/webhooks", json=body, headers=OTHER, timeout=60)

        registering = [asyncio.create_task(challenge()) for _ in range(100)]
        await rec.wait(lambda: drip.accepted >= min(VERIFY_SLOTS, 4))
        assert (await register(http, f"{rec.url}/a", ["run.started"], secret=SECRET)).status_code == 201
        await suspended(http)
        await rec.wait(lambda: len(rec.at("/a")) == 1)
        async with asyncio.timeout(20):  # the challenge's deadline is 10 s; its answer drips for 130 s
            answers = await asyncio.gather(*registering)
        limited = [r for r in answers if r.status_code == 429]
        assert len(limited) >= 100 - VERIFY_SLOTS and drip.accepted <= VERIFY_SLOTS
        assert {r.json()["error"] for r in limited} == {"rate_limited"}
        doc = await _document(http)  # the 429 is one the v2 document promises, envelope and all
        assert doc.problems("/webhooks", "post", limited[0].json(), "429") == []
        assert all(int(r.headers["retry-after"]) > 0 for r in limited)
        assert {r.json()["error"] for r in answers if r.status_code != 429} == {"webhook_endpoint_unverified"}
