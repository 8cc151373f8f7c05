"""A conversation's answers as the store keeps them, on SQLite and PostgreSQL.

Each answered exchange keeps its answer in a column of its own, however the answer reached the
row (an answer decided on the open exchange, or an exchange inserted already answered, as an
instant answer and a replay fork do). The close reads them back in turn order, every JSON type
intact; a closing answer, another conversation and an open exchange are left out. A database
written before those columns existed is migrated with its answers.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge.core import kinds
from openwop_bridge.core.records import InterruptRecord, Mutation, RunRecord
from openwop_bridge.store import open_store
from openwop_bridge.store.base import RunCommit, Store
from openwop_bridge.store.codec import INT_COLS, SQLITE, dumps, interrupt_params
from openwop_bridge.store.sqlite import SqliteStore
from tests import pg
from tests.store.schemas import postgres_at, sqlite_at
from tests.store.test_store_contract import claimed, make_interrupt, make_run, started, store  # noqa: F401

EXCHANGE = kinds.CONVERSATION_EXCHANGE.name
ANSWERS: list[Any] = ["text", {"a": [1, None], "b": "ü"}, [1, "two"], True, False, 7, 3.5, None, ""]
#: The schema version before the answer columns.
BEFORE = 3


def exchange(
    run: RunRecord, ordinal: int, conversation: str, answer: Any = None, *, answered: bool = False, closed: bool = False
) -> InterruptRecord:
    """An exchange of ``conversation`` at ``ordinal``; answered (or closing) when asked."""
    record = make_interrupt(run, kind=EXCHANGE, ordinal=ordinal, key=f"{run.run_id}:gate:{ordinal}")
    data = {"conversationId": conversation, "prompt": "Next?", "turnIndex": ordinal}
    record = replace(record, payload={"kind": EXCHANGE, "data": data, "key": record.key})
    if not (answered or closed):
        return record
    resolution: dict[str, Any] = {"resumeValue": None if closed else answer, "resolvedBy": "alice"}
    if closed:
        resolution.update({"closed": True, "outcome": {"done": True}, "operation": "close"})
    return replace(record, status="resolved", resolution=resolution, resolved_at_ms=4_000)


def answering(value: Any) -> Any:
    """A decision that answers an open exchange with ``value``."""

    def decide(intr: InterruptRecord, run: RunRecord) -> Mutation:
        resolution = {"resumeValue": value, "resolvedBy": "alice", "operation": "exchange"}
        return Mutation(interrupt_status="resolved", resolution=resolution, resolved_at_ms=4_000, result={})

    return decide


async def test_answers_come_back_in_turn_order_however_they_were_written(store: Store) -> None:  # noqa: F811
    run = await started(store, make_run())
    own = await claimed(store, run)
    half = len(ANSWERS) // 2
    opened = [exchange(run, i + 1, "c1") for i in range(half)]
    inserted = [exchange(run, i + 1, "c1", v, answered=True) for i, v in enumerate(ANSWERS) if i >= half]
    others = [
        exchange(run, len(ANSWERS) + 1, "c1", closed=True),
        exchange(run, len(ANSWERS) + 2, "c1"),  # still open
        exchange(run, len(ANSWERS) + 3, "c2", "elsewhere", answered=True),
        replace(make_interrupt(run, ordinal=len(ANSWERS) + 4), status="resolved", resolution={"resumeValue": 1}),
    ]
    await store.commit(RunCommit(run.run_id, "A", own.epoch, 3_000, new_interrupts=opened + inserted + others))
    for record, value in zip(opened, ANSWERS, strict=False):
        await store.mutate_interrupt(answering(value), 4_000, interrupt_id=record.interrupt_id)
    keys = [r.key for r in opened + inserted]
    got = await store.exchange_answers(run.run_id, "gate", "c1")
    assert dumps(got) == dumps(list(zip(keys, ANSWERS, strict=True)))  # as JSON: True is not 1
    assert await store.exchange_answers(run.run_id, "gate", "c2") == [(others[2].key, "elsewhere")]
    assert await store.exchange_answers(run.run_id, "other", "c1") == []


def _old_rows(run: RunRecord) -> list[InterruptRecord]:
    """Exchanges as a bridge before the answer columns wrote them."""
    answered = [exchange(run, i + 1, "c1", v, answered=True) for i, v in enumerate(ANSWERS)]
    n = len(ANSWERS)
    return [*answered, exchange(run, n + 1, "c1", closed=True), exchange(run, n + 2, "c2", "x", answered=True)]


#: How a bridge before the answer columns inserted an interrupt.
OLD_INSERT = (
    f"INSERT INTO interrupts({INT_COLS}) VALUES "
    "(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::json,%s,%s,%s,%s,%s::json,%s::json,%s)"
)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_a_database_from_before_the_answer_column_keeps_its_answers(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    run = make_run()
    rows = _old_rows(run)
    params = [interrupt_params(r)[: len(INT_COLS.split(","))] for r in rows]
    run_row = (run.run_id, run.tenant, run.workflow_id, run.status, 1, 1, dumps(run.spec), dumps(run.state))
    run_sql = "INSERT INTO runs(run_id, tenant, workflow_id, status, created_at, updated_at, spec, state) VALUES "
    if backend == "sqlite":
        path = tmp_path / "old.db"
        with sqlite_at(path, BEFORE) as conn:
            conn.execute(run_sql + "(?,?,?,?,?,?,?,?)", run_row)
            conn.executemany(SQLITE.sql(OLD_INSERT), params)
        store: Store = SqliteStore(path)
    else:
        url = request.getfixturevalue("pg_url")
        postgres_at(url, BEFORE)
        pg.execute(url, run_sql + "(%s,%s,%s,%s,%s,%s,%s::json,%s::json)", *run_row)
        for p in params:
            pg.execute(url, OLD_INSERT, *p)
        store = open_store(url)
    await store.open()
    try:
        keys = [r.key for r in rows]
        got = await store.exchange_answers(run.run_id, "gate", "c1")
        assert dumps(got) == dumps(list(zip(keys, ANSWERS, strict=False)))  # as JSON: True is not 1
        assert await store.exchange_answers(run.run_id, "gate", "c2") == [(keys[-1], "x")]
    finally:
        await store.close()
