"""The benchmark harness keeps running: ``openwop-bridge bench --quick --json`` as CI runs it.

Structure and types only: the figures depend on the machine, so no test holds
them to a threshold.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.harness import SCENARIOS, Result, Target, select, table

FIGURES = {
    "engine_roundtrip": "ms",
    "http_roundtrip": "ms",
    "http_throughput": "cycles/s",
    "agui_roundtrip": "ms",
    "a2a_roundtrip": "ms",
    "pending_rss_mb": "MiB",
    "inbox_page_ms": "ms",
    "resolve_at_scale_ratio": "x",
    "restart_s": "s",
    "conversation_turn_ratio": "x",
    "mcp_roundtrip": "ms",
}


def _installed(*modules: str) -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except ModuleNotFoundError:
        return False


#: Figures measured against a peer; the peers come with the ``bench`` extra, which scripts/test installs.
PEERED = {"engine_roundtrip", "agui_roundtrip"}
PEER_MODULES = ("langgraph.checkpoint.sqlite", "ag_ui_langgraph", "fastapi", "aiosqlite")


def _bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("openwop-bridge")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "bridge"]
    return subprocess.run([*command, "bench", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_quick_run_reports_every_figure(tmp_path: Path) -> None:
    if not _installed(*PEER_MODULES):
        pytest.fail("the benchmark peers are missing: pip install -e '.[bench]' (scripts/test does)", pytrace=False)
    out = tmp_path / "bench.json"
    proc = _bench("--quick", "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    report = json.loads(out.read_text())
    assert set(report) == set(FIGURES)
    for name, entry in report.items():
        assert set(entry) == {"bridge", "peer", "unit", "ratio", "n"}, name
        assert entry["unit"] == FIGURES[name]
        assert isinstance(entry["bridge"], int | float), name
        assert isinstance(entry["n"], int) and entry["n"] >= 1, name
        if name in PEERED:
            assert isinstance(entry["peer"], int | float) and isinstance(entry["ratio"], int | float), name
        else:
            assert entry["peer"] is None and entry["ratio"] is None, name
    header = proc.stdout.splitlines()[0]
    assert header.split("|")[1].strip() == "scenario" and "target" in header
    assert all(name in proc.stdout for name in FIGURES)
    assert "-- engine round trip" in proc.stderr


def test_only_takes_families_figures_and_comma_lists() -> None:
    chosen = select(["http_roundtrip", "engine,scale"])
    assert {s.family: set(w) for s, w in chosen.items()} == {
        "engine": {"engine_roundtrip"},
        "http": {"http_roundtrip"},
        "scale": {"pending_rss_mb", "inbox_page_ms", "resolve_at_scale_ratio", "restart_s"},
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


def test_unknown_names_and_unshareable_stores_are_refused(tmp_path: Path) -> None:
    assert _bench("--only", "nope", timeout=60).returncode == 2
    out = tmp_path / "bench.json"
    proc = _bench("--quick", "--only", "http_roundtrip", "--instances", "2", "--json", str(out), timeout=60)
    assert proc.returncode == 1
    assert "needs a store several servers can share" in json.loads(out.read_text())["http_roundtrip"]["error"]


@pytest.mark.slow
@pytest.mark.postgres
def test_engine_round_trip_on_postgresql_runs_against_postgres_saver(pg_url: str, tmp_path: Path) -> None:
    if not _installed("langgraph.checkpoint.postgres"):
        pytest.fail("the PostgreSQL peer is missing: pip install -e '.[bench]'", pytrace=False)
    out = tmp_path / "bench.json"
    proc = _bench("--quick", "--only", "engine", "--db", pg_url, "--json", str(out), timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    entry = json.loads(out.read_text())["engine_roundtrip"]
    assert isinstance(entry["bridge"], int | float) and isinstance(entry["peer"], int | float), entry
    assert isinstance(entry["ratio"], int | float) and entry["n"] >= 1, entry
    assert "the peer on LangGraph's PostgresSaver" in proc.stdout
