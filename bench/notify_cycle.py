"""``engine_roundtrip_notify`` and ``commits_per_cycle_notify``: what a notify route costs the engine cycle.

Two engines, each on its own SQLite file (``synchronous=FULL``) in the work folder, run the
``engine_roundtrip`` cycle (:class:`~bench.engine.EngineCycles`: one approval created, suspended,
answered, completed), alternating as bench and peer do. One has the notify file of
:mod:`openwop_bridge.bench.notify_file` installed, whose route matches every benchmark approval and e-mails one
person: the step that opens each interrupt plans that notice and writes its outbox row in the same
transaction. Its e-mail channel is plugged in only between cycles, outside the timed and counted
window: after each cycle the worker settles its notice (the interrupt has been answered, so the
channel ends it without a mail; a mail would go to a real SMTP server on loopback,
:class:`~bench.receivers.MailReceiver`) and the channel is taken away again. So the outbox is as
short as a prompt worker keeps it (the caps on queued notices, and the counts a write makes to apply
them, see what they would see in service), while nothing is delivered during a cycle: what is measured
is the cost on the request path (delivery is ``notify_drain``'s figure).

- ``engine_roundtrip_notify``: the median cycle with the route over the median cycle without it,
  from the same alternated run (target ≤ 1.1).
- ``commits_per_cycle_notify``: durable commits per cycle with the route, counted as
  ``commits_per_cycle`` counts them (``Store.commits``) over the recorded cycles (target ≤ 2: the
  notice adds no commit). Every cycle must also have written exactly one notice, or both figures fail.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from openwop_bridge.bench import notify_file, workflows
from openwop_bridge.bench.commits import PER_CYCLE_TARGET
from openwop_bridge.bench.engine import EngineCycles
from openwop_bridge.bench.harness import Bench, alternate
from openwop_bridge.bench.receivers import MailReceiver, Tally
from openwop_bridge.bench.results import Result, Target, median
from openwop_bridge.host.notifying import install_notify
from openwop_bridge.notify.worker import Settled
from openwop_bridge.runtime.engine import Engine
from openwop_bridge.store.sqlite import SqliteStore

NAME = "engine_roundtrip_notify"
COMMITS = "commits_per_cycle_notify"
TARGET = Target("<=", 1.1)
#: How long one notice may take to be delivered between cycles.
DELIVERY_TIMEOUT_S = 30.0


class CountedCycles:
    """An engine's cycles, each with the commits and notices its store counted while it ran; with
    ``mails``, the notices each cycle wrote are settled after it (see the module)."""

    def __init__(self, engine: Engine, mails: MailReceiver | None = None) -> None:
        self.engine = engine
        self.cycles = EngineCycles(engine)
        self.mails = mails
        self._channel = engine.notify.channels.pop("email") if mails is not None else None
        self._settled = 0
        engine.notify.on_settled(self._count)
        #: ``(commits, notices written)`` of every cycle run, warm-up included.
        self.counts: list[tuple[int, int]] = []

    async def cycle(self) -> float:
        """One cycle; returns the seconds it took."""
        store = self.engine.store
        commits, notices = store.commits, store.notices_written
        elapsed = await self.cycles.cycle()
        self.counts.append((store.commits - commits, store.notices_written - notices))
        await self._deliver()
        return elapsed

    def _count(self, settled: Settled) -> None:
        if settled.status != "retry":
            self._settled += 1

    async def _deliver(self) -> None:
        """Settle what the last cycle queued, and take the channel away again once every attempt has ended."""
        if self._channel is None:
            return
        notify = self.engine.notify
        owed = self.engine.store.notices_written
        notify.add_channel(self._channel)
        try:
            async with asyncio.timeout(DELIVERY_TIMEOUT_S):
                # Settled notices and attempts in flight are counts, not events: polled, outside the timing.
                while self._settled < owed or notify.worker.busy:  # noqa: ASYNC110
                    await asyncio.sleep(0.0005)
        finally:
            notify.channels.pop("email")

    def per_cycle(self, last: int) -> tuple[float, set[int]]:
        """Commits per cycle over the ``last`` cycles, and the numbers of notices those cycles wrote."""
        counted = self.counts[-last:]
        return sum(c for c, _ in counted) / len(counted), {w for _, w in counted}


async def _engine(bench: Bench, name: str, mails: MailReceiver | None) -> Engine:
    engine = Engine(SqliteStore(bench.path(name)), workflows=workflows.definitions())
    if mails is not None:
        install_notify(engine, notify_file.load(bench, mails.port, "notify-cycle.json"))
    await engine.start()
    return engine


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Alternate cycles with and without the route; the ratio of their medians and the commits per cycle."""
    n = bench.scale(1000, 60)
    warmup = bench.scale(50, 10)
    mails = MailReceiver(Tally())
    server = await mails.serve()
    engines = [await _engine(bench, "cycle-route.db", mails), await _engine(bench, "cycle-plain.db", None)]
    try:
        routed, plain = CountedCycles(engines[0], mails), CountedCycles(engines[1])
        bench.progress.say("notify", f"{warmup} warm-up + {n} cycles with and without a notify route, alternating")
        samplers: tuple[Callable[[], Awaitable[float]], ...] = (routed.cycle, plain.cycle)
        ours, theirs = await alternate(bench, "notify", *samplers, n=n, warmup=warmup, labels=("route", "no route"))
    finally:
        for engine in engines:
            await engine.stop()
        server.close()
    commits, notices = routed.per_cycle(n)
    commits_plain, _ = plain.per_cycle(n)
    if notices != {1}:
        error = f"each cycle with the route should write one notice; the cycles wrote {sorted(notices)}"
        bench.progress.say("notify", f"FAILED: {error}")
        return [
            Result(name, unit, None, n=n, error=error)
            for name, unit in ((NAME, "x"), (COMMITS, "commits"))
            if name in wanted
        ]
    with_route, without = median(ours), median(theirs)
    assert with_route is not None and without is not None
    results = [
        Result(
            NAME,
            "x",
            with_route / without,
            n=n,
            target=TARGET,
            note=(
                f"cycle with a route e-mailing one person {with_route * 1000:.2f} ms, without {without * 1000:.2f} ms "
                "(medians, alternated, SQLite); each cycle's notice settled after it, outside the timing"
            ),
        ),
        Result(
            COMMITS,
            "commits",
            commits,
            n=n,
            target=PER_CYCLE_TARGET,
            note=f"one notice written per cycle; without the route {commits_plain:.2f} in the same run",
        ),
    ]
    return [r for r in results if r.name in wanted]
