"""The PostgreSQL store's notices: every one a transaction sends reaches a listener, as it was sent."""

from __future__ import annotations

import psycopg
import pytest

from openwop_bridge.store import pg_sql as q

pytestmark = [pytest.mark.postgres]


async def test_every_notice_of_a_transaction_reaches_a_listener_whole(pg_url: str) -> None:
    outbox = q.Outbox()
    outbox.events("run_a")
    outbox.wake("run_b", "inst_owner")
    outbox.deadline("run_b", 1_700_000_000_456)
    outbox.deadline("run_b", 1_700_000_000_123)
    outbox.deadline("run_b", None)
    outbox.events("run_b")
    outbox.events("run_it's\\odd")
    async with (
        await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as listener,
        await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as sender,
    ):
        await listener.execute(f"LISTEN {q.CHANNEL}")
        await sender.execute(q.NOTIFY, (q.CHANNEL, outbox.payloads("inst_sender")))
        heard = [q.parse_notice(note.payload) async for note in listener.notifies(timeout=5, stop_after=3)]
    assert heard == [
        ("inst_sender", "run_a", True, None, None),
        ("inst_sender", "run_b", True, "inst_owner", 1_700_000_000_123),
        ("inst_sender", "run_it's\\odd", True, None, None),
    ]
