"""Fewer b-trees and bytes written by each commit, and databases from before that keep what they hold.

An interrupt opened no longer writes ``interrupts_node`` (migration 8): a node's interrupts come
from the run's range of another index. A database written at schema version 7 keeps its events
and its interrupts are still found by node. An event's row keeps its document without what its
columns hold (run id, type, sequence); it is read back as it was committed, key for key and in
the same order, and documents stored whole before are read as they are.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import RunRecord
from openwop_bridge.store import open_store
from openwop_bridge.store.base import RunCommit, Store
from openwop_bridge.store.codec import INT_COLS, SQLITE, dumps, interrupt_params
from openwop_bridge.store.sqlite import SqliteStore
from tests import pg
from tests.store.schemas import postgres_at, sqlite_at
from tests.store.test_store_contract import claimed, draft, make_interrupt, make_run, started, store  # noqa: F401

#: The schema version before ``interrupts_node`` went.
BEFORE = 7
OLD_EVENT = "INSERT INTO events(run_id, seq, type, node_id, visit, cmd, doc) VALUES (%s,%s,%s,%s,%s,%s,%s::json)"
OLD_INTERRUPT = f"INSERT INTO interrupts({INT_COLS}) VALUES ({','.join(['%s'] * len(INT_COLS.split(',')))})"
OLD_RUN = (
    "INSERT INTO runs(run_id, tenant, workflow_id, status, created_at, updated_at, spec, state, next_seq) "
    "VALUES (%s,%s,%s,%s,%s,%s,%s::json,%s::json,4)"
)


def _event(run: RunRecord, seq: int) -> tuple[object, ...]:
    doc = {"eventId": f"evt_{run.run_id}_{seq}", "runId": run.run_id, "type": "node.started", "sequence": seq}
    return (run.run_id, seq, "node.started" if seq % 2 else "run.started", "gate", 0, None, dumps(doc))


def _old_rows(runs: list[RunRecord]) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """Events of both runs written interleaved and out of order; interrupts at two nodes of the first run."""
    events = [_event(runs[i % 2], seq) for seq in (3, 0, 2, 1) for i in (1, 0)]
    width = len(INT_COLS.split(","))
    interrupts = [
        interrupt_params(make_interrupt(runs[0], node, visit=visit, key=f"{node}:{visit}"))[:width]
        for node, visit in (("gate", 1), ("other", 0), ("gate", 0))
    ]
    return events, interrupts


async def _old_store(url: str | None, tmp_path: Path, runs: list[RunRecord]) -> Store:
    """A store on a database written at schema version ``BEFORE`` (PostgreSQL at ``url``, else SQLite), not opened."""
    events, interrupts = _old_rows(runs)
    run_rows = [(r.run_id, r.tenant, r.workflow_id, r.status, 1, 1, dumps(r.spec), dumps(r.state)) for r in runs]
    if url is None:
        path = tmp_path / "old.db"
        with sqlite_at(path, BEFORE) as conn:
            for sql, rows in ((OLD_RUN, run_rows), (OLD_EVENT, events), (OLD_INTERRUPT, interrupts)):
                conn.executemany(SQLITE.sql(sql), rows)
        return SqliteStore(path)
    postgres_at(url, BEFORE)
    for sql, rows in ((OLD_RUN, run_rows), (OLD_EVENT, events), (OLD_INTERRUPT, interrupts)):
        for row in rows:
            pg.execute(url, sql, *row)
    return open_store(url)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_a_database_from_schema_7_keeps_its_events_and_its_interrupts_by_node(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    runs = [make_run(tenant="acme"), make_run(tenant="acme")]
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    old = await _old_store(url, tmp_path, runs)
    await old.open()
    try:
        for run in runs:
            got = await old.read_events(run.run_id)
            assert [d["sequence"] for d in got] == [0, 1, 2, 3]
            assert got == [{"eventId": f"evt_{run.run_id}_{s}", "runId": run.run_id, "type": "node.started",
                            "sequence": s} for s in range(4)]  # fmt: skip
            assert [d["sequence"] for d in await old.events_of_types(run.run_id, ["run.started"])] == [0, 2]
        assert [(i.visit, i.key) for i in await old.node_interrupts(runs[0].run_id, "gate")] == [
            (0, "gate:0"),
            (1, "gate:1"),
        ]
        found = await old.interrupt_at_slot(runs[0].run_id, "other", 0, 0)
        assert found is not None and found.key == "other:0"
        # A step after the migration appends after the events it found.
        own = await claimed(old, runs[0])
        await old.commit(RunCommit(runs[0].run_id, "A", own.epoch, 3_000, events=[draft("node.completed")]))
        got = await old.read_events(runs[0].run_id)
        assert [(d["sequence"], d["type"]) for d in got[3:]] == [(3, "node.started"), (4, "node.completed")]
    finally:
        await old.close()


async def test_the_migration_drops_interrupts_node_and_keeps_a_runs_sequence_unique(tmp_path: Path) -> None:
    runs = [make_run(), make_run()]
    old = await _old_store(None, tmp_path, runs)
    await old.open()
    await old.close()
    with sqlite3.connect(tmp_path / "old.db") as conn:
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='index'")}
        assert "interrupts_node" not in indexes and "events_activation" in indexes
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(SQLITE.sql(OLD_EVENT), _event(runs[0], 2))


async def test_an_event_reads_back_as_committed_though_its_row_keeps_less(store: Store) -> None:  # noqa: F811
    run = await started(store)
    own = await claimed(store, run)
    drafts = [
        EventDraft("evt_a", "node.started", {"nodeId": "gate", "n": [1, "ü"]}, 1_000, node_id="gate"),
        EventDraft("evt_b", "node.suspended", {"why": None}, 1_001, node_id="gate", causation_id="evt_a"),
        EventDraft("evt_c", "custom.note", {"text": "x"}, 1_002, node_id="gate", activation=("step", 2, 0)),
    ]
    committed = (await store.commit(RunCommit(run.run_id, "A", own.epoch, 3_000, events=drafts))).events
    read = (await store.read_events(run.run_id))[1:]
    assert dumps(read) == dumps(committed)  # as text: the same keys in the same order
    assert dumps(await store.activation_events(run.run_id, "step", 2)) == dumps(committed[2:])
    assert dumps(await store.events_of_types(run.run_id, ["node.suspended"])) == dumps(committed[1:2])
    if isinstance(store, SqliteStore):
        with sqlite3.connect(store.path) as conn:
            stored = conn.execute("SELECT doc FROM events WHERE run_id=? AND seq=1", (run.run_id,)).fetchone()[0]
        assert run.run_id not in stored and "sequence" not in stored and "node.started" not in stored
