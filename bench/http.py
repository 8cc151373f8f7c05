"""Scenario 2, ``http_roundtrip`` and ``http_throughput``: one approval over loopback HTTP.

A cycle, as a client sees it: ``POST /v1/runs`` (201), follow
``GET /v1/runs/{id}/events`` (SSE) until ``node.suspended``, answer with
``POST /v1/runs/{id}/interrupts/gate`` (200: committed), and read the same
stream on until ``run.completed`` ends it. The event stream is the cheapest
honest way the API offers to learn both moments: the server pushes each
committed event once, on a connection opened once per run, where snapshot
polling would add a polling interval or burn requests, and the long poll
(``/events/poll``) needs five requests per cycle instead of three.

``http_roundtrip`` is the median of sequential cycles; ``http_throughput`` is
the median, over one-second windows, of cycles completed per second by 16
clients at once. With ``--instances N`` the clients are spread round-robin
over N servers sharing one ``--db`` store (a SQLite file serves one instance).
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from openwop_bridge.bench import workflows
from openwop_bridge.bench.client import Connection
from openwop_bridge.bench.harness import Bench, alternate
from openwop_bridge.bench.results import Result, Target, median
from openwop_bridge.bench.servers import Server, bridge_command

ROUNDTRIP = "http_roundtrip"
THROUGHPUT = "http_throughput"
CLIENTS = 16
ROUNDTRIP_TARGET = Target("<=", 5.0)
THROUGHPUT_TARGET = Target(">=", 400.0)
FAILED_EVENTS = ("run.failed", "run.cancelled")


class ApprovalClient:
    """One client of one server: a connection for commands and one for the event stream, with ``auth``'s
    headers (the bench's API key by default)."""

    def __init__(self, bench: Bench, port: int, auth: dict[str, str] | None = None) -> None:
        self.auth = bench.auth if auth is None else auth
        self.commands = Connection("127.0.0.1", port, self.auth)
        self.events = Connection("127.0.0.1", port, self.auth)

    async def cycle(self) -> float:
        """Create, see it suspended, answer, see it completed; returns the seconds it took."""
        started = time.perf_counter()
        created = await self.commands.request("POST", "/v1/runs", {"workflowId": workflows.APPROVAL}, expect=201)
        run_id = created.json()["runId"]
        completed = False
        async with contextlib.aclosing(self.events.stream("GET", f"/v1/runs/{run_id}/events")) as stream:
            async for event in stream:
                if event.event == "node.suspended":
                    await self.commands.request(
                        "POST",
                        f"/v1/runs/{run_id}/interrupts/{workflows.GATE}",
                        {"resumeValue": workflows.ANSWERS[workflows.APPROVAL]},
                        expect=200,
                    )
                elif event.event == "run.completed":
                    completed = True
                elif event.event in FAILED_EVENTS:
                    raise RuntimeError(f"run {run_id} ended with {event.event}: {event.data[:300]}")
        if not completed:
            raise RuntimeError(f"the event stream of run {run_id} ended before run.completed")
        return time.perf_counter() - started

    async def close(self) -> None:
        """Close both connections."""
        await self.commands.close()
        await self.events.close()


def shared_db(bench: Bench, name: str) -> str:
    """The store the HTTP servers share: ``--db`` or a fresh SQLite file."""
    db = bench.db or str(bench.path(name))
    if bench.instances > 1 and not db.startswith(("postgresql://", "postgres://")):
        raise ValueError(
            f"--instances {bench.instances} needs a store several servers can share: a SQLite file serves "
            "one instance (its lock file refuses a second); pass --db postgresql://…"
        )
    return db


def bridge_servers(bench: Bench, db: str, label: str) -> list[Server]:
    """``bench.instances`` bridge servers on ``db`` with the benchmark workflows."""
    folder = workflows.write(bench.path("workflows"))
    return [
        Server(f"{label}[{i}]", bridge_command(db, folder, bench.key_spec), bench.path(f"{label}-{i}.log"))
        for i in range(bench.instances)
    ]


async def throughput(bench: Bench, clients: list[ApprovalClient], *, warmup_s: float, windows: int) -> list[float]:
    """Cycles per second in ``windows`` one-second windows, every client cycling back to back."""
    completed = 0
    stop = asyncio.Event()

    async def loop(client: ApprovalClient) -> None:
        nonlocal completed
        while not stop.is_set():
            await client.cycle()
            completed += 1

    tasks = [asyncio.create_task(loop(c)) for c in clients]
    rates: list[float] = []
    try:
        await _sleep_or_fail(warmup_s, tasks)
        mark, count = time.perf_counter(), completed
        for i in range(windows):
            await _sleep_or_fail(1.0, tasks)
            now = time.perf_counter()
            rates.append((completed - count) / (now - mark))
            mark, count = now, completed
            bench.progress.tick(
                "http", i + 1, windows, f"windows of 1 s, {len(clients)} clients, median {median(rates):.0f} cycles/s"
            )
    finally:
        stop.set()
        done, _ = await asyncio.wait(tasks, timeout=30)
        for task in tasks:
            if not task.done():
                task.cancel()
        for task in done:
            task.result()
    return rates


async def _sleep_or_fail(seconds: float, tasks: list[asyncio.Task[None]]) -> None:
    done, _ = await asyncio.wait(tasks, timeout=seconds, return_when=asyncio.FIRST_EXCEPTION)
    for task in done:
        task.result()


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Measure the sequential round trip and the 16-client throughput."""
    db = shared_db(bench, "http.db")
    servers = bridge_servers(bench, db, "http")
    results: list[Result] = []
    started: list[Server] = []
    try:
        for server in servers:
            await server.start()
            started.append(server)
        bench.progress.say("http", f"{len(servers)} server(s) on {db}")
        if ROUNDTRIP in wanted:
            n = bench.scale(500, 40)
            users = [ApprovalClient(bench, s.port) for s in servers]
            turn = iter(range(1 << 62))

            async def sequential() -> float:
                return await users[next(turn) % len(users)].cycle()

            bench.progress.say("http", f"round trip: {bench.scale(30, 5)} warm-up + {n} sequential cycles")
            samples, _ = await alternate(bench, "http", sequential, None, n=n, warmup=bench.scale(30, 5))
            if bench.profiling:
                bench.progress.say("http", f"profiling {n} sequential cycles")
                async with bench.profiler.record(ROUNDTRIP, servers[0].pid):
                    for _ in range(n):
                        await sequential()
            for user in users:
                await user.close()
            results.append(Result.timed(ROUNDTRIP, samples, target=ROUNDTRIP_TARGET))
        if THROUGHPUT in wanted:
            clients = [ApprovalClient(bench, servers[i % len(servers)].port) for i in range(CLIENTS)]
            windows = bench.scale(10, 3)
            bench.progress.say("http", f"throughput: {CLIENTS} clients, warm-up then {windows} windows of 1 s")
            try:
                rates = await throughput(bench, clients, warmup_s=bench.scale(2.0, 0.5), windows=windows)
                if bench.profiling:
                    bench.progress.say("http", f"profiling {CLIENTS} clients for {windows} s")
                    async with bench.profiler.record(THROUGHPUT, servers[0].pid):
                        await throughput(bench, clients, warmup_s=0, windows=windows)
            finally:
                for client in clients:
                    await client.close()
            results.append(Result(THROUGHPUT, "cycles/s", median(rates), n=len(rates), target=THROUGHPUT_TARGET))
    finally:
        for server in reversed(started):
            await server.stop()
    return results
