"""The outbox worker and bounds wider than one destination (a tenant's, an endpoint's): a notice waits its turn in
the worker rather than being claimed, handed back and claimed again, and a tenant's backlog past what it may hold
in the worker stays in the store, unclaimed, while other tenants' notices go on being delivered."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

from openwop_bridge.core.clock import SystemClock
from openwop_bridge.core.notices import DeliveryOutcome, Notice, NoticeDraft, OutboxLimits, RetryPolicy
from openwop_bridge.notify.worker import TENANT_BACKLOG, OutboxWorker
from openwop_bridge.store.sqlite import SqliteStore


class CountingStore(SqliteStore):
    """The SQLite store, counting the worker's claims and its hand-backs (notices given back unattempted)."""

    claims = 0
    released = 0

    async def outbox_claim(self, *args: Any, **kwargs: Any) -> list[Notice]:
        self.claims += 1
        return await super().outbox_claim(*args, **kwargs)

    async def outbox_release(self, notice_ids: Sequence[str], owner: str, next_attempt_ms: int) -> int:
        self.released += len(notice_ids)
        return await super().outbox_release(notice_ids, owner, next_attempt_ms)


class TenantBound:
    """A channel that may attempt at most ``per_tenant`` notices of one tenant at once, says so (``bounds``), and
    defers any attempt past it, as webhook delivery does; the tenants in ``hang`` never answer."""

    name = "slack"

    def __init__(self, per_tenant: int) -> None:
        self.per_tenant = per_tenant
        self.inside: dict[str, int] = {}
        self.deferred = 0
        self.delivered: list[str] = []
        self.hang: set[str] = set()

    def bounds(self, notice: Notice) -> list[tuple[Hashable, int]]:
        return [(("tenant", notice.tenant), self.per_tenant)]

    async def deliver(self, notice: Notice) -> DeliveryOutcome:
        if self.inside.get(notice.tenant, 0) >= self.per_tenant:
            self.deferred += 1
            return DeliveryOutcome.deferred(1)
        self.inside[notice.tenant] = self.inside.get(notice.tenant, 0) + 1
        try:
            await asyncio.sleep(3600 if notice.tenant in self.hang else 0.002)
        finally:
            self.inside[notice.tenant] -= 1
        self.delivered.append(notice.notice_id)
        return DeliveryOutcome.delivered()


async def _until(predicate, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


async def _store(path: Path) -> CountingStore:
    store = CountingStore(path)
    store.notice_planning.limits = OutboxLimits(per_tenant=10_000, per_recipient=10_000)
    await store.open()
    return store


def _drafts(recipients: int, each: int, prefix: str = "C") -> list[NoticeDraft]:
    return [NoticeDraft("slack", f"slack:{prefix}{r}", {"n": i}) for i in range(each) for r in range(recipients)]


async def test_a_channels_wider_bound_is_waited_for_here_not_handed_back(tmp_path: Path) -> None:
    store = await _store(tmp_path / "bound.db")
    channel = TenantBound(per_tenant=2)
    worker = OutboxWorker(store, SystemClock(), "w", {"slack": channel}, lambda _: RetryPolicy(), per_destination=4)
    try:
        ids = await store.outbox_add("t1", "run_1", _drafts(recipients=5, each=8), 0)
        worker.start()
        await _until(lambda: len(channel.delivered) == len(ids))
        await _until(lambda: worker.busy == 0)  # every outcome recorded
        assert channel.deferred == 0, "an attempt past the channel's bound was started, only to be deferred"
        assert store.released == 0, "notices were claimed only to be handed back"
        assert {s for s, _, _ in (await store.outbox_states(ids)).values()} == {"delivered"}
    finally:
        await worker.stop()
        await store.close()


async def test_a_tenants_backlog_past_its_share_stays_unclaimed(tmp_path: Path) -> None:
    store = await _store(tmp_path / "share.db")
    channel = TenantBound(per_tenant=4)
    channel.hang.add("tb")  # tenant-b's receivers never answer
    worker = OutboxWorker(store, SystemClock(), "w", {"slack": channel}, lambda _: RetryPolicy(timeout_ms=600_000))
    try:
        backlog = await store.outbox_add("tb", "run_b", _drafts(recipients=20, each=12), 0)
        worker.start()
        # Rounds go on (pokes), and another tenant's notices are delivered meanwhile.
        for turn in range(3):
            mine = await store.outbox_add("ta", f"run_a{turn}", _drafts(recipients=1, each=2, prefix="A"), 0)
            worker.poke()
            await _until(lambda mine=mine: set(mine) <= set(channel.delivered))
        while store.claims < 20:
            worker.poke()
            await asyncio.sleep(0.01)
        claimed = [n for n, (_, attempts, _) in (await store.outbox_states(backlog)).items() if attempts > 0]
        assert len(claimed) <= TENANT_BACKLOG, f"{len(claimed)} of tenant-b's notices claimed; it may hold fewer"
        assert store.released == 0
    finally:
        await worker.stop()
        await store.close()


class Refusing:
    """A channel whose recipients in ``failing`` fail every attempt at once (a receiver refusing connections)."""

    name = "slack"

    def __init__(self, failing: set[str]) -> None:
        self.failing = failing
        self.attempts: list[str] = []
        self.delivered: list[str] = []

    async def deliver(self, notice: Notice) -> DeliveryOutcome:
        self.attempts.append(notice.recipient)
        if notice.recipient in self.failing:
            return DeliveryOutcome.retry("connect_error")
        self.delivered.append(notice.notice_id)
        return DeliveryOutcome.delivered()


async def test_a_failed_attempt_keeps_its_slot_a_moment_so_a_failing_receiver_is_paced(tmp_path: Path) -> None:
    """A receiver that fails at once is not tried as fast as the machine can: a failed attempt keeps its
    destination's slot a moment (here for as long as its retry waits), while other destinations go on."""
    store = await _store(tmp_path / "paced.db")
    channel = Refusing({"slack:F"})
    policy = RetryPolicy(base_ms=600_000, max_ms=600_000)
    worker = OutboxWorker(
        store, SystemClock(), "w", {"slack": channel}, lambda _: policy, per_destination=1, failed_pause_ms=600_000
    )
    try:
        await store.outbox_add("t1", "run_1", [NoticeDraft("slack", "slack:F", {"n": i}) for i in range(3)], 0)
        worker.start()
        for turn in range(3):  # rounds go on, and another destination's notices are delivered meanwhile
            mine = await store.outbox_add("t1", f"run_{turn}", _drafts(recipients=1, each=2, prefix="G"), 0)
            worker.poke()
            await _until(lambda mine=mine: set(mine) <= set(channel.delivered))
        assert channel.attempts.count("slack:F") == 1, "the failing receiver was tried again at once"
    finally:
        await worker.stop()
        await store.close()
