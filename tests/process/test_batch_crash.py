"""A batch of answers survives ``kill -9`` whole or not at all, and an acknowledged batch is never lost.

A real ``serve`` on SQLite, and on PostgreSQL: 100 approvals wait; one atomic batch answers them all while
the process is killed after a growing delay; the restarted host finds every one of the 100 answered or none.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import pg
from tests.server import ServerProcess, wait_for_status

pytestmark = pytest.mark.slow

KEY = "batch-crash-key-0001"
ADMIN = {"Authorization": f"Bearer {KEY}"}
ITEMS = 100


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The database the served host keeps: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield str(tmp_path / "batch.db")
        return
    with pg.fresh_database() as url:
        yield url


def _resolved(db: str, run_ids: list[str]) -> int:
    """How many of the runs' interrupts are resolved, read from the database itself."""
    if db.startswith("postgresql://"):
        [(count,)] = pg.execute(
            db, "SELECT count(*) FROM interrupts WHERE status='resolved' AND run_id = ANY(%s)", run_ids
        )
        return int(count)
    with sqlite3.connect(db) as conn:
        marks = ",".join("?" * len(run_ids))
        row = conn.execute(
            f"SELECT count(*) FROM interrupts WHERE status='resolved' AND run_id IN ({marks})", run_ids
        ).fetchone()
    return int(row[0])


def _serve(db: str, tmp_path: Path, port: int | None = None) -> ServerProcess:
    """``serve`` on ``db``, logging beside the test's files."""
    server = ServerProcess(db, ["--api-key", KEY], port)
    server.log = tmp_path / f"serve-{server.port}.log"
    return server


def _waiting(url: str) -> list[str]:
    with httpx.Client(base_url=url, headers=ADMIN, timeout=30) as client:
        run_ids = [
            client.post("/v1/runs", json={"workflowId": "demo-expense-approval"}).json()["runId"] for _ in range(ITEMS)
        ]
    for run_id in run_ids:
        wait_for_status(url, ADMIN, run_id, ("waiting-approval",))
    return run_ids


@pytest.mark.parametrize("delay_ms", [0, 20, 45, 70, 95, 150])
def test_kill_9_during_a_batch_leaves_all_or_none_answered(tmp_path: Path, db: str, delay_ms: int) -> None:
    server = _serve(db, tmp_path).start()
    reply: dict[str, Any] = {}
    try:
        run_ids = _waiting(server.url)
        items = [{"runId": r, "nodeId": "review", "resumeValue": {"action": "accept"}} for r in run_ids]

        def send() -> None:
            try:
                reply["response"] = httpx.post(
                    f"{server.url}/v1/interrupts/batch", json={"items": items}, headers=ADMIN, timeout=30
                )
            except httpx.HTTPError as exc:
                reply["error"] = exc

        sender = threading.Thread(target=send)
        sender.start()
        time.sleep(delay_ms / 1000)
        server.kill9()
        sender.join(30)
    finally:
        server.stop()
    answered = _resolved(db, run_ids)
    assert answered in (0, ITEMS), f"{answered} of {ITEMS} answered: a batch is all or nothing"
    if "response" in reply:  # acknowledged before the kill: nothing of it may be lost
        assert reply["response"].status_code == 200 and answered == ITEMS
    with _serve(db, tmp_path, server.port) as again:
        pending = httpx.get(f"{again.url}/ui/api/inbox/count", headers=ADMIN).json()["pending"]
        assert pending == ITEMS - answered
