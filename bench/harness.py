"""The benchmark runner: scenarios, alternation with peers, medians, progress, table and JSON.

A scenario family (one module each) measures one or more figures and returns a
:class:`Result` per figure. Where a peer exists, bridge and peer iterations
alternate inside the same process run (bridge first on even iterations, peer
first on odd ones) so that machine noise and thermal drift hit both; every
figure is the median of its samples. Targets are reported, never enforced.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeVar

import orjson

from openwop_bridge.bench.options import add_arguments
from openwop_bridge.bench.results import CpuSnapshot, Result, median

if TYPE_CHECKING:
    from openwop_bridge.bench.profiles import Profiler

N = TypeVar("N", int, float)

Sampler = Callable[[], Awaitable[float]]


class Progress:
    """Progress lines on stderr: one line per step, and rate-limited counters."""

    def __init__(self, stream: IO[str] | None = None, interval_s: float = 1.0) -> None:
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self._last = 0.0
        self._started = time.perf_counter()

    def say(self, scope: str, text: str) -> None:
        """Print one progress line."""
        elapsed = time.perf_counter() - self._started
        print(f"[{elapsed:7.1f}s] {scope:<12} {text}", file=self.stream, flush=True)

    def tick(self, scope: str, done: int, total: int, text: str = "") -> None:
        """Print ``done/total`` at most once per interval (and always at the end)."""
        now = time.perf_counter()
        if done < total and now - self._last < self.interval_s:
            return
        self._last = now
        self.say(scope, f"{done}/{total} {text}".rstrip())


@dataclass
class Bench:
    """What every scenario gets: settings, a work folder and progress output."""

    quick: bool
    workdir: Path
    progress: Progress
    db: str | None = None
    instances: int = 1
    #: The scale scenario's size (``--pending``); None for its default.
    pending: int | None = None
    #: With ``--sweep DIR``: the scale scenario also runs at 10,000 and 100,000 and writes its table there.
    sweep: Path | None = None
    profiler: Profiler = field(default_factory=lambda: _profiler(None))
    tenant: str = field(default_factory=lambda: f"bench-{secrets.token_hex(4)}")
    api_key: str = field(default_factory=lambda: f"owb_bench_{secrets.token_hex(16)}")

    @property
    def profiling(self) -> bool:
        """True with ``--profile``: scenarios then repeat their bridge workload under py-spy."""
        return self.profiler.folder is not None

    def scale(self, full: N, quick: N) -> N:
        """A sample count (or duration) for the current mode."""
        return quick if self.quick else full

    def path(self, name: str) -> Path:
        """A fresh path in the work folder."""
        return self.workdir / name

    @property
    def key_spec(self) -> str:
        """The ``--api-key`` given to bridge servers: every scope, this run's tenant."""
        return f"bench={self.api_key}@{self.tenant}"

    @property
    def auth(self) -> dict[str, str]:
        """The Authorization header for bridge servers."""
        return {"Authorization": f"Bearer {self.api_key}"}


async def alternate(
    bench: Bench,
    scope: str,
    bridge: Sampler,
    peer: Sampler | None,
    *,
    n: int,
    warmup: int,
    labels: tuple[str, str] = ("bridge", "peer"),
) -> tuple[list[float], list[float]]:
    """Run ``warmup`` unrecorded then ``n`` recorded iterations of each sampler, alternating.

    On even iterations the bridge goes first, on odd ones the peer, so neither
    always inherits the other's leftovers (caches, a pending fsync, GC debt).
    Returns the recorded samples of each side (``labels`` name them in progress lines).
    """
    bridge_samples: list[float] = []
    peer_samples: list[float] = []
    for i in range(warmup + n):
        order: list[tuple[Sampler, list[float]]] = [(bridge, bridge_samples)]
        if peer is not None:
            order.append((peer, peer_samples))
            if i % 2:
                order.reverse()
        for sampler, into in order:
            value = await sampler()
            if i >= warmup:
                into.append(value)
        if i >= warmup:
            shown = f"median {labels[0]} {_ms(median(bridge_samples))}"
            if peer is not None:
                shown += f", {labels[1]} {_ms(median(peer_samples))}"
            bench.progress.tick(scope, i + 1 - warmup, n, shown)
    return bridge_samples, peer_samples


async def measure_cycles(
    bench: Bench,
    scope: str,
    name: str,
    bridge_pid: int,
    bridge: Sampler,
    peer: Sampler | None,
    *,
    n: int,
    warmup: int,
) -> tuple[list[float], list[float]]:
    """:func:`alternate` the two samplers; with ``--profile``, then repeat the bridge's ``n`` cycles under py-spy."""
    bench.progress.say(scope, f"{warmup} warm-up + {n} cycles each, alternating")
    samples = await alternate(bench, scope, bridge, peer, n=n, warmup=warmup)
    if bench.profiling:
        bench.progress.say(scope, f"profiling {n} bridge cycles")
        async with bench.profiler.record(name, bridge_pid):
            for _ in range(n):
                await bridge()
    return samples


def _profiler(folder: Path | None) -> Profiler:
    # Imported here so that ``python -m openwop_bridge.bench.profiles`` does not find itself half-imported.
    from openwop_bridge.bench.profiles import Profiler

    return Profiler(folder)


ScenarioRun = Callable[[Bench, frozenset[str]], Awaitable[list[Result]]]


@dataclass(frozen=True, eq=False)
class Scenario:
    """A family of figures measured together (they share servers and data)."""

    family: str
    units: dict[str, str]  # figure name -> unit, in report order
    module: str
    title: str

    @property
    def names(self) -> tuple[str, ...]:
        """The figures this family measures."""
        return tuple(self.units)

    async def run(self, bench: Bench, wanted: frozenset[str]) -> list[Result]:
        """Import the family's module and measure (lazily: peers are optional dependencies)."""
        import importlib

        module = importlib.import_module(self.module)
        runner: ScenarioRun = module.run
        return await runner(bench, wanted)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "engine",
        {"engine_roundtrip": "ms", "durable_commit_ms": "ms"},
        "openwop_bridge.bench.engine",
        "engine round trip (in process)",
    ),
    Scenario(
        "http", {"http_roundtrip": "ms", "http_throughput": "cycles/s"}, "openwop_bridge.bench.http", "HTTP round trip"
    ),
    Scenario(
        "http_bearer",
        {"http_roundtrip_bearer": "x"},
        "openwop_bridge.bench.http_bearer",
        "HTTP round trip with a provider's token over with a key (Node.js oidc-provider)",
    ),
    Scenario("agui", {"agui_roundtrip": "ms"}, "openwop_bridge.bench.agui", "AG-UI round trip"),
    Scenario("a2a", {"a2a_roundtrip": "ms"}, "openwop_bridge.bench.a2a", "A2A round trip"),
    Scenario(
        "scale",
        {
            "pending_rss_mb": "MiB",
            "inbox_page_ms": "ms",
            "resolve_at_scale_ratio": "x",
            "restart_s": "s",
            "disk_bytes_per_pending_run": "B",
        },
        "openwop_bridge.bench.scale",
        "suspended runs (--pending, 100,000 by default)",
    ),
    Scenario(
        "conversation", {"conversation_turn_ratio": "x"}, "openwop_bridge.bench.conversation", "long conversation"
    ),
    Scenario("mcp", {"mcp_roundtrip": "ms"}, "openwop_bridge.bench.mcp_roundtrip", "MCP round trip (2026-07-28)"),
    Scenario(
        "langgraph_client",
        {"langgraph_client_roundtrip": "ms"},
        "openwop_bridge.bench.langgraph_client",
        "LangGraph client round trip (langgraph_sdk)",
    ),
    Scenario(
        "commits",
        {"commits_per_cycle": "commits", "commits_per_cycle_at_16": "commits", "commits_per_cycle_postgres": "commits"},
        "openwop_bridge.bench.commits",
        "durable commits per cycle",
    ),
    Scenario(
        "notify",
        {"notify_drain": "notices/s"},
        "openwop_bridge.bench.notify_drain",
        "outbox drain (notices to local receivers)",
    ),
    Scenario(
        "notify_cycle",
        {"engine_roundtrip_notify": "x", "commits_per_cycle_notify": "commits"},
        "openwop_bridge.bench.notify_cycle",
        "engine round trip with a notify route (in process)",
    ),
    Scenario(
        "record",
        {"engine_roundtrip_record": "x", "commits_per_cycle_record": "commits", "audit_export_peak_mib": "MiB"},
        "openwop_bridge.bench.record_cycle",
        "engine round trip with the decision record, and its export's memory (in process)",
    ),
)

FAMILY_OF = {name: s for s in SCENARIOS for name in s.names}


def select(only: Iterable[str]) -> dict[Scenario, frozenset[str]]:
    """The scenarios and figures named by ``--only`` (family or figure names); all when empty."""
    wanted: dict[Scenario, set[str]] = {}
    names = [n.strip() for item in only for n in item.split(",") if n.strip()]
    if not names:
        return {s: frozenset(s.names) for s in SCENARIOS}
    families = {s.family: s for s in SCENARIOS}
    for name in names:
        if name in families:
            wanted.setdefault(families[name], set()).update(families[name].names)
        elif name in FAMILY_OF:
            wanted.setdefault(FAMILY_OF[name], set()).add(name)
        else:
            known = sorted([*families, *FAMILY_OF])
            raise ValueError(f"unknown scenario {name!r}; choose from: {', '.join(known)}")
    return {s: frozenset(wanted[s]) for s in SCENARIOS if s in wanted}


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{_fmt(seconds * 1000)} ms"


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def table(results: Sequence[Result]) -> str:
    """The results as a Markdown table (it reads the same on a terminal), with notes below."""
    header = ["scenario", "bridge", "peer", "unit", "ratio", "target", "met", "n"]
    rows = []
    for r in results:
        met = r.target.met(r) if r.target else None
        rows.append(
            [
                r.name,
                "error" if r.error else _fmt(r.bridge),
                _fmt(r.peer),
                r.unit,
                _fmt(r.ratio),
                r.target.describe() if r.target else "-",
                "-" if met is None else ("yes" if met else "no"),
                str(r.n),
            ]
        )
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *(line(r) for r in rows)]
    notes = [f"- {r.name}: {r.error}" for r in results if r.error]
    notes += [f"- {r.name}: {r.note}" for r in results if r.note and not r.error]
    if notes:
        out += ["", *notes]
    return "\n".join(out)


async def run_selected(bench: Bench, selected: dict[Scenario, frozenset[str]]) -> list[Result]:
    """Measure every selected scenario; a failing one is reported, the others still run.

    SIGTERM cancels the run like Ctrl-C does, so the servers it started are stopped.
    """
    task = asyncio.current_task()
    if task is not None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    results: list[Result] = []
    for scenario, wanted in selected.items():
        bench.progress.say(scenario.family, f"-- {scenario.title}")
        started, cpu = time.perf_counter(), CpuSnapshot.take()
        try:
            produced = await scenario.run(bench, wanted)
        except Exception as exc:
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            bench.progress.say(scenario.family, f"FAILED: {detail}")
            if os.environ.get("OPENWOP_BENCH_TRACEBACK"):
                traceback.print_exc()
            produced = [Result(name, unit, None, error=detail) for name, unit in scenario.units.items()]
        by_name = {r.name: r for r in produced}
        for name in scenario.names:
            if name in wanted and name in by_name:
                results.append(by_name[name])
        elapsed = time.perf_counter() - started
        bench.progress.say(scenario.family, f"done in {elapsed:.1f} s; {CpuSnapshot.take().others_since(cpu, elapsed)}")
    return results


def run(args: argparse.Namespace) -> int:
    """Run the benchmark described by parsed ``bench`` arguments; 1 if a scenario failed."""
    try:
        selected = select(args.only)
    except ValueError as exc:
        print(f"openwop-bridge bench: {exc}", file=sys.stderr)
        return 2
    if args.instances < 1:
        print("openwop-bridge bench: --instances must be at least 1", file=sys.stderr)
        return 2
    if args.pending is not None and args.pending < 200:
        print("openwop-bridge bench: --pending must be at least 200", file=sys.stderr)
        return 2
    try:
        profiler = _profiler(args.profile)
    except RuntimeError as exc:
        print(f"openwop-bridge bench: {exc}", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="openwop-bench-"))
    bench = Bench(
        quick=args.quick,
        workdir=workdir,
        progress=Progress(),
        db=args.db,
        instances=args.instances,
        pending=args.pending,
        sweep=args.sweep,
        profiler=profiler,
    )
    mode = "quick" if args.quick else "full"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    bench.progress.say("bench", f"{mode} run, {os.cpu_count()} CPUs, load average {load}, work folder {workdir}")
    before, started = CpuSnapshot.take(), time.perf_counter()
    try:
        results = asyncio.run(run_selected(bench, selected))
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("openwop-bridge bench: interrupted", file=sys.stderr)
        return 130
    finally:
        if args.keep:
            bench.progress.say("bench", f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    machine = CpuSnapshot.take().others_since(before, time.perf_counter() - started)
    if args.db and args.db.startswith(("postgresql://", "postgres://")):
        machine += " (the PostgreSQL server among them)"
    bench.progress.say("bench", machine)
    print(table(results))
    print(f"\n{mode} run; during it {machine}")
    if profiler.written:
        from openwop_bridge.bench.profiles import summarize

        summaries = "\n\n".join(summarize(path) for path in profiler.written)
        (args.profile / "summary.txt").write_text(summaries + "\n")
        bench.progress.say("bench", f"profiles in {args.profile} (summary.txt, *.speedscope.json)")
    if args.json:
        Path(args.json).write_bytes(
            orjson.dumps({r.name: r.to_json() for r in results}, option=orjson.OPT_INDENT_2) + b"\n"
        )
    return 1 if any(r.error for r in results) else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m openwop_bridge.bench``: the same as ``openwop-bridge bench``."""
    parser = argparse.ArgumentParser(prog="openwop-bridge bench", description="benchmarks against peers")
    add_arguments(parser)
    return run(parser.parse_args(argv))
