"""Two instances on one PostgreSQL database deciding at once in one tenant keep one unbroken chain."""

from __future__ import annotations

import asyncio

from openwop_bridge import Engine
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.decision_verify import verify_lines
from openwop_bridge.core.record_signature import key_set
from openwop_bridge.runtime.decision_records import export_lines
from openwop_bridge.store.postgres import PostgresStore
from tests.conftest import fixture_workflows
from tests.helpers import settle

BOB = Principal("bob")
AUDITOR = Principal("audrey", scopes=frozenset({"audit:read"}))


async def test_concurrent_decisions_on_two_instances_make_one_chain(pg_url: str) -> None:
    first = Engine(PostgresStore(pg_url), workflows=fixture_workflows())
    second = Engine(PostgresStore(pg_url), workflows=fixture_workflows())
    async with first, second:
        runs = [await first.create_run(BOB, "conformance-approval") for _ in range(24)]
        for run in runs:
            await settle(first, run.run_id)

        async def answer(engine: Engine, run_id: str) -> None:
            await engine.resolve(BOB, {"action": "accept"}, run_id=run_id, node_id="gate")

        await asyncio.gather(*(answer(first if i % 2 else second, r.run_id) for i, r in enumerate(runs)))
        lines = [line async for line in export_lines(first.store, "default")]
        keys = await second.decision_record_keys()
        page = await second.decision_records(AUDITOR, 100)
    verdict = verify_lines(lines, key_set(keys))
    assert verdict.holds and verdict.records == 24, verdict
    assert [row.seq for row in page] == list(range(1, 25))
    assert {row.line() + b"\n" for row in page} == set(lines)
