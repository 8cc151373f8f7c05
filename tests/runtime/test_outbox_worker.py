"""The outbox worker on a real engine: a notice planned with the interrupt it announces is delivered off the
request path, retried with the same id, dead-lettered once its attempts are spent, reported as the run events
``notification.sent``/``notification.failed``; a hung receiver holds only its own destination."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from openwop_bridge import Engine, NodeContext, Workflow, custom, spec
from openwop_bridge.core.notices import DeliveryOutcome, Notice, NoticeDraft, OutboxLimits, RetryPolicy
from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.runtime.config import EngineConfig
from tests.helpers import ADMIN, events, settle


class Recorder:
    """A channel that answers each recipient's attempts from a script (then delivers), and records them."""

    def __init__(self, name: str, script: dict[str, list[DeliveryOutcome]] | None = None) -> None:
        self.name = name
        self.script = script or {}
        self.attempts: list[tuple[str, str, int]] = []
        self.hang: set[str] = set()
        self.done = asyncio.Event()

    async def deliver(self, notice: Notice) -> DeliveryOutcome:
        self.attempts.append((notice.notice_id, notice.recipient, notice.attempt))
        if notice.recipient in self.hang:
            await asyncio.sleep(3600)
        steps = self.script.get(notice.recipient, [])
        outcome = steps.pop(0) if steps else DeliveryOutcome.delivered()
        self.done.set()
        return outcome


def planner(channel: str, recipients: Sequence[str]):
    def plan(
        run: RunRecord, events: Sequence[dict[str, Any]], opened: Sequence[InterruptRecord], now_ms: int
    ) -> list[NoticeDraft]:
        return [
            NoticeDraft(channel, who, {"title": i.payload.get("data", {}).get("title")}, interrupt_id=i.interrupt_id)
            for i in opened
            for who in recipients
        ]

    return plan


def waiting_workflow(engine: Engine) -> None:
    wf = Workflow("waits")

    @wf.node("gate")
    async def gate(ctx: NodeContext) -> dict[str, Any]:
        return {"answer": await ctx.interrupt(custom("pick"))}

    wf.register(engine)


async def _until(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


async def _notice_events(engine: Engine, run_id: str) -> list[dict[str, Any]]:
    return [e for e in await events(engine, run_id) if e["type"].startswith("notification.")]


async def test_a_notice_is_retried_with_its_id_then_delivered_and_reported(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(EngineConfig(notify_retry=RetryPolicy(base_ms=1, max_attempts=4, max_ms=5)))
    channel = Recorder("email", {"alice": [DeliveryOutcome.retry("smtp_421"), DeliveryOutcome.retry("timeout")]})
    engine.notify.add_channel(channel)
    engine.notify.add_planner(planner("email", ["alice"]))
    waiting_workflow(engine)
    async with engine:
        run = await engine.create_run(ADMIN, "waits")
        await settle(engine, run.run_id)
        await _until(lambda: len(channel.attempts) == 3)
        await _until(lambda: engine.notify.counts[("email", "delivered")] == 1)
        ids = {a[0] for a in channel.attempts}
        assert len(ids) == 1 and [a[2] for a in channel.attempts] == [1, 2, 3]
        async with asyncio.timeout(10):
            while not (found := await _notice_events(engine, run.run_id)):
                await asyncio.sleep(0.01)
        [sent] = found
        intr = (await engine.run_interrupts(run.run_id))[0]
        assert sent["type"] == "notification.sent"
        assert spec.validate_event(sent) == []  # the v1 envelope admits it as an extension type (name.name)
        assert sent["payload"] == {
            "noticeId": ids.pop(),
            "channel": "email",
            "recipient": "alice",
            "attempt": 3,
            "interruptId": intr.interrupt_id,
        }


async def test_spent_attempts_make_a_dead_letter_and_a_failed_event(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(EngineConfig(notify_retry=RetryPolicy(base_ms=1, max_attempts=2, max_ms=5)))
    channel = Recorder("email", {"email:bob@example.com": [DeliveryOutcome.retry("smtp_451")] * 5})
    engine.notify.add_channel(channel)
    engine.notify.add_planner(planner("email", ["email:bob@example.com"]))
    waiting_workflow(engine)
    async with engine:
        run = await engine.create_run(ADMIN, "waits")
        await settle(engine, run.run_id)
        await _until(lambda: engine.notify.counts[("email", "dead")] == 1)
        assert [a[2] for a in channel.attempts] == [1, 2]
        async with asyncio.timeout(10):
            while not (found := await _notice_events(engine, run.run_id)):
                await asyncio.sleep(0.01)
        [failed] = found
        assert failed["type"] == "notification.failed"
        assert failed["payload"]["reason"] == "smtp_451" and failed["payload"]["attempt"] == 2
        assert "bob@example.com" not in str(failed)  # an address never reaches the log
        [dead] = await engine.notify.dead_letters("email", "email:bob@example.com", "default", limit=5)
        assert dead.attempts == 2 and dead.reason == "smtp_451"


async def test_a_hung_receiver_holds_only_its_own_destination(make_engine) -> None:  # type: ignore[no-untyped-def]
    config = EngineConfig(notify_retry=RetryPolicy(base_ms=1, max_attempts=3, timeout_ms=60_000))
    config.notify_per_destination = 2
    engine: Engine = make_engine(config)
    channel = Recorder("slack")
    channel.hang.add("slack:CSTUCK")
    engine.notify.add_channel(channel)
    engine.notify.add_planner(planner("slack", ["slack:CSTUCK", "slack:COK"]))
    waiting_workflow(engine)
    async with engine:
        runs = [await engine.create_run(ADMIN, "waits") for _ in range(6)]
        for run in runs:
            await settle(engine, run.run_id)
        # Every notice to the healthy channel arrives while the stuck one holds its two slots.
        await _until(lambda: engine.notify.counts[("slack", "delivered")] == 6)
        stuck = [a for a in channel.attempts if a[1] == "slack:CSTUCK"]
        assert len({a[0] for a in stuck}) == 2 and all(a[2] == 1 for a in stuck)


async def test_a_notice_refused_by_a_cap_is_reported_not_sent(make_engine) -> None:  # type: ignore[no-untyped-def]
    config = EngineConfig(notify_retry=RetryPolicy(base_ms=1, max_attempts=3, timeout_ms=60_000))
    config.outbox_limits = OutboxLimits(per_recipient=1)
    engine: Engine = make_engine(config)
    channel = Recorder("email")
    channel.hang.add("alice")  # the first notice stays queued (in flight), so the second is past the cap
    engine.notify.add_channel(channel)
    engine.notify.add_planner(planner("email", ["alice"]))
    waiting_workflow(engine)
    async with engine:
        first = await engine.create_run(ADMIN, "waits")
        await settle(engine, first.run_id)
        await _until(lambda: len(channel.attempts) == 1)
        second = await engine.create_run(ADMIN, "waits")
        await settle(engine, second.run_id)
        await _until(lambda: engine.notify.counts[("email", "dead")] == 1)
        assert len(channel.attempts) == 1  # the refused notice was never handed to the channel
        async with asyncio.timeout(10):
            while not (found := await _notice_events(engine, second.run_id)):
                await asyncio.sleep(0.01)
        assert [(e["type"], e["payload"]["reason"]) for e in found] == [("notification.failed", "queue_full")]
        [dead] = await engine.notify.dead_letters("email", "alice", "default", limit=5)
        assert dead.reason == "queue_full" and dead.run_id == second.run_id


async def test_a_poke_just_before_stop_does_not_keep_the_worker_running(engine: Engine) -> None:
    # asyncio.wait_for (Python 3.11) returns the inner result instead of raising when the cancel
    # arrives in the same turn as the wake-up: the worker must stop all the same.
    engine.notify.add_channel(Recorder("email"))
    await asyncio.sleep(0.05)  # the worker sleeps in its idle wait
    worker = engine.notify.worker
    loop_task = worker._task
    assert loop_task is not None
    worker.poke()
    stopping = asyncio.ensure_future(worker.stop())
    done, _ = await asyncio.wait({stopping}, timeout=5)
    assert stopping in done and loop_task.done(), "the worker kept running after stop()"


async def test_pruning_keeps_up_with_many_settled_notices(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from openwop_bridge.core.clock import SystemClock
    from openwop_bridge.notify.worker import OutboxWorker
    from openwop_bridge.store.sqlite import SqliteStore
    from tests.store.test_store_contract import draft as event_draft
    from tests.store.test_store_contract import make_run

    store = SqliteStore(tmp_path / "prune.db")
    store.notice_planning.limits = OutboxLimits(per_tenant=10_000, per_recipient=10_000, delivered_ttl_ms=1)
    await store.open()
    try:
        run = make_run()
        await store.create_run(run, [event_draft("run.started")])
        ids = await store.outbox_add(
            run.tenant, run.run_id, [NoticeDraft("email", f"p{i}", {}) for i in range(1_500)], 0
        )
        for n in await store.outbox_claim("w", 0, 60_000, 1_500, ("email",)):
            await store.outbox_settle(n.notice_id, "w", n.attempt, "delivered", 0, None, 10)
        worker = OutboxWorker(store, SystemClock(), "w", {}, lambda _: RetryPolicy())
        worker._settled = 1  # it settled some since its last pruning
        await worker._maybe_prune()
        assert await store.outbox_states(ids) == {}
    finally:
        await store.close()


async def test_notices_no_channel_here_delivers_cost_no_claim(make_engine) -> None:  # type: ignore[no-untyped-def]
    """A claim is a transaction: notices of a channel this instance does not deliver (another instance's,
    or one not added yet) are not looked for when they are written, and adding the channel finds them."""
    engine: Engine = make_engine()
    teams = Recorder("teams")
    engine.notify.add_channel(teams)
    engine.notify.add_planner(planner("email", ["alice"]))
    waiting_workflow(engine)
    async with engine:
        await asyncio.sleep(0.2)  # the worker's first look at start-up is over
        before = engine.store.commits
        run = await engine.create_run(ADMIN, "waits")
        await settle(engine, run.run_id)
        await asyncio.sleep(0.3)
        assert engine.store.notices_written == 1
        assert engine.store.commits - before == 1, "the run's commit only: no claim for a notice nobody here sends"
        email = Recorder("email")
        engine.notify.add_channel(email)
        await _until(lambda: len(email.attempts) == 1)


async def test_an_idle_planner_is_not_asked_and_plans_again_once_it_is_not(make_engine) -> None:  # type: ignore[no-untyped-def]
    """A planner registered with an ``idle`` test is skipped while it is idle (nothing planned, not even
    asked), and asked again in the first transaction after it stops being idle."""
    engine: Engine = make_engine()
    channel = Recorder("email")
    engine.notify.add_channel(channel)
    asked: list[str] = []
    plan_for_alice = planner("email", ["alice"])

    def counting(
        run: RunRecord, events: Sequence[dict[str, Any]], opened: Sequence[InterruptRecord], now_ms: int
    ) -> list[NoticeDraft]:
        asked.append(run.run_id)
        return plan_for_alice(run, events, opened, now_ms)

    idle = True
    engine.notify.add_planner(counting, idle=lambda: idle)
    waiting_workflow(engine)
    async with engine:
        quiet = await engine.create_run(ADMIN, "waits")
        await settle(engine, quiet.run_id)
        assert asked == [] and engine.store.notices_written == 0
        idle = False
        told = await engine.create_run(ADMIN, "waits")
        await settle(engine, told.run_id)
        await _until(lambda: len(channel.attempts) == 1)
        assert set(asked) == {told.run_id} and engine.store.notices_written == 1


async def test_a_planner_without_an_idle_test_is_always_asked(make_engine) -> None:  # type: ignore[no-untyped-def]
    """One planner that may always plan keeps every transaction planning, whatever the idle ones say."""
    engine: Engine = make_engine()
    engine.notify.add_channel(Recorder("email"))
    engine.notify.add_planner(planner("email", []), idle=lambda: True)
    engine.notify.add_planner(planner("email", ["alice"]))
    waiting_workflow(engine)
    async with engine:
        run = await engine.create_run(ADMIN, "waits")
        await settle(engine, run.run_id)
        assert engine.store.notices_written == 1
