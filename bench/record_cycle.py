"""What the decision record costs: the engine cycle with it over the cycle without it, and an export's memory.

- ``engine_roundtrip_record``: two engines, each on its own SQLite file (``synchronous=FULL``), run the
  ``engine_roundtrip`` cycle (:class:`~bench.engine.EngineCycles`: one approval created, suspended,
  answered, completed), alternating; one appends and signs a record for each decision, the other was made
  with ``EngineConfig(decision_record=False)``. The figure is the median cycle with the record over the
  median without it (target ≤ 1.1). Every recorded cycle must have appended exactly one record.
- ``commits_per_cycle_record``: durable commits per cycle with the record (``Store.commits``; target ≤ 2:
  the record rides in the decision's transaction).
- ``audit_export_peak_mib``: the most memory Python held (``tracemalloc``) while exporting
  :data:`EXPORT_RECORDS` records as JSON Lines from the store
  (:func:`~openwop_bridge.runtime.decision_records.export_lines`), counted from before the export; the note
  says the same for a tenth of them, so a bounded export shows the same figure for both. The records are
  real (signed and chained by the store's own plan), written a thousand per transaction.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

from openwop_bridge.bench import workflows
from openwop_bridge.bench.commits import PER_CYCLE_TARGET
from openwop_bridge.bench.engine import EngineCycles
from openwop_bridge.bench.harness import Bench, alternate
from openwop_bridge.bench.results import Result, Target, median
from openwop_bridge.core.decision_record import DecisionDraft, digest
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.runtime.decision_records import export_lines
from openwop_bridge.runtime.engine import Engine
from openwop_bridge.store.plan_records import with_records
from openwop_bridge.store.sqlite import SqliteStore
from openwop_bridge.store.steps import Plan, Recorded

NAME = "engine_roundtrip_record"
COMMITS = "commits_per_cycle_record"
EXPORT = "audit_export_peak_mib"
TARGET = Target("<=", 1.1)
#: An export's peak may not exceed this many MiB, whatever its size.
EXPORT_TARGET = Target("<=", 16)
#: Records in the export measured.
EXPORT_RECORDS = 100_000
_PER_TRANSACTION = 1_000


class RecordedCycles:
    """An engine's cycles, each with the commits its store counted and the records it appended."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.cycles = EngineCycles(engine)
        #: ``(commits, records appended)`` of every cycle run, warm-up included.
        self.counts: list[tuple[int, int]] = []
        self._seen = 0

    async def cycle(self) -> float:
        """One cycle; returns the seconds it took."""
        store = self.engine.store
        commits = store.commits
        elapsed = await self.cycles.cycle()
        counted = store.commits - commits
        appended = await store.decision_records("default", 100, after=("default", self._seen))
        self._seen += len(appended)
        self.counts.append((counted, len(appended)))
        return elapsed

    def per_cycle(self, last: int) -> tuple[float, set[int]]:
        """Commits per cycle over the ``last`` cycles, and the numbers of records those cycles appended."""
        counted = self.counts[-last:]
        return sum(c for c, _ in counted) / len(counted), {r for _, r in counted}


async def _engine(bench: Bench, name: str, *, record: bool) -> Engine:
    engine = Engine(
        SqliteStore(bench.path(name)),
        workflows=workflows.definitions(),
        config=EngineConfig(decision_record=record),
    )
    await engine.start()
    return engine


async def _cycles(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    n = bench.scale(1000, 60)
    warmup = bench.scale(50, 10)
    engines = [
        await _engine(bench, "record-on.db", record=True),
        await _engine(bench, "record-off.db", record=False),
    ]
    try:
        on, off = RecordedCycles(engines[0]), RecordedCycles(engines[1])
        bench.progress.say("record", f"{warmup} warm-up + {n} cycles with and without the decision record")
        samplers: tuple[Callable[[], Awaitable[float]], ...] = (on.cycle, off.cycle)
        ours, theirs = await alternate(bench, "record", *samplers, n=n, warmup=warmup, labels=("record", "none"))
    finally:
        for engine in engines:
            await engine.stop()
    commits, appended = on.per_cycle(n)
    _, appended_off = off.per_cycle(n)
    if appended != {1} or appended_off != {0}:
        error = f"each cycle should append one record (and none without it): {sorted(appended)}, {sorted(appended_off)}"
        bench.progress.say("record", f"FAILED: {error}")
        return [Result(name, unit, None, n=n, error=error) for name, unit in ((NAME, "x"), (COMMITS, "commits"))]
    with_record, without = median(ours), median(theirs)
    assert with_record is not None and without is not None
    return [
        Result(
            NAME,
            "x",
            with_record / without,
            n=n,
            target=TARGET,
            note=(
                f"cycle with the decision record {with_record * 1000:.2f} ms, without {without * 1000:.2f} ms "
                "(medians, alternated, SQLite); one signed record appended per cycle"
            ),
        ),
        Result(COMMITS, "commits", commits, n=n, target=PER_CYCLE_TARGET, note="the record adds no commit"),
    ]


def _drafts(tenant: str, start: int, count: int) -> list[DecisionDraft]:
    shown, value = digest({"kind": "approval", "data": {"title": "Ship?"}}), digest({"action": "accept"})
    return [
        DecisionDraft(
            record_id=f"dec_{tenant}{start + i:012d}",
            decision="vote",
            by="bench",
            subject={"issuer": "urn:openwop-bridge:api-key", "subjectId": "bench", "lane": "api-key"},
            interrupt_id=f"int_{tenant}{start + i:012d}",
            node_id="gate",
            kind="approval",
            action="accept",
            assurance="bearer",
            shown_hash=shown,
            value_hash=value,
        )
        for i in range(count)
    ]


async def _fill(engine: Engine, tenant: str, total: int) -> None:
    """``total`` real records in ``tenant``'s chain, signed by the engine's key, a thousand per transaction."""
    store: Any = engine.store
    signer = store.decision_signer
    assert signer is not None
    for start in range(0, total, _PER_TRANSACTION):
        drafts = _drafts(tenant, start, min(_PER_TRANSACTION, total - start))

        def plan(drafts: list[DecisionDraft] = drafts, at: int = 1_700_000_000_000 + start) -> Plan[None]:
            yield Recorded(tenant, None, drafts, at)

        await store._plan(lambda plan=plan: with_records(signer, plan()))


async def _peak_mib(engine: Engine, tenant: str) -> tuple[float, int, float]:
    """Peak MiB held while exporting ``tenant``'s chain, the lines exported and the seconds it took."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    lines = 0
    started = time.perf_counter()
    async for line in export_lines(engine.store, tenant):
        lines += 1 if line.endswith(b"\n") else 0
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak / 2**20, lines, elapsed


async def _export(bench: Bench) -> Result:
    total = bench.scale(EXPORT_RECORDS, EXPORT_RECORDS // 10)
    engine = await _engine(bench, "record-export.db", record=True)
    try:
        bench.progress.say("record", f"writing {total} + {total // 10} signed records")
        await _fill(engine, "large", total)
        await _fill(engine, "small", total // 10)
        bench.progress.say("record", "exporting both chains")
        small, small_lines, _ = await _peak_mib(engine, "small")
        large, large_lines, seconds = await _peak_mib(engine, "large")
    finally:
        await engine.stop()
    if (large_lines, small_lines) != (total, total // 10):
        return Result(
            EXPORT, "MiB", None, error=f"exported {large_lines} and {small_lines} of {total} and {total // 10}"
        )
    return Result(
        EXPORT,
        "MiB",
        large,
        n=total,
        target=EXPORT_TARGET,
        note=(
            f"{total} records in {seconds:.1f} s ({total / seconds:.0f} records/s); "
            f"{total // 10} records peaked at {small:.2f} MiB"
        ),
    )


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """The cycle ratio and commits per cycle, and the export's peak memory."""
    results: list[Result] = []
    if NAME in wanted or COMMITS in wanted:
        results += await _cycles(bench, wanted)
    if EXPORT in wanted:
        results.append(await _export(bench))
    return [r for r in results if r.name in wanted]
