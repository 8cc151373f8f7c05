"""``notify_drain``: how fast the outbox delivers the notices a batch of interrupts owes.

1,000 approvals (20 with ``--quick``) are opened on a SQLite engine with a notify file whose route
e-mails one person about each (:mod:`openwop_bridge.bench.notify_file`) and a webhook subscription that asks for
``interrupt.requested``: each commit that opens one writes its two notices in its own transaction.
The channels are plugged in only once every notice is queued, and the figure is the notices
delivered per second from then until the last one reached its local receiver: the mails a real SMTP
server (``aiosmtpd``), the webhooks a plain HTTP/1.1 server, both on loopback in this process
(:mod:`openwop_bridge.bench.receivers`). Every notice must arrive exactly once: a lost or doubled one, on either
channel, fails the figure.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from openwop_bridge.bench import notify_file, workflows
from openwop_bridge.bench.harness import Bench
from openwop_bridge.bench.receivers import HookReceiver, MailReceiver, Tally
from openwop_bridge.bench.results import Result, Target
from openwop_bridge.core.auth import Principal
from openwop_bridge.host.app import webhook_surface
from openwop_bridge.host.notifying import install_notify
from openwop_bridge.notify.webhook.channel import WebhookSettings
from openwop_bridge.notify.webhook.subscriptions import Subscription
from openwop_bridge.runtime.engine import Engine
from openwop_bridge.store.sqlite import SqliteStore

NAME = "notify_drain"
TARGET = Target(">=", 200)
#: How long the drain may take before the figure fails.
DRAIN_TIMEOUT_S = 600.0
#: How long the receivers keep listening after the last notice (a doubled one would arrive then).
SETTLE_S = 0.5


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Open the interrupts, then time the drain (see the module)."""
    if NAME not in wanted:
        return []
    n = bench.scale(1000, 20)
    mails, hooks_got = MailReceiver(Tally(expected=n)), HookReceiver(Tally(expected=n))
    servers = [await mails.serve(), await hooks_got.serve()]
    engine = Engine(SqliteStore(bench.path("notify.db")), workflows=workflows.definitions())
    install_notify(engine, notify_file.load(bench, mails.port))
    hooks = webhook_surface(engine, WebhookSettings(allow_loopback=True))
    # The planners plan from the start; the channels are taken away until every notice is queued.
    channels = [engine.notify.channels.pop(name) for name in ("email", "webhook")]
    await engine.start()
    try:
        sub = Subscription(
            webhook_id=engine.clock.new_id("whk"),
            tenant="default",
            url=f"http://127.0.0.1:{hooks_got.port}/hook",
            events=frozenset({"interrupt.requested"}),
            secret="bench-secret-0123456789",
        )
        await hooks.state.put(sub.webhook_id, sub.to_json())
        hooks.remember(sub)
        who = Principal(notify_file.PERSON)
        queued = _Opened(n)
        engine.hub.add_listener(queued.on_events)
        written = engine.store.notices_written
        bench.progress.say("notify", f"opening {n} approvals, each owing an e-mail and a webhook")
        for done in range(n):
            await engine.create_run(who, workflows.APPROVAL)
            bench.progress.tick("notify", done + 1, n)
        await asyncio.wait_for(queued.all.wait(), DRAIN_TIMEOUT_S)
        owed = engine.store.notices_written - written
        bench.progress.say("notify", f"draining {owed} notices ({n} e-mails, {n} webhooks)")
        started = time.perf_counter()
        for channel in channels:
            engine.notify.add_channel(channel)  # each keeps the retry policy it was installed with
        try:
            await asyncio.wait_for(
                asyncio.gather(mails.tally.done.wait(), hooks_got.tally.done.wait()), DRAIN_TIMEOUT_S
            )
        except TimeoutError:
            pass  # reported below as lost notices
        elapsed = time.perf_counter() - started
        await asyncio.sleep(SETTLE_S)
    finally:
        await engine.stop()
        for server in servers:
            server.close()
    problems = [
        f"{what}: {p}"
        for what, p in (("e-mails", mails.tally.problem()), ("webhooks", hooks_got.tally.problem()))
        if p is not None
    ]
    if owed != 2 * n:
        problems.insert(0, f"{owed} notices queued for {n} interrupts, {2 * n} expected")
    if any(r != notify_file.ADDRESS for r in mails.recipients):
        problems.append(f"mails went to {sorted(set(mails.recipients) - {notify_file.ADDRESS})}")
    if problems:
        error = "notices lost or doubled: " + "; ".join(problems)
        bench.progress.say("notify", f"FAILED: {error}")
        return [Result(NAME, "notices/s", None, n=2 * n, error=error)]
    note = (
        f"{n} e-mails (one recipient, aiosmtpd) and {n} webhooks, SQLite, local receivers; each delivered once; "
        f"webhooks done in {_since(hooks_got.tally, started):.2f} s, e-mails in {_since(mails.tally, started):.2f} s"
    )
    return [Result(NAME, "notices/s", 2 * n / elapsed, n=2 * n, target=TARGET, note=note)]


def _since(tally: Tally, started: float) -> float:
    return (tally.finished_at or started) - started


class _Opened:
    """Counts the interrupts opened (each one's commit queued its notices)."""

    def __init__(self, n: int) -> None:
        self.left = n
        self.all = asyncio.Event()

    def on_events(self, run_id: str, docs: list[dict[str, Any]]) -> None:
        self.left -= sum(1 for d in docs if d["type"] == "interrupt.requested")
        if self.left <= 0:
            self.all.set()
