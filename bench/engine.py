"""Scenario 1, ``engine_roundtrip``: one approval, paused and answered, in process.

Bridge: :class:`~openwop_bridge.runtime.engine.Engine` on a SQLite file (``synchronous=FULL``)
starts a one-approval workflow; the cycle ends when ``run.completed`` is
committed. Suspension and completion are observed through the engine's event
hub, which publishes only committed events, so "suspended" means the
suspension is on disk.

Peer: a LangGraph graph whose one node calls ``interrupt()``, compiled with
``SqliteSaver`` on its own SQLite file (WAL, SQLite's default
``synchronous=FULL``): ``invoke`` until it pauses, then
``invoke(Command(resume={id: value}))`` until it ends. Each cycle uses a new
run / thread.

With ``--db postgresql://…`` both sides use that PostgreSQL server: the engine
runs on :class:`~openwop_bridge.store.postgres.PostgresStore` and the peer graph is
compiled with LangGraph's ``PostgresSaver`` (langgraph-checkpoint-postgres) on
the same database.

``durable_commit_ms`` (SQLite only) is the disk's share: one bare ``BEGIN
IMMEDIATE``, one small ``INSERT`` and ``COMMIT`` on a SQLite file of its own in
the same folder (WAL, ``synchronous=FULL``), the median of as many samples as
cycles, alternated with them. A cycle makes two durable commits
(``commits_per_cycle``); the engine figure's note says what a cycle at the
target ratio would leave for everything else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from openwop_bridge.bench import workflows
from openwop_bridge.bench.harness import Bench, alternate
from openwop_bridge.bench.results import Result, Target
from openwop_bridge.core.auth import Principal
from openwop_bridge.runtime.engine import Engine
from openwop_bridge.store.base import Store
from openwop_bridge.store.sqlite import SqliteStore

NAME = "engine_roundtrip"
COMMIT = "durable_commit_ms"
#: Event types a cycle waits for, kept when they commit before the cycle asks.
EXPECTED = ("node.suspended", "run.completed")
TARGET = Target("<=", 0.25, on_ratio=True)


class EngineCycles:
    """The bridge side: an engine on a SQLite file and a waiter for committed events."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.principal = Principal("bench")
        self._waiters: dict[tuple[str, str], asyncio.Future[dict[str, Any]]] = {}
        self._early: dict[tuple[str, str], asyncio.Future[dict[str, Any]]] = {}
        engine.hub.add_listener(self._on_events)

    def _on_events(self, run_id: str, docs: list[dict[str, Any]]) -> None:
        for doc in docs:
            waiter = self._waiters.pop((run_id, doc["type"]), None)
            if waiter is None and doc["type"] in EXPECTED:
                # Committed before anyone asked (create_run returns once the run is suspended).
                waiter = self._early[(run_id, doc["type"])] = asyncio.get_running_loop().create_future()
            if waiter is not None and not waiter.done():
                waiter.set_result(doc)
            if doc["type"] in ("run.failed", "run.cancelled"):
                for key in [k for k in self._waiters if k[0] == run_id]:
                    self._waiters.pop(key).set_exception(RuntimeError(f"run {run_id} ended with {doc['type']}"))

    def expect(self, run_id: str, event_type: str) -> asyncio.Future[dict[str, Any]]:
        """A future for the next committed event of that type in that run."""
        early = self._early.pop((run_id, event_type), None)
        if early is not None:
            return early
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters[(run_id, event_type)] = future
        return future

    async def cycle(self) -> float:
        """Start, suspend, resolve, complete; returns the seconds it took."""
        started = time.perf_counter()
        run = await self.engine.create_run(self.principal, workflows.APPROVAL)
        # create_run may return after the suspension committed: the listener keeps it for us.
        suspended = self.expect(run.run_id, "node.suspended")
        completed = self.expect(run.run_id, "run.completed")
        await suspended
        await self.engine.resolve(
            self.principal, workflows.ANSWERS[workflows.APPROVAL], run_id=run.run_id, node_id=workflows.GATE
        )
        await completed
        return time.perf_counter() - started


class DurableCommits:
    """Bare durable commits on a SQLite file: what the disk alone asks of each of a cycle's commits."""

    def __init__(self, path: str) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")

    async def sample(self) -> float:
        """One ``BEGIN IMMEDIATE``, ``INSERT`` and ``COMMIT``; returns the seconds it took."""
        started = time.perf_counter()
        self._conn.execute("BEGIN IMMEDIATE")
        self._conn.execute("INSERT INTO t (v) VALUES ('x')")
        self._conn.execute("COMMIT")
        return time.perf_counter() - started

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


def budget_note(ours_ms: float | None, theirs_ms: float | None, commit_ms: float | None) -> str | None:
    """What two durable commits take of a cycle, and what a cycle at the target ratio leaves beside them."""
    if ours_ms is None or theirs_ms is None or commit_ms is None:
        return None
    at_target = TARGET.value * theirs_ms
    return (
        f"two durable commits alone take {2 * commit_ms:.2f} ms of the {ours_ms:.2f} ms cycle; "
        f"a cycle at ratio {TARGET.value:g} ({at_target:.2f} ms) would leave {at_target - 2 * commit_ms:.2f} ms "
        "for everything else"
    )


def _is_postgres(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def langgraph_peer(location: str) -> tuple[Callable[[], float], Callable[[], None]] | str:
    """A synchronous LangGraph cycle and its cleanup, or why the peer is not available.

    ``location`` is a SQLite file (``SqliteSaver``) or a ``postgresql://`` URL (``PostgresSaver``).
    """
    try:
        from langgraph.types import Command

        from openwop_bridge.bench.langgraph_peer import build_graph

        if _is_postgres(location):
            from langgraph.checkpoint.postgres import PostgresSaver
        else:
            from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError as exc:
        return f"peer not installed ({exc.name}): pip install 'openwop-bridge[bench]'"
    resources = contextlib.ExitStack()
    saver: Any
    if _is_postgres(location):
        saver = resources.enter_context(PostgresSaver.from_conn_string(location))
    else:
        conn = resources.enter_context(contextlib.closing(sqlite3.connect(location, check_same_thread=False)))
        saver = SqliteSaver(conn)
    saver.setup()
    graph = build_graph(saver)
    counter = iter(range(1 << 62))
    answer = workflows.ANSWERS[workflows.APPROVAL]
    prefix = f"bench-{os.getpid()}-{time.time_ns()}"

    def cycle() -> float:
        config: Any = {"configurable": {"thread_id": f"{prefix}-{next(counter)}"}}
        started = time.perf_counter()
        paused = graph.invoke({}, config)
        interrupt_id = paused["__interrupt__"][0].id
        done = graph.invoke(Command(resume={interrupt_id: answer}), config)
        elapsed = time.perf_counter() - started
        if done.get("decision") != answer:
            raise RuntimeError(f"LangGraph peer did not complete with the answer: {done!r}")
        return elapsed

    return cycle, resources.close


def _stores(bench: Bench) -> tuple[Store, str, str | None]:
    """The engine's store, the peer's location and a note naming the database when it is not SQLite."""
    if bench.db and _is_postgres(bench.db):
        from openwop_bridge.store.postgres import PostgresStore

        note = "PostgreSQL: the engine on PostgresStore, the peer on LangGraph's PostgresSaver, same server"
        return PostgresStore(bench.db), bench.db, note
    return SqliteStore(bench.path("engine.db")), str(bench.path("langgraph-peer.db")), None


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Measure ``engine_roundtrip`` against the LangGraph peer, alternating, and the bare durable commit."""
    n = bench.scale(1000, 60)
    warmup = bench.scale(50, 10)
    store, peer_location, where = _stores(bench)
    peer = langgraph_peer(peer_location)
    note = peer if isinstance(peer, str) else where
    if isinstance(peer, str):
        bench.progress.say("engine", f"WARNING: {peer}; measuring the bridge alone")
    commits = None if where is not None or COMMIT not in wanted else DurableCommits(str(bench.path("commit.db")))
    engine = Engine(store, workflows=workflows.definitions())
    await engine.start()
    results: list[Result] = []
    try:
        side = EngineCycles(engine)

        async def peer_sample() -> float:
            assert not isinstance(peer, str)
            return peer[0]()

        if NAME in wanted:
            bench.progress.say("engine", f"{warmup} warm-up + {n} cycles each, alternating")
            ours, theirs = await alternate(
                bench, "engine", side.cycle, None if isinstance(peer, str) else peer_sample, n=n, warmup=warmup
            )
            results.append(Result.timed(NAME, ours, theirs, target=TARGET, note=note))
        if commits is not None:
            bench.progress.say("engine", f"{warmup} warm-up + {n} bare durable commits, alternated with cycles")
            bare, _ = await alternate(
                bench, "commit", commits.sample, side.cycle, n=n, warmup=warmup, labels=("commit", "cycle")
            )
            results.append(Result.timed(COMMIT, bare))
        if bench.profiling and NAME in wanted:
            bench.progress.say("engine", f"profiling {n} bridge cycles")
            async with bench.profiler.record(NAME, os.getpid()):
                for _ in range(n):
                    await side.cycle()
    finally:
        await engine.stop()
        if not isinstance(peer, str):
            peer[1]()
        if commits is not None:
            commits.close()
    figures = {r.name: r for r in results}
    if NAME in figures and COMMIT in figures:
        cycle = figures[NAME]
        extra = budget_note(cycle.bridge, cycle.peer, figures[COMMIT].bridge)
        if extra is not None:
            cycle.note = extra if cycle.note is None else f"{cycle.note}; {extra}"
    return results
