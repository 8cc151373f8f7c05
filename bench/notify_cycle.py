"""``engine_roundtrip_notify`` and ``commits_per_cycle_notify``: what a notify route costs the engine cycle.

Two engines, each on its own SQLite file (``synchronous=FULL``) in the work folder, run the
``engine_roundtrip`` cycle (:class:`~bench.engine.EngineCycles`: one approval created, suspended,
answered, completed), alternating as bench and peer do. One has the notify file of
:mod:`bench.notify_file` installed, whose route matches every benchmark approval and e-mails one
person: the step that opens each interrupt plans that notice and writes its outbox row in the same
transaction. Its e-mail channel is not plugged in, so the rows stay queued and nothing is delivered
during the cycles (delivery is ``notify_drain``'s figure); what is measured is the cost on the
request path.

- ``engine_roundtrip_notify``: the median cycle with the route over the median cycle without it,
  from the same alternated run (target ≤ 1.1).
- ``commits_per_cycle_notify``: durable commits per cycle with the route, counted as
  ``commits_per_cycle`` counts them (``Store.commits``) over the recorded cycles (target ≤ 2: the
  notice adds no commit). Every cycle must also have written exactly one notice, or both figures fail.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bench import notify_file, workflows
from bench.commits import PER_CYCLE_TARGET
from bench.engine import EngineCycles
from bench.harness import Bench, Result, Target, alternate, median
from bridge.host.notifying import install_notify
from bridge.runtime.engine import Engine
from bridge.store.sqlite import SqliteStore

NAME = "engine_roundtrip_notify"
COMMITS = "commits_per_cycle_notify"
TARGET = Target("<=", 1.1)
#: The SMTP port written in the notify file; nothing connects to it (the e-mail channel stays unplugged).
UNUSED_SMTP_PORT = 2525


class CountedCycles:
    """An engine's cycles, each with the commits and notices its store counted while it ran."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.cycles = EngineCycles(engine)
        #: ``(commits, notices written)`` of every cycle run, warm-up included.
        self.counts: list[tuple[int, int]] = []

    async def cycle(self) -> float:
        """One cycle; returns the seconds it took."""
        store = self.engine.store
        commits, notices = store.commits, store.notices_written
        elapsed = await self.cycles.cycle()
        self.counts.append((store.commits - commits, store.notices_written - notices))
        return elapsed

    def per_cycle(self, last: int) -> tuple[float, set[int]]:
        """Commits per cycle over the ``last`` cycles, and the numbers of notices those cycles wrote."""
        counted = self.counts[-last:]
        return sum(c for c, _ in counted) / len(counted), {w for _, w in counted}


async def _engine(bench: Bench, name: str, *, notify: bool) -> Engine:
    engine = Engine(SqliteStore(bench.path(name)), workflows=workflows.definitions())
    if notify:
        install_notify(engine, notify_file.load(bench, UNUSED_SMTP_PORT, "notify-cycle.json"))
        engine.notify.channels.pop("email")  # planned and written, not delivered (see the module)
    await engine.start()
    return engine


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Alternate cycles with and without the route; the ratio of their medians and the commits per cycle."""
    n = bench.scale(1000, 60)
    warmup = bench.scale(50, 10)
    engines = [
        await _engine(bench, "cycle-route.db", notify=True),
        await _engine(bench, "cycle-plain.db", notify=False),
    ]
    try:
        routed, plain = CountedCycles(engines[0]), CountedCycles(engines[1])
        bench.progress.say("notify", f"{warmup} warm-up + {n} cycles with and without a notify route, alternating")
        samplers: tuple[Callable[[], Awaitable[float]], ...] = (routed.cycle, plain.cycle)
        ours, theirs = await alternate(bench, "notify", *samplers, n=n, warmup=warmup, labels=("route", "no route"))
    finally:
        for engine in engines:
            await engine.stop()
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
                "(medians, alternated, SQLite); the notice is written, not delivered"
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
