"""Scenario 4: a server holding ``--pending`` suspended runs (100,000 unless told).

The runs are created in process, through the engine, against the database file
the server then opens (:mod:`openwop_bridge.bench.populate`): real runs, each suspended on a
real interrupt, committed as over HTTP but without thousands of HTTP round
trips per second to wait for. Meanwhile a second database gets 100 of the same
runs. Then a server is started on each and measured side by side:

- ``disk_bytes_per_pending_run``: the database's size (file and WAL) after
  populating, over the runs it holds;
- ``pending_rss_mb``: ``VmRSS`` of the server holding the pending runs,
  read from ``/proc/<pid>/status`` after the inbox and resolve work below;
- ``inbox_page_ms``: ``GET /v1/interrupts?kind=clarification&limit=50``, the
  first page of the rarer kind (so a missing index would show);
- ``resolve_at_scale_ratio``: median latency of
  ``POST /v1/runs/{id}/interrupts/gate`` (200: committed) on the large server
  over the same on the small one, the two alternating, each answered run left
  to complete before the next answer;
- ``restart_s``: SIGTERM, then spawn to the first 200 from ``/healthz``
  (the engine has recovered by then: it starts before the port opens), the
  two servers alternating (the small one's in the note: the fixed cost).

With ``--sweep DIR`` the whole scenario runs again at 10,000 and 100,000 runs
(fresh files each time) and :mod:`openwop_bridge.bench.sweep` writes how each figure grows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from openwop_bridge.bench import populate, sweep, workflows
from openwop_bridge.bench.client import Connection
from openwop_bridge.bench.harness import Bench, alternate
from openwop_bridge.bench.http import bridge_servers
from openwop_bridge.bench.results import Result, Target, median, median_ms
from openwop_bridge.bench.servers import Server

RSS = "pending_rss_mb"
INBOX = "inbox_page_ms"
RESOLVE = "resolve_at_scale_ratio"
RESTART = "restart_s"
DISK = "disk_bytes_per_pending_run"
SMALL = 100
#: The sizes ``--sweep`` adds to the ``--pending`` one (full run, ``--quick``).
SWEEP = (10_000, 100_000)
QUICK_SWEEP = (500, 1_000)
LABELS = ("large", "small")
INBOX_PATH = "/v1/interrupts?kind=clarification&limit=50"


class Resolver:
    """Answers approval runs on one server, one at a time, timing the answer."""

    def __init__(self, bench: Bench, server: Server, run_ids: list[str]) -> None:
        self.connection = Connection("127.0.0.1", server.port, bench.auth)
        self.run_ids = run_ids

    async def resolve(self) -> float:
        """Time one answer (until its 200), then wait, untimed, for that run to complete."""
        run_id = self.run_ids.pop()
        started = time.perf_counter()
        await self.connection.request(
            "POST",
            f"/v1/runs/{run_id}/interrupts/{workflows.GATE}",
            {"resumeValue": workflows.ANSWERS[workflows.APPROVAL]},
            expect=200,
        )
        elapsed = time.perf_counter() - started
        after = -1
        while True:
            page = (
                await self.connection.request(
                    "GET", f"/v1/runs/{run_id}/events/poll?lastSequence={after}&timeout=5", expect=200
                )
            ).json()
            after = page["lastSequence"]
            if page["isComplete"]:
                return elapsed

    async def inbox(self) -> float:
        """Time the first inbox page of clarifications."""
        started = time.perf_counter()
        page = await self.connection.request("GET", INBOX_PATH, expect=200)
        elapsed = time.perf_counter() - started
        if not page.json()["items"]:
            raise RuntimeError("the inbox is empty: the populated runs are not visible to the benchmark key")
        return elapsed

    async def close(self) -> None:
        """Close the connection."""
        await self.connection.close()


@dataclass
class Point:
    """The scale figures measured at one size."""

    pending: int
    filled: populate.Filled
    disk_bytes: int
    rss: float
    peak: float
    inbox_large: list[float]
    inbox_small: list[float]
    resolve_large: list[float]
    resolve_small: list[float]
    restarts: list[float]
    restarts_small: list[float]

    @property
    def resolve_ratio(self) -> float | None:
        """Median answer latency at this size over the same at :data:`SMALL`."""
        large, small = median(self.resolve_large), median(self.resolve_small)
        return None if large is None or not small else large / small

    def results(self) -> list[Result]:
        """The scenario's figures at this size."""
        at = f"{self.pending:,} pending"
        return [
            Result(RSS, "MiB", self.rss, n=1, target=Target("<=", 300), note=f"{at}; peak (VmHWM) {self.peak:.0f} MiB"),
            Result.timed(
                INBOX,
                self.inbox_large,
                target=Target("<=", 20),
                note=f"{at}; {_fmt_ms(median_ms(self.inbox_small))} ms at {SMALL}",
            ),
            Result(
                RESOLVE,
                "x",
                self.resolve_ratio,
                n=len(self.resolve_large),
                target=Target("<=", 1.2),
                note=f"{_fmt_ms(median_ms(self.resolve_large))} ms at {at} / "
                f"{_fmt_ms(median_ms(self.resolve_small))} ms at {SMALL}",
            ),
            Result(
                RESTART,
                "s",
                median(self.restarts),
                n=len(self.restarts),
                target=Target("<=", 5),
                note=f"{at}; {median(self.restarts_small) or 0:.2f} s at {SMALL}",
            ),
            Result(
                DISK,
                "B",
                self.disk_bytes / self.pending,
                n=1,
                note=f"{self.disk_bytes / 2**20:,.0f} MiB for {at}; populated in {self.filled.wall_s:.0f} s "
                f"({self.pending / self.filled.wall_s:,.0f} runs/s, {self.filled.cpu_s * 1000 / self.pending:.2f} "
                "CPU ms a run)",
            ),
        ]


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Measure at ``--pending`` runs (and, with ``--sweep``, at the sweep's sizes too)."""
    size = bench.pending or bench.scale(100_000, 2_000)
    sizes = [size] if bench.sweep is None else sorted({*(QUICK_SWEEP if bench.quick else SWEEP), size})
    points = [await measure(bench, n) for n in sizes]
    if bench.sweep is not None:
        written = sweep.write(bench.sweep, points)
        bench.progress.say("scale", f"sweep table and plot in {', '.join(str(p) for p in written)}")
    chosen = next(p for p in points if p.pending == size)
    results = chosen.results()
    for result in results:
        result.pending_runs = size
    return results


async def measure(bench: Bench, large_runs: int) -> Point:
    """Populate both databases, then measure memory, inbox, resolve and restart."""
    resolves = bench.scale(60, 10)
    inbox_pages = bench.scale(100, 20)
    restarts = bench.scale(5, 2)
    small_db, large_db = str(bench.path(f"scale-small-{large_runs}.db")), str(bench.path(f"scale-{large_runs}.db"))
    bench.progress.say("scale", f"creating {SMALL:,} + {large_runs:,} suspended runs in process")
    await populate.populate(bench, small_db, SMALL + resolves, "small db")
    filled = await populate.populate(bench, large_db, large_runs, "large db")
    disk = populate.disk_bytes(large_db)
    bench.progress.say(
        "scale",
        f"{large_runs:,} runs suspended in {filled.wall_s:.0f} s ({filled.cpu_s:.0f} CPU s); "
        f"{disk / large_runs:,.0f} bytes a run on disk",
    )
    answered = resolves * (6 if bench.profiling else 1)
    small_ids, large_ids = populate.approval_runs(small_db, resolves), populate.approval_runs(large_db, answered)
    small = bridge_servers(bench, small_db, "scale-small")[0]
    large = bridge_servers(bench, large_db, "scale-large")[0]
    started_servers: list[Server] = []
    resolvers: list[Resolver] = []
    try:
        for server in (small, large):
            await server.start()
            started_servers.append(server)
        at_small, at_large = Resolver(bench, small, small_ids), Resolver(bench, large, large_ids)
        resolvers += [at_small, at_large]
        bench.progress.say("scale", f"inbox: {inbox_pages} first pages on each server, alternating")
        inbox_large, inbox_small = await alternate(
            bench, "scale", at_large.inbox, at_small.inbox, n=inbox_pages, warmup=3, labels=LABELS
        )
        bench.progress.say("scale", f"resolve: {resolves} answers on each server, alternating")
        resolve_large, resolve_small = await alternate(
            bench, "scale", at_large.resolve, at_small.resolve, n=resolves - 2, warmup=2, labels=LABELS
        )
        rss, peak = large.rss_mb(), large.peak_rss_mb()
        if bench.profiling:
            bench.progress.say("scale", "profiling inbox pages and answers on the large server")
            async with bench.profiler.record(INBOX, large.pid):
                for _ in range(inbox_pages * 10):
                    await at_large.inbox()
            async with bench.profiler.record(RESOLVE, large.pid):
                for _ in range(resolves * 5):
                    await at_large.resolve()
        for resolver in resolvers:
            await resolver.close()
        resolvers = []
        bench.progress.say("scale", f"restart: {restarts} restarts of each server, alternating")
        restart_large, restart_small = await alternate(
            bench,
            "scale",
            lambda: restart(large, started_servers),
            lambda: restart(small, started_servers),
            n=restarts,
            warmup=0,
            labels=LABELS,
        )
    finally:
        for resolver in resolvers:
            await resolver.close()
        for server in reversed(started_servers):
            await server.stop()
    if bench.sweep is not None:  # the next size needs the disk space
        populate.remove(small_db, large_db)
    return Point(
        large_runs,
        filled,
        disk,
        rss,
        peak,
        inbox_large,
        inbox_small,
        resolve_large,
        resolve_small,
        restart_large,
        restart_small,
    )


async def restart(server: Server, running: list[Server]) -> float:
    """SIGTERM, then spawn to the first 200 from ``/healthz``: the seconds from the spawn."""
    await server.stop()
    running.remove(server)
    took = await server.start()
    running.append(server)
    return took


def _fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
