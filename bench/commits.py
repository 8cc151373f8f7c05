"""Durable commits per cycle: ``commits_per_cycle`` and ``commits_per_cycle_at_16``.

A cycle is one approval created, suspended, answered and completed. The store
counts the transactions that reached the disk (``Store.commits``: on SQLite one
per fsynced ``COMMIT``, however many writes it groups); a figure is that count
over the cycles run, on a SQLite file with ``synchronous=FULL``.

- ``commits_per_cycle``: sequential cycles through the engine in process.
- ``commits_per_cycle_at_16``: 16 HTTP clients at once (the ``http_throughput``
  client), against the host on uvicorn in this process so that the store's
  counter can be read; answers that arrive together share a commit.
- ``commits_per_cycle_postgres``: the sequential cycles on ``PostgresStore``,
  measured only when ``--db postgresql://…`` is given (one commit per
  transaction: PostgreSQL has no group commit across connections here).
"""

from __future__ import annotations

import asyncio
from typing import Any

from openwop_bridge.bench import workflows
from openwop_bridge.bench.engine import EngineCycles
from openwop_bridge.bench.harness import Bench
from openwop_bridge.bench.http import CLIENTS, ApprovalClient
from openwop_bridge.bench.results import Result, Target
from openwop_bridge.core.auth import KeyRing, make_key
from openwop_bridge.host.app import create_app
from openwop_bridge.runtime.engine import Engine
from openwop_bridge.store.sqlite import SqliteStore

PER_CYCLE = "commits_per_cycle"
AT_16 = "commits_per_cycle_at_16"
POSTGRES = "commits_per_cycle_postgres"
PER_CYCLE_TARGET = Target("<=", 2.0)
AT_16_TARGET = Target("<=", 1.0)


async def _sequential(bench: Bench, engine: Engine, name: str = PER_CYCLE) -> Result:
    """Commits per cycle, one cycle at a time, in process (each cycle ends once ``run.completed`` committed)."""
    cycles = EngineCycles(engine)
    n = bench.scale(200, 20)
    before = engine.store.commits
    for done in range(n):
        await cycles.cycle()
        bench.progress.tick("commits", done + 1, n)
    return Result(name, "commits", (engine.store.commits - before) / n, n=n, target=PER_CYCLE_TARGET)


async def _on_postgres(bench: Bench, url: str) -> Result:
    """Commits per cycle, one cycle at a time, on ``PostgresStore``."""
    from openwop_bridge.store.postgres import PostgresStore

    engine = Engine(PostgresStore(url), workflows=workflows.definitions())
    await engine.start()
    try:
        return await _sequential(bench, engine, POSTGRES)
    finally:
        await engine.stop()


async def _concurrent(bench: Bench, engine: Engine) -> Result:
    """Commits per cycle with 16 HTTP clients cycling at once."""
    import uvicorn

    keys = KeyRing([make_key(bench.api_key, principal="bench", tenant=bench.tenant)])
    app = create_app(engine, keys, manage_engine=False)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started:
        if serving.done():
            serving.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    clients = [ApprovalClient(bench, port) for _ in range(CLIENTS)]
    each = bench.scale(25, 4)
    try:
        await asyncio.gather(*(c.cycle() for c in clients))  # warm-up: connections, caches
        before = engine.store.commits

        async def cycles(client: ApprovalClient) -> Any:
            for _ in range(each):
                await client.cycle()

        await asyncio.gather(*(cycles(c) for c in clients))
        total = each * len(clients)
        return Result(AT_16, "commits", (engine.store.commits - before) / total, n=total, target=AT_16_TARGET)
    finally:
        for client in clients:
            await client.close()
        server.should_exit = True
        await asyncio.wait_for(serving, 10)


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Measure the durable commits per cycle, alone and under 16 clients (and on PostgreSQL with ``--db``)."""
    results: list[Result] = []
    if {PER_CYCLE, AT_16} & wanted:
        engine = Engine(SqliteStore(bench.path("commits.db")), workflows=workflows.definitions())
        await engine.start()
        try:
            if PER_CYCLE in wanted:
                bench.progress.say("commits", "sequential cycles in process")
                results.append(await _sequential(bench, engine))
            if AT_16 in wanted:
                bench.progress.say("commits", f"{CLIENTS} HTTP clients at once")
                results.append(await _concurrent(bench, engine))
        finally:
            await engine.stop()
    if POSTGRES in wanted and bench.db and bench.db.startswith(("postgresql://", "postgres://")):
        bench.progress.say("commits", "sequential cycles on PostgreSQL")
        results.append(await _on_postgres(bench, bench.db))
    return results
