"""Recorded run logs replayed: today's engine must produce what it produced when they were recorded.

Each file under ``logs/`` holds a scenario (workflow, inputs, the answers and
cancels people gave) and the logs and snapshot the engine wrote then. Three
replays check them:

- driving the scenario again yields the same logs and snapshot (ids and clock
  readings normalised);
- a ``replay`` fork of the new run, which asks nobody, ends where the recording did;
- the pure folds over the recorded log (conversation channels, quorum tallies)
  give what the recorded snapshot shows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge import Engine
from openwop_bridge.core.approvals import quorum_label, tally
from openwop_bridge.core.decisions.exchange import fold_channels
from openwop_bridge.core.records import TERMINAL_RUN_STATUSES
from tests.recorded.driver import PEOPLE, drive, normalise, outcome, settled

LOGS = Path(__file__).parent / "logs"
RECORDINGS = sorted(LOGS.glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def test_the_recordings_are_there_and_small() -> None:
    names = {p.stem for p in RECORDINGS}
    assert {
        "approval-accepted",
        "approval-rejected-routed",
        "quorum-majority",
        "clarification",
        "conversation-three-turns",
        "subworkflow",
        "cancel-cascade",
    } <= names
    for path in RECORDINGS:
        assert path.stat().st_size < 50_000, path.name
        assert load(path)["name"] == path.stem


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
async def test_driving_the_scenario_again_gives_the_recorded_logs(engine: Engine, path: Path) -> None:
    doc = load(path)
    run_id = await drive(engine, doc["scenario"])
    now = await outcome(engine, run_id)
    recorded = doc["recorded"]
    assert [(r["workflowId"], r["status"]) for r in now["runs"]] == [
        (r["workflowId"], r["status"]) for r in recorded["runs"]
    ]
    for then_run, now_run in zip(recorded["runs"], now["runs"], strict=True):
        assert [e["type"] for e in now_run["events"]] == [e["type"] for e in then_run["events"]]
    # One name space for ids across the logs and the snapshot, so references between them must agree too.
    assert normalise(now) == normalise(recorded)


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
async def test_a_replay_fork_ends_where_the_recording_did(engine: Engine, path: Path) -> None:
    doc = load(path)
    snapshot = doc["recorded"]["snapshot"]
    source = await drive(engine, doc["scenario"])
    fork = await engine.fork_run(source, PEOPLE["alice"])
    if snapshot["status"] == "cancelled":
        # A cancel is not an answer in the log: the replay runs up to the question the source was cancelled at.
        await engine.wait_idle()
        assert await engine.open_interrupts(fork.run_id)
        await engine.cancel_run(fork.run_id, PEOPLE["alice"], "done")
    tree = await settled(engine, fork.run_id)
    assert all(r.status in TERMINAL_RUN_STATUSES for r in tree)
    snap = await engine.snapshot(fork.run_id, PEOPLE["alice"])
    assert snap["replayOf"] == source
    assert normalise({k: snap.get(k) for k in snapshot}) == normalise(snapshot)


def _events(doc: dict[str, Any], run: int = 0) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = doc["recorded"]["runs"][run]["events"]
    return events


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_the_conversation_fold_of_a_recorded_log_gives_its_channels(path: Path) -> None:
    doc = load(path)
    channels = doc["recorded"]["snapshot"]["channels"] or {}
    folded = fold_channels(_events(doc))
    assert {k: v for k, v in channels.items() if isinstance(v, list)} == {
        k: folded.get(k, []) for k, v in channels.items() if isinstance(v, list)
    }


def test_the_recorded_conversation_has_its_three_turns() -> None:
    doc = load(LOGS / "conversation-three-turns.json")
    turns = doc["recorded"]["snapshot"]["channels"]["transcript"]
    said = [t["content"] for t in turns if t["role"] == "user"]
    assert said == ["one", "two", "three"]


def test_the_recorded_quorum_tallies_to_its_outcome() -> None:
    doc = load(LOGS / "quorum-majority.json")
    events = _events(doc)
    data = next(e["payload"]["data"] for e in events if e["type"] == "interrupt.requested")
    resolved = next(e["payload"] for e in events if e["type"] == "interrupt.resolved")
    votes = resolved["resumeValue"]["votes"]
    assert [v["voter"] for v in votes] == ["bob", "carol", "dave", "alice"]
    for count in range(1, len(votes)):
        assert tally(data, votes[:count]).outcome == "pending"  # no earlier vote settled it
    final = tally(data, votes)
    assert (final.outcome, resolved["decision"]) == ("accepted", "approved")
    assert quorum_label(final) == resolved["resumeValue"]["quorum"]
