"""The store's query of what waits on one person, on SQLite and PostgreSQL: by who the person is (named
approver, role, the routes that reach them), never a page of the tenant filtered afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge.core.notices import Audience
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.store import open_store
from openwop_bridge.store.base import RunCommit, Store
from openwop_bridge.store.sqlite import SqliteStore
from tests.store.test_store_contract import claimed, make_interrupt, make_run, resolve, started


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        s: Store = SqliteStore(tmp_path / "waiting.db")
    else:
        s = open_store(request.getfixturevalue("pg_url"))
    await s.open()
    try:
        yield s
    finally:
        await s.close()


async def _open(
    store: Store, workflow_id: str, datas: list[dict[str, Any]], *, tenant: str = "acme", requested: int = 2_000
) -> list[InterruptRecord]:
    """One run of ``workflow_id`` with an approval per ``data``, requested in that order."""
    run = await started(store, make_run(workflow_id=workflow_id, tenant=tenant))
    own = await claimed(store, run)
    records = []
    for n, data in enumerate(datas):
        record = make_interrupt(run, f"g{n}", requested=requested + n)
        records.append(replace(record, payload={"kind": "approval", "data": data}))
    await store.commit(RunCommit(run.run_id, "A", own.epoch, 3_000, new_interrupts=records))
    return records


async def test_waiting_on_finds_a_persons_requests_behind_any_backlog(store: Store) -> None:
    # 600 older requests of the tenant that name nobody she is and match no route reaching her.
    await _open(store, "other", [{"title": f"not hers {n}", "approversList": ["bob"]} for n in range(600)])
    named = await _open(store, "other", [{"title": "hers", "approversList": ["bob", "alice"]}], requested=9_000)
    role = await _open(store, "other", [{"title": "her role", "requiredRole": "finance"}], requested=9_100)
    routed = await _open(store, "expense", [{"title": "her route"}], requested=9_200)
    await _open(store, "expense", [{"title": "elsewhere", "approversList": ["alice"]}], tenant="other")
    audience = Audience("alice", frozenset({"finance"}), (("expense", None),))
    found = await store.waiting_on("acme", audience, limit=100)
    assert [r.interrupt_id for r in found] == [named[0].interrupt_id, role[0].interrupt_id, routed[0].interrupt_id]
    # Paged by (requested_at, interrupt_id); a settled request leaves it.
    (first,) = await store.waiting_on("acme", audience, limit=1)
    rest = await store.waiting_on("acme", audience, limit=10, after=(first.requested_at_ms, first.interrupt_id))
    assert [r.interrupt_id for r in rest] == [role[0].interrupt_id, routed[0].interrupt_id]
    await store.mutate_interrupt(resolve(), 9_500, interrupt_id=role[0].interrupt_id)
    found = await store.waiting_on("acme", audience, limit=100)
    assert [r.interrupt_id for r in found] == [named[0].interrupt_id, routed[0].interrupt_id]
    # A route's match by kind, and one matching everything.
    assert len(await store.waiting_on("acme", Audience("zed", matches=((None, "clarification"),)), limit=10)) == 0
    assert len(await store.waiting_on("acme", Audience("zed", matches=((None, None),)), limit=1_000)) == 602
    # An approversList that is no list, or a role that is no string, names nobody and breaks nothing.
    await _open(store, "odd", [{"approversList": "alice"}, {"approversList": {"a": "alice"}}, {"requiredRole": 7}])
    odd = await store.waiting_on("acme", Audience("alice", frozenset({"7"})), limit=100)
    assert [r.interrupt_id for r in odd] == [named[0].interrupt_id]
