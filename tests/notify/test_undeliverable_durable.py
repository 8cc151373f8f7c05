"""``onUndeliverable`` survives a crash between the last dead notice and the policy: the instance that
records the last dead letter dies at once, and the next one fails the interrupt closed all the same."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge import Engine, SqliteStore
from openwop_bridge.core.auth import SYSTEM
from openwop_bridge.host.notifying import install_notify
from openwop_bridge.notify.config import parse_notify_config
from openwop_bridge.store.base import Store
from tests import pg
from tests.helpers import settle
from tests.notify.host import gate
from tests.notify.receivers import smtp_server

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store


class Crash(BaseException):
    """The process dies here: nothing after it runs (not an ``Exception``, so nothing catches it)."""


def _crashing(base: type[Store]) -> type[Store]:
    """``base``, dying right after it records the last dead letter an interrupt was waiting for: from then on
    it records and claims nothing more, as a killed process would."""

    class Crashing(base):  # type: ignore[misc,valid-type]
        dead_to_crash = 1
        crashed = False

        async def outbox_settle(self, notice_id: str, owner: str, attempt: int, status: str, *rest: Any) -> bool:
            if self.crashed:
                raise Crash
            kept: bool = await super().outbox_settle(notice_id, owner, attempt, status, *rest)
            if kept and status == "dead":
                self.dead_to_crash -= 1
                if self.dead_to_crash == 0:
                    self.crashed = True
                    raise Crash
            return kept

        async def outbox_claim(self, *args: Any, **kwargs: Any) -> Any:
            return [] if self.crashed else await super().outbox_claim(*args, **kwargs)

    return Crashing


@contextlib.contextmanager
def _stores(tmp_path: Path) -> Any:
    """Two ways to open one database: ``(crashing store, plain store)`` factories."""
    if os.environ.get("BRIDGE_TEST_STORE", "sqlite") != "postgres":
        db = tmp_path / "notify.db"
        yield (lambda: _crashing(SqliteStore)(db)), (lambda: SqliteStore(db))
        return
    from openwop_bridge.store.postgres import PostgresStore

    with pg.fresh_database() as url:
        yield (lambda: _crashing(PostgresStore)(url)), (lambda: PostgresStore(url))


@contextlib.asynccontextmanager
async def _instance(store: Store, smtp_port: int) -> AsyncIterator[Engine]:
    engine = Engine(store)
    gate("expense").register(engine)
    config = parse_notify_config(
        {
            "publicBaseUrl": "http://127.0.0.1:9",
            "people": {"alice": {"tenant": "default", "email": "alice@example.com"}},
            "channels": {"email": {"smtp": f"smtp://127.0.0.1:{smtp_port}", "from": "approvals@example.com"}},
            "routes": [{"match": {"workflowId": "expense"}, "notify": ["alice"], "onUndeliverable": "fail"}],
        },
        environ={},
    )
    await engine.start()
    try:
        install_notify(engine, config)
        yield engine
    finally:
        await engine.stop()


async def _until_closed(engine: Engine, interrupt_id: str, timeout: float = 20.0) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        record = await engine.interrupt_record(interrupt_id)
        if record is not None and not record.open:
            return record
        await asyncio.sleep(0.05)
    raise AssertionError("the interrupt never closed")


async def test_fail_survives_a_crash_right_after_the_last_dead_letter(tmp_path: Path) -> None:
    with smtp_server() as (smtp, smtp_port), _stores(tmp_path) as (crashing, plain):
        smtp.rcpt_replies["alice@example.com"] = "550 5.1.1 No such user"
        first = crashing()
        async with _instance(first, smtp_port) as engine:
            run = await engine.create_run(SYSTEM, "expense", tenant="default")
            await settle(engine, run.run_id)
            (record,) = await engine.run_interrupts(run.run_id, open_only=True)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 20
            while not first.crashed:  # type: ignore[attr-defined]
                assert loop.time() < deadline, "the notice never died"
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)  # whatever the dying instance would still do, it may not
            still = await engine.interrupt_record(record.interrupt_id)
            assert still is not None and still.open
        async with _instance(plain(), smtp_port) as engine:
            closed = await _until_closed(engine, record.interrupt_id)
            assert closed.resolution is not None
            value = closed.resolution["resumeValue"]
            assert (value["action"], value["reason"]) == ("reject", "undeliverable"), "fails closed"
