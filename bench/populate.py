"""Filling a database with suspended runs for the scale scenario, fast enough for a million.

Every run is created through the engine, in process, and runs until it is
suspended on a real interrupt (nine in ten on an approval, one in ten on a
clarification): the rows are the ones the engine commits when the run is
created over HTTP. Two things make a million affordable on two vCPUs:

- the populating engines open the file with ``synchronous=NORMAL``: each
  transaction is written and committed exactly as a server commits it, only
  not fsynced one by one (WAL fsyncs at checkpoints), since a fixture being
  built needs no crash safety; the servers measured afterwards use ``FULL``;
- above :data:`SHARD_MIN` runs, one process per CPU fills its own copy of the
  seeded file (same schema, same signing key) and the copies' rows are then
  appended to the database in one SQLite transaction per copy.

``python -m openwop_bridge.bench.populate DB COUNT TENANT`` fills one shard (the parent runs it).
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from openwop_bridge.bench import workflows
from openwop_bridge.bench.harness import Bench, Progress
from openwop_bridge.core.auth import Principal
from openwop_bridge.runtime.engine import Engine
from openwop_bridge.store.sqlite import SqliteStore

IN_FLIGHT = 256
CLARIFICATION_EVERY = 10
#: Below this many runs one process fills the file itself.
SHARD_MIN = 20_000
#: The tables that hold runs, copied from each shard (``audit`` without its own ids).
MERGED = (
    "INSERT INTO main.runs SELECT * FROM shard.runs",
    "INSERT INTO main.events SELECT * FROM shard.events",
    "INSERT INTO main.interrupts SELECT * FROM shard.interrupts",
    "INSERT OR IGNORE INTO main.kv SELECT * FROM shard.kv",
    "INSERT INTO main.audit(tenant, at, principal, action, resource, run_id, details) "
    "SELECT tenant, at, principal, action, resource, run_id, details FROM shard.audit ORDER BY id",
)


async def fill(db: str, runs: int, tenant: str, progress: Progress, label: str) -> None:
    """Create ``runs`` runs in ``tenant`` on ``db`` and wait until every one is suspended."""
    engine = Engine(SqliteStore(db, synchronous="NORMAL"), workflows=workflows.definitions())
    await engine.start()
    principal = Principal("bench", tenant=tenant)
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
    try:
        for i in range(runs):
            await window.acquire()
            clarify = i % CLARIFICATION_EVERY == CLARIFICATION_EVERY - 1
            await engine.create_run(principal, workflows.CLARIFICATION if clarify else workflows.APPROVAL)
            progress.tick("scale", i + 1, runs, f"runs created in {label}")
        if runs:
            await asyncio.wait_for(all_suspended.wait(), 300)
        if failures:
            raise RuntimeError(failures[0])
    finally:
        await engine.stop()


@dataclass(frozen=True)
class Filled:
    """What populating took: wall-clock seconds, and CPU seconds of every process and thread that did it."""

    wall_s: float
    cpu_s: float


def _cpu_s() -> float:
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


async def populate(bench: Bench, db: str, runs: int, label: str) -> Filled:
    """Fill ``db`` with ``runs`` suspended runs of the benchmark tenant.

    CPU time counts this process (the merge, an in-process fill) and the shard
    processes, reaped meanwhile: on a busy machine it says what the wall clock
    would be on an idle one.
    """
    started, cpu = time.perf_counter(), _cpu_s()
    await _populate(bench, db, runs, label)
    return Filled(time.perf_counter() - started, _cpu_s() - cpu)


async def _populate(bench: Bench, db: str, runs: int, label: str) -> None:
    shards = min(os.cpu_count() or 1, max(1, runs // SHARD_MIN))
    if shards == 1:
        await fill(db, runs, bench.tenant, bench.progress, label)
        return
    await fill(db, 0, bench.tenant, bench.progress, label)  # the schema and the signing key, shared by the shards
    paths = [f"{db}.shard{i}" for i in range(shards)]
    await asyncio.to_thread(copy_seed, db, paths)
    counts = [runs // shards + (1 if i < runs % shards else 0) for i in range(shards)]
    bench.progress.say("scale", f"{shards} processes fill {label} ({', '.join(f'{c:,}' for c in counts)} runs)")
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-m", "openwop_bridge.bench.populate", path, str(count), bench.tenant, f"{label} shard {i}"
        )
        for i, (path, count) in enumerate(zip(paths, counts, strict=True))
    ]
    codes = [await proc.wait() for proc in procs]
    if any(codes):
        raise RuntimeError(f"populating {label} failed (exit statuses {codes})")
    bench.progress.say("scale", f"merging {shards} shards into {label}")
    await asyncio.to_thread(merge, db, paths)


def merge(db: str, shards: list[str]) -> None:
    """Append every shard's runs to ``db`` (one transaction per shard), then delete the shard."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-262144")  # 256 MiB: the indexes being extended stay in memory
        for path in shards:
            conn.execute("ATTACH DATABASE ? AS shard", (path,))
            conn.execute("BEGIN IMMEDIATE")
            for statement in MERGED:
                conn.execute(statement)
            conn.execute("COMMIT")
            conn.execute("DETACH DATABASE shard")
            remove(path)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def copy_seed(db: str, paths: list[str]) -> None:
    """Copy the seeded database (and its WAL, if any) to every shard path."""
    for path in paths:
        for suffix in ("", "-wal"):
            if Path(db + suffix).exists():
                shutil.copyfile(db + suffix, path + suffix)


def remove(*dbs: str) -> None:
    """Delete SQLite databases with their WAL, shared-memory and lock files."""
    for db in dbs:
        for suffix in ("", "-wal", "-shm", ".lock"):
            Path(db + suffix).unlink(missing_ok=True)


def approval_runs(db: str, count: int) -> list[str]:
    """The ids of ``count`` runs waiting on an approval (the ones the scenario answers)."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT run_id FROM interrupts WHERE status='pending' AND kind='approval' "
            "ORDER BY requested_at DESC, interrupt_id DESC LIMIT ?",
            (count,),
        ).fetchall()
    finally:
        conn.close()
    if len(rows) < count:
        raise RuntimeError(f"only {len(rows)} approval runs in {db}, {count} wanted")
    return [r[0] for r in rows]


def disk_bytes(db: str) -> int:
    """The database's size on disk: the file with its WAL."""
    return sum(Path(db + suffix).stat().st_size for suffix in ("", "-wal") if Path(db + suffix).exists())


def main(argv: list[str]) -> int:
    """Fill one shard: ``DB COUNT TENANT LABEL``."""
    db, count, tenant, label = argv
    asyncio.run(fill(db, int(count), tenant, Progress(interval_s=10), label))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
