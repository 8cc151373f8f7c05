"""The benchmark harness keeps running: ``openwop-bridge bench --quick --json`` as CI runs it.

Structure and types only: the figures depend on the machine, so no test holds
them to a threshold.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openwop_bridge.bench import engine, langgraph_client, profiles
from openwop_bridge.bench.harness import SCENARIOS, select, table
from openwop_bridge.bench.results import Result, Target

FIGURES = {
    "engine_roundtrip": "ms",
    "durable_commit_ms": "ms",
    "http_roundtrip": "ms",
    "http_throughput": "cycles/s",
    "http_roundtrip_bearer": "x",
    "agui_roundtrip": "ms",
    "a2a_roundtrip": "ms",
    "pending_rss_mb": "MiB",
    "inbox_page_ms": "ms",
    "resolve_at_scale_ratio": "x",
    "restart_s": "s",
    "disk_bytes_per_pending_run": "B",
    "conversation_turn_ratio": "x",
    "mcp_roundtrip": "ms",
    "langgraph_client_roundtrip": "ms",
    "commits_per_cycle": "commits",
    "commits_per_cycle_at_16": "commits",
    "commits_per_cycle_postgres": "commits",
    "notify_drain": "notices/s",
    "engine_roundtrip_notify": "x",
    "commits_per_cycle_notify": "commits",
    "engine_roundtrip_record": "x",
    "commits_per_cycle_record": "commits",
    "audit_export_peak_mib": "MiB",
}
#: Measured only with ``--db postgresql://…``.
ON_POSTGRES = {"commits_per_cycle_postgres"}
#: Measured only on SQLite (without ``--db``).
ON_SQLITE = {"durable_commit_ms"}


def _installed(*modules: str) -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except ModuleNotFoundError:
        return False


#: Figures measured against a peer; the peers come with the ``bench`` extra, which scripts/test installs,
#: except ``langgraph dev``, which has a venv of its own (``make bench-peer``) and is peered only where it is.
PEERED = {"engine_roundtrip", "agui_roundtrip"} | (
    set() if langgraph_client.peer_missing() else {"langgraph_client_roundtrip"}
)
PEER_MODULES = ("langgraph.checkpoint.sqlite", "ag_ui_langgraph", "fastapi", "aiosqlite")


def _bench(*args: str, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("openwop-bridge")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "openwop_bridge"]
    return subprocess.run([*command, "bench", *args], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.slow
def test_quick_run_reports_every_figure(tmp_path: Path) -> None:
    if not _installed(*PEER_MODULES):
        pytest.fail("the benchmark peers are missing: pip install -e '.[bench]' (scripts/test does)", pytrace=False)
    out = tmp_path / "openwop_bridge.bench.json"
    proc = _bench("--quick", "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    report = json.loads(out.read_text())
    assert set(report) == set(FIGURES) - ON_POSTGRES
    scale = {n for s in SCENARIOS if s.family == "scale" for n in s.names}
    for name, entry in report.items():
        keys = {"bridge", "peer", "unit", "ratio", "n"}
        assert set(entry) == (keys | {"pending_runs"} if name in scale else keys), name
        assert name not in scale or entry["pending_runs"] == 2_000, name
        assert entry["unit"] == FIGURES[name]
        assert isinstance(entry["bridge"], int | float), name
        assert isinstance(entry["n"], int) and entry["n"] >= 1, name
        if name in PEERED:
            assert isinstance(entry["peer"], int | float) and isinstance(entry["ratio"], int | float), name
        else:
            assert entry["peer"] is None and entry["ratio"] is None, name
    header = proc.stdout.splitlines()[0]
    assert header.split("|")[1].strip() == "scenario" and "target" in header
    assert all(name in proc.stdout for name in set(FIGURES) - ON_POSTGRES)
    assert "-- engine round trip" in proc.stderr


def test_without_node_the_bearer_figure_is_an_error_row(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    proc = _bench("--quick", "--only", "http_roundtrip_bearer", "--json", str(out), timeout=120, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-4000:]
    entry = json.loads(out.read_text())["http_roundtrip_bearer"]
    assert entry["bridge"] is None and "Node.js is needed" in entry["error"]
    assert "| error " in proc.stdout


def test_the_engine_note_says_what_a_cycle_at_the_target_leaves_beside_its_two_commits() -> None:
    note = engine.budget_note(2.0, 5.0, 0.25)
    assert note is not None
    assert "two durable commits alone take 0.50 ms of the 2.00 ms cycle" in note
    assert "a cycle at ratio 0.25 (1.25 ms) would leave 0.75 ms for everything else" in note
    assert engine.budget_note(2.0, None, 0.25) is None and engine.budget_note(2.0, 5.0, None) is None


def test_only_takes_families_figures_and_comma_lists() -> None:
    chosen = select(["http_roundtrip", "engine,scale"])
    assert {s.family: set(w) for s, w in chosen.items()} == {
        "engine": {"engine_roundtrip", "durable_commit_ms"},
        "http": {"http_roundtrip"},
        "scale": {
            "pending_rss_mb",
            "inbox_page_ms",
            "resolve_at_scale_ratio",
            "restart_s",
            "disk_bytes_per_pending_run",
        },
    }
    assert {n for s in SCENARIOS for n in s.names} == set(FIGURES)
    with pytest.raises(ValueError, match="unknown scenario 'nope'"):
        select(["nope"])


def test_json_entry_and_table_of_a_failed_figure() -> None:
    ok = Result("engine_roundtrip", "ms", 2.0, 8.0, n=5, target=Target("<=", 0.25, on_ratio=True))
    failed = Result("agui_roundtrip", "-", None, error="the bridge does not serve POST /agui/x")
    assert ok.to_json() == {"bridge": 2.0, "peer": 8.0, "unit": "ms", "ratio": 0.25, "n": 5}
    assert failed.to_json()["error"].startswith("the bridge does not serve")
    text = table([ok, failed])
    assert "| yes " in text and "| error " in text and "- agui_roundtrip: the bridge does not serve" in text


def test_a_receiver_tally_reports_lost_and_doubled_notices() -> None:
    from openwop_bridge.bench.receivers import Tally

    def tally(*ids: str) -> Tally:
        t = Tally(expected=3)
        for i, notice in enumerate(ids):
            t.add(notice, float(i))
        return t

    assert tally("a", "b", "c").problem() is None
    assert tally("a", "b", "c").finished_at == 2.0
    assert tally("a", "b").problem() == "3 owed, 2 delivered, 0 more than once"
    doubled = tally("a", "b", "b", "c")
    assert doubled.problem() == "3 owed, 3 delivered, 1 more than once" and doubled.finished_at == 2.0


def test_a_timed_figure_is_the_median_of_each_side_in_milliseconds() -> None:
    both = Result.timed("agui_roundtrip", [0.001, 0.003, 0.002], [0.004, 0.005, 0.003], target=Target("<=", 5))
    assert (both.unit, both.bridge, both.peer, both.n, both.ratio) == ("ms", 2.0, 4.0, 3, 0.5)
    alone = Result.timed("a2a_roundtrip", [0.007], note="no peer")
    assert (alone.bridge, alone.peer, alone.n, alone.target, alone.note) == (7.0, None, 1, None, "no peer")
    assert Result.timed("engine_roundtrip", [], []).to_json() == {
        "bridge": None,
        "peer": None,
        "unit": "ms",
        "ratio": None,
        "n": 0,
    }


def test_unknown_names_and_unshareable_stores_are_refused(tmp_path: Path) -> None:
    assert _bench("--only", "nope", timeout=60).returncode == 2
    out = tmp_path / "openwop_bridge.bench.json"
    proc = _bench("--quick", "--only", "http_roundtrip", "--instances", "2", "--json", str(out), timeout=60)
    assert proc.returncode == 1
    assert "needs a store several servers can share" in json.loads(out.read_text())["http_roundtrip"]["error"]


def test_sweep_writes_a_table_its_rows_and_a_plot(tmp_path: Path) -> None:
    from openwop_bridge.bench.populate import Filled
    from openwop_bridge.bench.scale import Point
    from openwop_bridge.bench.sweep import write

    def point(runs: int, rss: float) -> Point:
        latencies = ([0.002], [0.001], [0.004, 0.006], [0.005], [0.5, 0.7], [0.5])
        return Point(runs, Filled(runs / 500, runs / 250), runs * 3_000, rss, rss, *latencies)

    md, rows, plot = write(tmp_path / "sweep", [point(100_000, 90.0), point(10_000, 80.0)])
    assert md.read_text().splitlines()[2].startswith("| 10,000 | 80 | 2 | 5 | 0.6 | 1 | 3,000 | 500 | 4 |")
    assert [r["pending_runs"] for r in json.loads(rows.read_text())] == [10_000, 100_000]
    text = plot.read_text()
    assert text.startswith("<svg") and text.count("<polyline") == 4 and ">100k<" in text


def test_pending_below_the_scenario_minimum_is_refused() -> None:
    proc = _bench("--only", "scale", "--pending", "10", timeout=60)
    assert proc.returncode == 2 and "--pending must be at least 200" in proc.stderr


def test_langgraph_client_figure_is_the_bridge_alone_without_langgraph_dev(tmp_path: Path) -> None:
    out = tmp_path / "openwop_bridge.bench.json"
    env = os.environ | {langgraph_client.PEER_ENV_VAR: str(tmp_path / "no-such" / "langgraph")}
    proc = _bench("--quick", "--only", "langgraph_client", "--json", str(out), timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    entry = json.loads(out.read_text())["langgraph_client_roundtrip"]
    assert isinstance(entry["bridge"], int | float) and entry["bridge"] > 0
    assert entry["peer"] is None and entry["ratio"] is None and entry["n"] >= 1
    assert f"peer not installed (no langgraph dev at {tmp_path}/no-such/langgraph)" in proc.stdout


def test_langgraph_dev_runs_with_tracing_analytics_and_version_check_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openwop_bridge.bench.harness import Bench, Progress

    for name in langgraph_client.DROPPED_ENV:
        monkeypatch.setenv(name, "set-by-the-caller")
    monkeypatch.setenv("LANGSMITH_TRACING", "true")

    bench = Bench(quick=True, workdir=tmp_path, progress=Progress())
    server = langgraph_client.peer_server(bench, tmp_path / "langgraph")
    assert server.env is not None and server.cwd == tmp_path / "langgraph-dev"
    assert server.env["LANGGRAPH_CLI_NO_ANALYTICS"] == "1" and server.env["LANGGRAPH_NO_VERSION_CHECK"] == "true"
    assert server.env["LANGSMITH_TRACING"] == "false" and server.env["LANGCHAIN_TRACING_V2"] == "false"
    assert not set(langgraph_client.DROPPED_ENV) & set(server.env)
    assert server.command[server.command.index("--host") + 1] == "127.0.0.1"
    config = json.loads((tmp_path / "langgraph-dev" / "langgraph.json").read_text())
    assert config["graphs"]["bench"].endswith("bench/langgraph_peer.py:graph")


@pytest.mark.slow
@pytest.mark.postgres
def test_engine_round_trip_on_postgresql_runs_against_postgres_saver(pg_url: str, tmp_path: Path) -> None:
    if not _installed("langgraph.checkpoint.postgres"):
        pytest.fail("the PostgreSQL peer is missing: pip install -e '.[bench]'", pytrace=False)
    out = tmp_path / "openwop_bridge.bench.json"
    proc = _bench("--quick", "--only", "engine", "--db", pg_url, "--json", str(out), timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    entry = json.loads(out.read_text())["engine_roundtrip"]
    assert isinstance(entry["bridge"], int | float) and isinstance(entry["peer"], int | float), entry
    assert isinstance(entry["ratio"], int | float) and entry["n"] >= 1, entry
    assert "the peer on LangGraph's PostgresSaver" in proc.stdout
    assert not ON_SQLITE & set(json.loads(out.read_text())), "a bare SQLite commit says nothing about PostgreSQL"


def test_profiling_finds_py_spy_beside_the_interpreter_when_it_is_not_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `.venv/bin/openwop-bridge bench --profile DIR` from a shell whose PATH lacks the venv's bin.
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert profiles.Profiler(tmp_path).executable == str(Path(sys.executable).parent / "py-spy")
