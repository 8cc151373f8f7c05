"""Scenario 4: a server holding 100,000 suspended runs.

The runs are created in process, through the engine, against the database file
the server then opens: real runs, each suspended on a real interrupt (nine in
ten wait on an approval, one in ten on a clarification), committed exactly as
over HTTP but without a thousand HTTP round trips per second to wait for.
Meanwhile a second database gets 100 of the same runs. Then a server is
started on each and measured side by side:

- ``pending_rss_mb``: ``VmRSS`` of the server holding 100,000 pending runs,
  read from ``/proc/<pid>/status`` after the inbox and resolve work below;
- ``inbox_page_ms``: ``GET /v1/interrupts?kind=clarification&limit=50``, the
  first page of the rarer kind (so a missing index would show);
- ``resolve_at_scale_ratio``: median latency of
  ``POST /v1/runs/{id}/interrupts/gate`` (200: committed) on the large server
  over the same on the small one, the two alternating, each answered run left
  to complete before the next answer;
- ``restart_s``: SIGTERM, then spawn to the first 200 from ``/healthz``
  (the engine has recovered by then: it starts before the port opens).
"""

from __future__ import annotations

import asyncio
import time

from bench import workflows
from bench.client import Connection
from bench.harness import Bench, Result, Target, alternate, median, median_ms
from bench.http import bridge_servers
from bench.servers import Server
from bridge.core.auth import Principal
from bridge.runtime.engine import Engine
from bridge.store.sqlite import SqliteStore

RSS = "pending_rss_mb"
INBOX = "inbox_page_ms"
RESOLVE = "resolve_at_scale_ratio"
RESTART = "restart_s"
SMALL = 100
IN_FLIGHT = 256
CLARIFICATION_EVERY = 10
LABELS = ("large", "small")
INBOX_PATH = "/v1/interrupts?kind=clarification&limit=50"


async def populate(bench: Bench, db: str, runs: int, label: str) -> list[str]:
    """Create ``runs`` runs in the benchmark tenant and wait until every one is suspended.

    Returns the ids of the approval runs (the ones the scenario answers).
    """
    engine = Engine(SqliteStore(db), workflows=workflows.definitions())
    await engine.start()
    principal = Principal("bench", tenant=bench.tenant)
    window = asyncio.Semaphore(IN_FLIGHT)
    suspended = 0
    all_suspended = asyncio.Event()
    failures: list[str] = []

    def on_events(run_id: str, docs: list[dict[str, object]]) -> None:
        nonlocal suspended
        for doc in docs:
            if doc["type"] == "node.suspended":
                suspended += 1
                window.release()
                if suspended == runs:
                    all_suspended.set()
            elif doc["type"] in ("run.failed", "run.cancelled"):
                failures.append(f"run {run_id} ended with {doc['type']} while populating")
                all_suspended.set()

    engine.hub.add_listener(on_events)
    approvals: list[str] = []
    try:
        for i in range(runs):
            await window.acquire()
            clarify = i % CLARIFICATION_EVERY == CLARIFICATION_EVERY - 1
            run = await engine.create_run(principal, workflows.CLARIFICATION if clarify else workflows.APPROVAL)
            if not clarify:
                approvals.append(run.run_id)
            bench.progress.tick("scale", i + 1, runs, f"runs created in {label}")
        await asyncio.wait_for(all_suspended.wait(), 120)
        if failures:
            raise RuntimeError(failures[0])
    finally:
        await engine.stop()
    return approvals


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


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Populate both databases, then measure memory, inbox, resolve and restart."""
    large_runs = bench.scale(100_000, 2_000)
    resolves = bench.scale(60, 10)
    inbox_pages = bench.scale(100, 20)
    restarts = bench.scale(5, 2)
    bench.progress.say("scale", f"creating {SMALL:,} + {large_runs:,} suspended runs in process")
    small_ids = await populate(bench, str(bench.path("scale-small.db")), SMALL + resolves, "small db")
    started = time.perf_counter()
    large_ids = await populate(bench, str(bench.path("scale-large.db")), large_runs + resolves, "large db")
    bench.progress.say("scale", f"{large_runs + resolves:,} runs suspended in {time.perf_counter() - started:.0f} s")
    small = bridge_servers(bench, str(bench.path("scale-small.db")), "scale-small")[0]
    large = bridge_servers(bench, str(bench.path("scale-large.db")), "scale-large")[0]
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
        await small.stop()
        started_servers.remove(small)
        bench.progress.say("scale", f"restart: {restarts} restarts of the server holding {large_runs:,} runs")
        restart_times: list[float] = []
        for i in range(restarts):
            await large.stop()
            started_servers.remove(large)
            restart_times.append(await large.start())
            started_servers.append(large)
            bench.progress.tick("scale", i + 1, restarts, f"restarts, median {median(restart_times):.2f} s")
    finally:
        for resolver in resolvers:
            await resolver.close()
        for server in reversed(started_servers):
            await server.stop()
    ratio_large, ratio_small = median(resolve_large), median(resolve_small)
    ratio = None if ratio_large is None or not ratio_small else ratio_large / ratio_small
    scale_note = f"{large_runs:,} pending"
    return [
        Result(RSS, "MiB", rss, n=1, target=Target("<=", 300), note=f"{scale_note}; peak (VmHWM) {peak:.0f} MiB"),
        Result(
            INBOX,
            "ms",
            median_ms(inbox_large),
            n=len(inbox_large),
            target=Target("<=", 20),
            note=f"{scale_note}; {_fmt_ms(median_ms(inbox_small))} ms at {SMALL}",
        ),
        Result(
            RESOLVE,
            "x",
            ratio,
            n=len(resolve_large),
            target=Target("<=", 1.5),
            note=f"{_fmt_ms(median_ms(resolve_large))} ms at {scale_note} / "
            f"{_fmt_ms(median_ms(resolve_small))} ms at {SMALL}",
        ),
        Result(RESTART, "s", median(restart_times), n=len(restart_times), target=Target("<=", 5), note=scale_note),
    ]


def _fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
