"""The store contract, run against SQLite and PostgreSQL in the same suite.

Every method of :class:`openwop_bridge.store.base.Store` and every guard the engine
relies on: the ``pending`` status guard, the ``epoch`` fence, release only while
``wake`` is unchanged, mutation errors raised after their audit is committed,
sequence numbers without gaps under concurrency, cursor pagination. The
PostgreSQL-only part at the end covers what SQLite has no counterpart for:
notifications between instances, claims racing across connections, and the
query plans of the inbox.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from openwop_bridge.core.errors import (
    ForbiddenError,
    InterruptAlreadyResolvedError,
    InterruptNotFoundError,
    KeyTakenError,
    RunNotFoundError,
    StaleOwnerError,
    ValidationError,
)
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord, Mutation, RunRecord
from openwop_bridge.store import open_store
from openwop_bridge.store.base import KV_SCAN_MAX, ChildStart, Claim, KvWrite, RunCommit, Store
from openwop_bridge.store.cursor import encode_cursor
from openwop_bridge.store.migrations import POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS, SchemaTooNewError
from openwop_bridge.store.reads import LISTED_KINDS
from openwop_bridge.store.sqlite import SqliteStore
from tests import pg

LEASE = 10_000
_ids = itertools.count()


def _id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):06d}"


def make_run(
    run_id: str | None = None,
    *,
    tenant: str = "acme",
    workflow_id: str = "wf",
    created: int = 1_000,
    status: str = "pending",
    parent: tuple[str, str, int, int] | None = None,
    spec: dict[str, Any] | None = None,
) -> RunRecord:
    run = RunRecord(
        run_id=run_id or _id("run"),
        tenant=tenant,
        workflow_id=workflow_id,
        status=status,
        created_at_ms=created,
        updated_at_ms=created,
        spec=spec if spec is not None else {"inputs": {"n": 1}},
        state={"variables": {}, "nodes": {}, "ready": ["a"]},
    )
    if parent is not None:
        run.parent_run_id, run.parent_node_id, run.parent_visit, run.child_ordinal = parent
    return run


def draft(
    type_: str = "node.started", *, node: str | None = None, act: tuple[str, int, int] | None = None
) -> EventDraft:
    return EventDraft(_id("evt"), type_, {"nodeId": node} if node else {}, 1_000, node_id=node, activation=act)


def make_interrupt(
    run: RunRecord,
    node_id: str = "gate",
    *,
    kind: str = "approval",
    requested: int = 2_000,
    deadline: int | None = None,
    visit: int = 0,
    ordinal: int = 0,
    key: str | None = None,
    exec_node: str | None = None,
    interrupt_id: str | None = None,
) -> InterruptRecord:
    iid = interrupt_id or _id("int")
    return InterruptRecord(
        interrupt_id=iid,
        run_id=run.run_id,
        tenant=run.tenant,
        workflow_id=run.workflow_id,
        node_id=node_id,
        exec_node=exec_node or node_id,
        visit=visit,
        ordinal=ordinal,
        key=key or f"{run.run_id}:{node_id}:{visit}:{ordinal}:{iid}",
        kind=kind,
        status="pending",
        payload={"kind": kind, "data": {"title": "Go?"}},
        requested_at_ms=requested,
        deadline_ms=deadline,
    )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        s: Store = SqliteStore(tmp_path / "contract.db")
    else:
        s = open_store(request.getfixturevalue("pg_url"))
    await s.open()
    try:
        yield s
    finally:
        await s.close()


async def started(store: Store, run: RunRecord | None = None, *events: EventDraft) -> RunRecord:
    run = run or make_run()
    await store.create_run(run, list(events) or [draft("run.started")])
    return run


async def claimed(store: Store, run: RunRecord, owner: str = "A", now: int = 5_000) -> RunRecord:
    got = await store.claim_run(run.run_id, owner, now, LEASE)
    assert got is not None
    return got


async def with_interrupts(store: Store, *specs: dict[str, Any]) -> tuple[RunRecord, list[InterruptRecord]]:
    """A run owned by "A" whose executor committed the given interrupts."""
    run = await started(store)
    own = await claimed(store, run)
    records = [make_interrupt(run, **spec) for spec in specs]
    await store.commit(RunCommit(run.run_id, "A", own.epoch, 3_000, new_interrupts=records))
    return run, records


def resolve(now: int = 9_000) -> Any:
    """A decision like the engine's answer: resolves an open interrupt, refuses a settled one."""

    def decide(intr: InterruptRecord, run: RunRecord) -> Mutation:
        if not intr.open:
            return Mutation(error=InterruptAlreadyResolvedError("already resolved"))
        return Mutation(
            interrupt_status="resolved",
            resolution={"resumeValue": {"action": "accept"}},
            resolved_at_ms=now,
            events=[draft("interrupt.resolved", node=intr.node_id)],
            wake=True,
            result={"status": "resolved"},
        )

    return decide


# --- schema ------------------------------------------------------------------------------


async def test_reopening_keeps_data_and_a_newer_schema_is_refused(
    store: Store, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    run = await started(store)
    await store.close()
    await store.open()  # migrations already applied: nothing to do, nothing lost
    assert (await store.load_run(run.run_id)) is not None
    await store.close()
    if isinstance(store, SqliteStore):
        with sqlite3.connect(store.path) as conn:
            assert conn.execute("SELECT value FROM meta").fetchone() == (str(len(SQLITE_MIGRATIONS)),)
            conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    else:
        url = request.getfixturevalue("pg_url")
        assert pg.execute(url, "SELECT value FROM meta") == [(str(len(POSTGRES_MIGRATIONS)),)]
        pg.execute(url, "UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(SchemaTooNewError) as err:
        await store.open()
    await store.close()
    assert "schema is version 99" in str(err.value) and "upgrade openwop-bridge" in str(err.value)
    if isinstance(store, SqliteStore):
        with sqlite3.connect(store.path) as conn:
            conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(len(SQLITE_MIGRATIONS)),))
    else:
        pg.execute(url, "UPDATE meta SET value=%s WHERE key='schema_version'", str(len(POSTGRES_MIGRATIONS)))
    await store.open()


# --- signing keys ------------------------------------------------------------------------


async def test_signing_keys_activate_retire_and_revive(store: Store) -> None:
    assert await store.signing_keys() == []
    await store.add_signing_key("k1", "s1", 100, activate=True)
    await store.add_signing_key("k2", "s2", 200, activate=True)
    await store.add_signing_key("k3", "s3", 300, activate=False)
    assert await store.signing_keys() == [("k1", "s1", False), ("k2", "s2", True), ("k3", "s3", False)]
    await store.retire_signing_key("k2", 400)
    assert await store.signing_keys() == [("k1", "s1", False), ("k3", "s3", False)]
    await store.add_signing_key("k2", "s2", 500, activate=True)  # re-adding a retired key revives it
    assert ("k2", "s2", True) in await store.signing_keys()


# --- runs and events ---------------------------------------------------------------------


async def test_create_and_load_round_trip_every_field(store: Store) -> None:
    tricky = {"text": "nul \x00 and ünïcødé ✓", "float": 0.1, "big": 2**53, "neg": -1.5e-7, "list": [None, True]}
    run = make_run(spec={"inputs": tricky, "z": 1, "a": 2})
    docs = await store.create_run(run, [draft("run.started"), draft("node.started", node="a")])
    assert [d["sequence"] for d in docs] == [0, 1]
    assert docs[0]["runId"] == run.run_id and docs[1]["nodeId"] == "a"
    loaded = await store.load_run(run.run_id)
    assert loaded is not None
    assert loaded.spec == run.spec and list(loaded.spec) == ["inputs", "z", "a"]
    assert loaded.state == run.state
    assert (loaded.tenant, loaded.workflow_id, loaded.status, loaded.created_at_ms) == ("acme", "wf", "pending", 1_000)
    assert (loaded.next_seq, loaded.owner, loaded.epoch, loaded.wake, loaded.needs_work) == (2, None, 0, 0, True)
    assert loaded.control is None and loaded.parent_run_id is None and loaded.completed_at_ms is None
    assert await store.read_events(run.run_id) == docs
    assert await store.read_events(run.run_id, 0) == docs[1:]
    assert await store.read_events(run.run_id, -1, 1) == docs[:1]
    assert await store.read_events(run.run_id, 2**62) == []
    assert await store.load_run("run_missing") is None
    assert await store.load_run("run\x00nul") is None
    assert await store.read_events("run\x00nul") == []


@pytest.mark.parametrize("field", ["run_id", "tenant", "workflow_id"])
async def test_identifiers_holding_nul_are_refused_alike_and_nothing_is_written(store: Store, field: str) -> None:
    run = make_run(**{field: "x\x00y"})
    with pytest.raises(ValidationError, match="U\\+0000"):
        await store.create_run(run, [draft("run.started")])
    assert await store.load_run(run.run_id) is None
    assert await store.read_events(run.run_id) == []


async def test_claim_is_exclusive_until_the_lease_expires_and_bumps_the_epoch(store: Store) -> None:
    run = await started(store)
    first = await store.claim_run(run.run_id, "A", 1_000, LEASE)
    assert first is not None and (first.owner, first.epoch, first.lease_until_ms) == ("A", 1, 1_000 + LEASE)
    assert await store.claim_run(run.run_id, "B", 1_000 + LEASE - 1, LEASE) is None
    again = await store.claim_run(run.run_id, "A", 2_000, LEASE)  # the owner itself may re-claim
    assert again is not None and again.epoch == 2
    taken = await store.claim_run(run.run_id, "B", 2_000 + LEASE + 1, LEASE)
    assert taken is not None and (taken.owner, taken.epoch) == ("B", 3)
    assert await store.claim_run("run_missing", "A", 1_000, LEASE) is None


async def test_terminal_runs_cannot_be_claimed(store: Store) -> None:
    run = await started(store)
    own = await claimed(store, run)
    await store.commit(RunCommit(run.run_id, "A", own.epoch, 6_000, status="completed", terminal=True))
    done = await store.load_run(run.run_id)
    assert done is not None and done.terminal and done.owner is None and done.completed_at_ms == 6_000
    assert not done.needs_work and done.lease_until_ms is None
    assert await store.claim_run(run.run_id, "A", 7_000, LEASE) is None


async def test_renew_leases_extends_only_the_owners_runs(store: Store) -> None:
    mine = [await started(store) for _ in range(3)]
    theirs = await started(store)
    for run in mine:
        await claimed(store, run, "A", 1_000)
    await claimed(store, theirs, "B", 1_000)
    assert await store.renew_leases("A", [r.run_id for r in mine], 50_000, LEASE) == 3
    for run in mine:
        loaded = await store.load_run(run.run_id)
        assert loaded is not None and loaded.lease_until_ms == 50_000 + LEASE
    other = await store.load_run(theirs.run_id)
    assert other is not None and other.lease_until_ms == 1_000 + LEASE
    assert await store.renew_leases("nobody", [r.run_id for r in mine], 50_000, LEASE) == 0
    assert await store.renew_leases("A", [], 60_000, LEASE) == 0  # runs it no longer executes are left to expire
    assert await store.renew_leases("A", [theirs.run_id], 60_000, LEASE) == 0
    assert await store.renew_leases("A", [mine[0].run_id], 70_000, LEASE) == 1  # only the runs named
    first, second = await store.load_run(mine[0].run_id), await store.load_run(mine[1].run_id)
    assert first is not None and first.lease_until_ms == 70_000 + LEASE
    assert second is not None and second.lease_until_ms == 50_000 + LEASE


async def test_a_stale_owner_is_fenced_and_writes_nothing(store: Store) -> None:
    run = await started(store)
    old = await claimed(store, run, "A", 1_000)
    new = await claimed(store, run, "B", 1_000 + LEASE + 1)
    stale = RunCommit(run.run_id, "A", old.epoch, 20_000, events=[draft()], state={"x": 1}, status="running")
    with pytest.raises(StaleOwnerError):
        await store.commit(stale)
    with pytest.raises(StaleOwnerError):  # right owner, old epoch
        await store.commit(RunCommit(run.run_id, "B", old.epoch, 20_000, events=[draft()]))
    with pytest.raises(RunNotFoundError):
        await store.commit(RunCommit("run_missing", "B", 1, 20_000))
    after = await store.load_run(run.run_id)
    assert after is not None and after.state == run.state and after.status == "pending" and after.next_seq == 1
    assert len(await store.read_events(run.run_id)) == 1
    ok = await store.commit(RunCommit(run.run_id, "B", new.epoch, 20_000, events=[draft()], status="running"))
    assert [d["sequence"] for d in ok.events] == [1]


async def test_commit_writes_events_state_interrupts_consumption_and_closes(store: Store) -> None:
    run = await started(store)
    own = await claimed(store, run)
    requested = draft("interrupt.requested", node="gate", act=("gate", 0, 0))
    gate = make_interrupt(run, "gate", deadline=90_000)
    gate.requested_event_id = requested.event_id
    other = make_interrupt(run, "other", requested=2_500)
    result = await store.commit(
        RunCommit(
            run.run_id,
            "A",
            own.epoch,
            3_000,
            events=[draft("node.started", node="gate"), requested],
            state={"nodes": {"gate": {"status": "suspended"}}},
            status="waiting-approval",
            new_interrupts=[gate, other],
        )
    )
    assert [d["sequence"] for d in result.events] == [1, 2] and not result.released and result.wake == 0
    stored = await store.get_interrupt(gate.interrupt_id)
    assert stored is not None and stored.requested_seq == 2 and stored.open and stored.deadline_ms == 90_000
    assert stored.payload == gate.payload and stored.state == {} and not stored.consumed
    loaded = await store.load_run(run.run_id)
    assert loaded is not None and loaded.status == "waiting-approval" and loaded.updated_at_ms == 3_000
    assert loaded.state == {"nodes": {"gate": {"status": "suspended"}}} and loaded.next_seq == 3
    await store.mutate_interrupt(resolve(), 4_000, interrupt_id=gate.interrupt_id)
    assert [i.interrupt_id for i in await store.unconsumed(run.run_id)] == [gate.interrupt_id]
    await store.commit(
        RunCommit(
            run.run_id,
            "A",
            own.epoch,
            5_000,
            consume=[gate.interrupt_id],
            close_interrupts={other.interrupt_id: "cancelled", gate.interrupt_id: "cancelled"},
        )
    )
    # Closing settles an interrupt too: its node has yet to see that, so it is unconsumed now.
    assert [i.interrupt_id for i in await store.unconsumed(run.run_id)] == [other.interrupt_id]
    closed = await store.get_interrupt(other.interrupt_id)
    assert closed is not None and (closed.status, closed.resolved_at_ms) == ("cancelled", 5_000)
    kept = await store.get_interrupt(gate.interrupt_id)
    assert kept is not None and kept.status == "resolved" and kept.consumed  # only pending ones close


async def test_an_answer_may_lease_the_run_it_wakes_in_the_same_transaction(store: Store) -> None:
    run, (gate, other) = await with_interrupts(store, {"node_id": "gate"}, {"node_id": "other"})
    own = await store.load_run(run.run_id)
    assert own is not None
    await store.commit(RunCommit(run.run_id, "A", own.epoch, 3_500, release_if_wake=own.wake))  # nobody holds it
    first = await store.mutate_interrupt(resolve(), 4_000, interrupt_id=gate.interrupt_id, claim=Claim("B", LEASE))
    assert first.claimed and first.run is not None
    assert (first.run.owner, first.run.lease_until_ms, first.run.epoch) == ("B", 4_000 + LEASE, own.epoch + 1)
    assert first.run.needs_work and first.run.wake == own.wake + 1
    stored = await store.load_run(run.run_id)
    assert stored is not None and (stored.owner, stored.epoch) == ("B", own.epoch + 1)
    # Held (and its lease live): a second answer wakes it but leaves the lease where it is.
    second = await store.mutate_interrupt(resolve(), 5_000, interrupt_id=other.interrupt_id, claim=Claim("C", LEASE))
    assert not second.claimed and second.run is not None and second.run.owner == "B"
    assert second.run.epoch == own.epoch + 1 and second.run.wake == own.wake + 2
    # The old owner's writes are fenced by the new epoch.
    with pytest.raises(StaleOwnerError):
        await store.commit(RunCommit(run.run_id, "A", own.epoch, 6_000))


async def test_release_only_while_wake_is_unchanged(store: Store) -> None:
    run, (gate,) = await with_interrupts(store, {"node_id": "gate"})
    own = await store.load_run(run.run_id)
    assert own is not None
    await store.mutate_interrupt(resolve(), 4_000, interrupt_id=gate.interrupt_id)  # wake 0 -> 1
    refused = await store.commit(RunCommit(run.run_id, "A", own.epoch, 5_000, release_if_wake=own.wake))
    assert not refused.released
    still = await store.load_run(run.run_id)
    assert still is not None and still.owner == "A" and still.needs_work and still.wake == 1
    released = await store.commit(RunCommit(run.run_id, "A", own.epoch, 6_000, release_if_wake=1))
    assert released.released and released.wake == 1
    free = await store.load_run(run.run_id)
    assert free is not None and free.owner is None and free.lease_until_ms is None and not free.needs_work
    assert await store.runs_needing_work(10_000) == []


async def test_children_are_created_with_the_parents_commit_and_wake_it_when_they_end(store: Store) -> None:
    parent = await started(store)
    own = await claimed(store, parent)
    kids = [make_run(created=2_000 + i, parent=(parent.run_id, "sub", 0, i)) for i in range(2)]
    result = await store.commit(
        RunCommit(
            parent.run_id,
            "A",
            own.epoch,
            3_000,
            events=[draft()],
            children=[ChildStart(k, [draft("run.started")]) for k in kids],
        )
    )
    assert set(result.child_events) == {k.run_id for k in kids}
    assert all([d["sequence"] for d in docs] == [0] for docs in result.child_events.values())
    assert [c.run_id for c in await store.child_runs(parent.run_id)] == [k.run_id for k in kids]
    assert await store.find_child(parent.run_id, "sub", 0, 1) == kids[1].run_id
    assert await store.find_child(parent.run_id, "sub", 1, 1) is None
    await store.commit(RunCommit(parent.run_id, "A", own.epoch, 3_500, release_if_wake=0))
    kid = await claimed(store, kids[0], "B")
    await store.commit(
        RunCommit(kids[0].run_id, "B", kid.epoch, 4_000, status="completed", terminal=True, wake_run=parent.run_id)
    )
    woken = await store.load_run(parent.run_id)
    assert woken is not None and woken.wake == 1 and woken.needs_work and woken.owner is None
    assert set(await store.runs_needing_work(10_000)) == {parent.run_id, kids[1].run_id}
    # A parent that already ended is not woken.
    done = await claimed(store, parent)
    await store.commit(RunCommit(parent.run_id, "A", done.epoch, 5_000, status="cancelled", terminal=True))
    kid1 = await claimed(store, kids[1], "B")
    await store.commit(
        RunCommit(kids[1].run_id, "B", kid1.epoch, 6_000, status="cancelled", terminal=True, wake_run=parent.run_id)
    )
    ended = await store.load_run(parent.run_id)
    assert ended is not None and ended.wake == 1 and not ended.needs_work


async def test_release_owned_hands_over_only_the_owners_live_runs(store: Store) -> None:
    mine = await started(store, make_run(created=1))
    theirs = await started(store, make_run(created=2))
    ended = await started(store, make_run(created=3))
    own = await claimed(store, mine, "A", 5_000)
    await claimed(store, theirs, "B", 5_000)
    own_ended = await claimed(store, ended, "A", 5_000)
    await store.commit(RunCommit(ended.run_id, "A", own_ended.epoch, 6_000, status="completed", terminal=True))
    assert await store.runs_needing_work(6_000) == []
    assert await store.release_owned("A") == [mine.run_id]
    released = await store.load_run(mine.run_id)
    assert released is not None and released.owner is None and released.lease_until_ms is None
    assert released.needs_work and released.epoch == own.epoch
    assert await store.runs_needing_work(6_000) == [mine.run_id]  # long before its lease would have run out
    other = await store.load_run(theirs.run_id)
    assert other is not None and other.owner == "B"
    assert await store.release_owned("A") == []


async def test_runs_needing_work_and_reset_owners(store: Store) -> None:
    free = await started(store, make_run(created=1))
    owned = await started(store, make_run(created=2))
    expired = await started(store, make_run(created=3))
    idle = await started(store, make_run(created=4))
    await claimed(store, owned, "A", 5_000)
    await claimed(store, expired, "B", 1_000)
    own_idle = await claimed(store, idle, "A", 5_000)
    await store.commit(RunCommit(idle.run_id, "A", own_idle.epoch, 5_000, release_if_wake=0))
    assert await store.runs_needing_work(12_000) == [free.run_id, expired.run_id]
    assert await store.runs_needing_work(12_000, limit=1) == [free.run_id]
    assert await store.reset_owners() == 2
    assert set(await store.runs_needing_work(12_000)) == {free.run_id, owned.run_id, expired.run_id}


async def test_list_runs_by_tenant_newest_first_with_cursor(store: Store) -> None:
    runs = [await started(store, make_run(created=1_000 + i // 2, workflow_id=f"wf{i % 2}")) for i in range(5)]
    await started(store, make_run(tenant="other", created=5_000))
    page, cursor = await store.list_runs("acme", workflow_id=None, status=None, limit=2, cursor=None)
    seen = [r.run_id for r in page]
    while cursor:
        page, cursor = await store.list_runs("acme", workflow_id=None, status=None, limit=2, cursor=cursor)
        seen += [r.run_id for r in page]
    expected = [r.run_id for r in sorted(runs, key=lambda r: (r.created_at_ms, r.run_id), reverse=True)]
    assert seen == expected
    only, nxt = await store.list_runs("acme", workflow_id="wf1", status="pending", limit=10, cursor=None)
    assert {r.run_id for r in only} == {runs[1].run_id, runs[3].run_id} and nxt is None
    none, _ = await store.list_runs("acme", workflow_id=None, status="completed", limit=10, cursor=None)
    assert none == []
    with pytest.raises(ValidationError):
        await store.list_runs("acme", workflow_id=None, status=None, limit=2, cursor="!!")


async def test_activation_events_and_events_of_types(store: Store) -> None:
    run = await started(store)
    own = await claimed(store, run)
    await store.commit(
        RunCommit(
            run.run_id,
            "A",
            own.epoch,
            3_000,
            events=[
                draft("node.started", node="n"),
                draft("custom.b", node="n", act=("n", 0, 1)),
                draft("custom.a", node="n", act=("n", 0, 0)),
                draft("custom.a", node="n", act=("n", 1, 0)),
                draft("node.completed", node="n"),
            ],
        )
    )
    first = await store.activation_events(run.run_id, "n", 0)
    assert [(d["type"], d["sequence"]) for d in first] == [("custom.a", 3), ("custom.b", 2)]
    assert [d["sequence"] for d in await store.activation_events(run.run_id, "n", 1)] == [4]
    typed = await store.events_of_types(run.run_id, ["custom.a", "run.started"])
    assert [d["sequence"] for d in typed] == [0, 3, 4]
    assert await store.events_of_types(run.run_id, ["nothing"]) == []


# --- interrupts and mutations --------------------------------------------------------------


async def test_interrupt_lookups(store: Store) -> None:
    run, recs = await with_interrupts(
        store,
        {"node_id": "gate", "requested": 2_000, "visit": 0, "ordinal": 0, "key": "k-first"},
        {"node_id": "gate", "requested": 2_000, "visit": 0, "ordinal": 1},
        {"node_id": "gate", "requested": 1_500, "visit": 1, "ordinal": 0},
        {"node_id": "ask", "exec_node": "gate", "requested": 2_100, "visit": 1, "ordinal": 1},
    )
    latest = await store.interrupt_at(run.run_id, "gate")
    assert latest is not None and latest.interrupt_id == recs[1].interrupt_id  # newest, then highest ordinal
    assert await store.interrupt_at(run.run_id, "nowhere") is None
    assert await store.interrupt_at(run.run_id, "ga\x00te") is None
    by_key = await store.interrupt_by_key(run.run_id, "k-first")
    assert by_key is not None and by_key.interrupt_id == recs[0].interrupt_id
    slot = await store.interrupt_at_slot(run.run_id, "gate", 1, 1)
    assert slot is not None and slot.interrupt_id == recs[3].interrupt_id
    assert await store.interrupt_at_slot(run.run_id, "gate", 2, 0) is None
    assert [i.interrupt_id for i in await store.node_interrupts(run.run_id, "gate")] == [
        recs[0].interrupt_id,
        recs[1].interrupt_id,
        recs[2].interrupt_id,
        recs[3].interrupt_id,
    ]
    everything = await store.run_interrupts(run.run_id, open_only=False)
    assert [i.interrupt_id for i in everything] == [r.interrupt_id for r in (recs[2], recs[0], recs[1], recs[3])]
    await store.mutate_interrupt(resolve(), 9_000, interrupt_id=recs[0].interrupt_id)
    still_open = await store.run_interrupts(run.run_id, open_only=True)
    assert recs[0].interrupt_id not in {i.interrupt_id for i in still_open} and len(still_open) == 3
    assert await store.get_interrupt("int_missing") is None


async def test_mutate_interrupt_by_id_and_by_address(store: Store) -> None:
    run, (old, new) = await with_interrupts(
        store, {"node_id": "gate", "requested": 2_000}, {"node_id": "gate", "requested": 2_500}
    )
    by_address = await store.mutate_interrupt(resolve(9_000), 9_000, run_id=run.run_id, node_id="gate")
    assert by_address.interrupt is not None and by_address.interrupt.interrupt_id == new.interrupt_id
    assert by_address.interrupt.status == "resolved" and by_address.interrupt.resolved_at_ms == 9_000
    assert by_address.interrupt.resolution == {"resumeValue": {"action": "accept"}}
    assert by_address.result == {"status": "resolved"}
    assert by_address.run is not None and by_address.run.wake == 1 and by_address.run.updated_at_ms == 9_000
    assert [d["sequence"] for d in by_address.events] == [1] and by_address.events[0]["type"] == "interrupt.resolved"
    by_id = await store.mutate_interrupt(resolve(9_500), 9_500, interrupt_id=old.interrupt_id)
    assert by_id.interrupt is not None and by_id.interrupt.interrupt_id == old.interrupt_id
    assert by_id.run is not None and by_id.run.wake == 2 and by_id.run.next_seq == 3
    with pytest.raises(InterruptNotFoundError):
        await store.mutate_interrupt(resolve(), 9_000, interrupt_id="int_missing")
    with pytest.raises(InterruptNotFoundError):
        await store.mutate_interrupt(resolve(), 9_000, run_id=run.run_id, node_id="nowhere")
    with pytest.raises(InterruptNotFoundError):
        await store.mutate_interrupt(resolve(), 9_000, run_id="run_missing", node_id="gate")
    with pytest.raises(InterruptNotFoundError):
        await store.mutate_interrupt(resolve(), 9_000, run_id=run.run_id, node_id="ga\x00te")


async def test_state_only_mutation_keeps_the_rest_and_does_not_wake(store: Store) -> None:
    _, (gate,) = await with_interrupts(store, {"node_id": "gate"})

    def vote(intr: InterruptRecord, _: RunRecord) -> Mutation:
        return Mutation(interrupt_state={"votes": {"bob": "accept"}}, result={"status": "pending"})

    result = await store.mutate_interrupt(vote, 9_000, interrupt_id=gate.interrupt_id)
    assert result.interrupt is not None and result.interrupt.state == {"votes": {"bob": "accept"}}
    assert result.interrupt.open and result.events == []
    assert result.run is not None and result.run.wake == 0 and result.run.updated_at_ms == 3_000


async def test_a_mutation_error_is_raised_after_its_audit_and_events_commit(store: Store) -> None:
    run, (gate,) = await with_interrupts(store, {"node_id": "gate"})

    def deny(intr: InterruptRecord, r: RunRecord) -> Mutation:
        return Mutation(
            events=[draft("authorization.decided", node=intr.node_id)],
            audit=[{"principal": "eve", "action": "deny", "resource": intr.interrupt_id, "details": {"why": "role"}}],
            error=ForbiddenError("needs a role"),
        )

    with pytest.raises(ForbiddenError):
        await store.mutate_interrupt(deny, 9_000, interrupt_id=gate.interrupt_id)
    assert [d["type"] for d in await store.read_events(run.run_id)][-1] == "authorization.decided"
    assert await store.audit(run.run_id) == [
        {"at": 9_000, "principal": "eve", "action": "deny", "resource": gate.interrupt_id, "details": {"why": "role"}}
    ]
    still = await store.get_interrupt(gate.interrupt_id)
    assert still is not None and still.open


async def test_a_decision_that_raises_commits_nothing(store: Store) -> None:
    run, (gate,) = await with_interrupts(store, {"node_id": "gate"})

    def bad(intr: InterruptRecord, r: RunRecord) -> Mutation:
        raise ValidationError("resumeValue does not match resumeSchema")

    with pytest.raises(ValidationError):
        await store.mutate_interrupt(bad, 9_000, interrupt_id=gate.interrupt_id)
    with pytest.raises(ValidationError):
        await store.mutate_run(run.run_id, lambda r, i: bad(i[0], r), 9_000)
    again = await store.get_interrupt(gate.interrupt_id)
    assert again is not None and again.open
    after = await store.load_run(run.run_id)
    assert after is not None and after.wake == 0 and after.next_seq == 1


async def test_mutate_run_sees_open_interrupts_and_cancels_them(store: Store) -> None:
    run, recs = await with_interrupts(
        store, {"node_id": "b", "requested": 2_200}, {"node_id": "a", "requested": 2_100}, {"node_id": "c"}
    )
    await store.mutate_interrupt(resolve(8_000), 8_000, interrupt_id=recs[2].interrupt_id)
    seen: list[list[str]] = []

    def cancel(r: RunRecord, open_ones: list[InterruptRecord]) -> Mutation:
        seen.append([i.node_id for i in open_ones])
        return Mutation(
            run_status="cancelling",
            cancel_interrupts="cancelled",
            control={"cancel": {"reason": "because"}},
            events=[draft("run.cancelling")],
            wake=True,
            result={"changed": True},
        )

    result = await store.mutate_run(run.run_id, cancel, 9_000)
    assert seen == [["a", "b"]]
    assert result.run is not None and result.run.status == "cancelling" and result.run.wake == 2
    assert result.run.control == {"cancel": {"reason": "because"}} and result.interrupt is None
    statuses = {
        i.node_id: (i.status, i.resolved_at_ms) for i in await store.run_interrupts(run.run_id, open_only=False)
    }
    assert statuses == {"a": ("cancelled", 9_000), "b": ("cancelled", 9_000), "c": ("resolved", 8_000)}
    with pytest.raises(RunNotFoundError):
        await store.mutate_run("run_missing", cancel, 9_000)


async def test_an_interrupt_mutation_can_close_every_open_interrupt_of_its_run(store: Store) -> None:
    _, (gate, other) = await with_interrupts(store, {"node_id": "gate"}, {"node_id": "other"})

    def withdraw(intr: InterruptRecord, r: RunRecord) -> Mutation:
        return Mutation(interrupt_state={"note": "withdrawn"}, cancel_interrupts="gone", result={"ok": True})

    result = await store.mutate_interrupt(withdraw, 9_000, interrupt_id=gate.interrupt_id)
    assert result.interrupt is not None and result.interrupt.interrupt_id == gate.interrupt_id
    assert (result.interrupt.status, result.interrupt.resolved_at_ms) == ("gone", 9_000)
    assert result.interrupt.state == {"note": "withdrawn"}
    sibling = await store.get_interrupt(other.interrupt_id)
    assert sibling is not None and sibling.status == "gone"
    assert result.run is not None and result.run.wake == 0


async def test_the_pending_guard_holds_under_concurrent_answers(store: Store) -> None:
    run, (gate,) = await with_interrupts(store, {"node_id": "gate"})
    outcomes = await asyncio.gather(
        *(store.mutate_interrupt(resolve(9_000 + i), 9_000 + i, interrupt_id=gate.interrupt_id) for i in range(32)),
        return_exceptions=True,
    )
    winners = [o for o in outcomes if not isinstance(o, BaseException)]
    losers = [o for o in outcomes if isinstance(o, InterruptAlreadyResolvedError)]
    assert len(winners) == 1 and len(losers) == 31
    types = [d["type"] for d in await store.read_events(run.run_id)]
    assert types.count("interrupt.resolved") == 1
    after = await store.load_run(run.run_id)
    assert after is not None and after.wake == 1


async def test_sequence_numbers_have_no_gaps_under_concurrent_writers(store: Store) -> None:
    run, recs = await with_interrupts(store, *({"node_id": f"n{i}"} for i in range(12)))
    own = await store.load_run(run.run_id)
    assert own is not None

    def note(intr: InterruptRecord, r: RunRecord) -> Mutation:
        return Mutation(events=[draft("custom.note"), draft("custom.note")])

    async def executor_steps() -> None:
        for i in range(12):
            await store.commit(RunCommit(run.run_id, "A", own.epoch, 10_000 + i, events=[draft("custom.step")]))

    await asyncio.gather(
        executor_steps(), *(store.mutate_interrupt(note, 9_000, interrupt_id=r.interrupt_id) for r in recs)
    )
    docs = await store.read_events(run.run_id)
    assert [d["sequence"] for d in docs] == list(range(1 + 12 + 24))
    after = await store.load_run(run.run_id)
    assert after is not None and after.next_seq == 37


async def test_unconsumed_lists_settled_interrupts_until_consumed(store: Store) -> None:
    run, (a, b, _) = await with_interrupts(
        store, {"node_id": "a", "requested": 2_300}, {"node_id": "b", "requested": 2_100}, {"node_id": "c"}
    )
    assert await store.unconsumed(run.run_id) == []
    for rec in (a, b):
        await store.mutate_interrupt(resolve(), 9_000, interrupt_id=rec.interrupt_id)
    assert [i.node_id for i in await store.unconsumed(run.run_id)] == ["b", "a"]
    own = await store.load_run(run.run_id)
    assert own is not None
    await store.commit(RunCommit(run.run_id, "A", own.epoch, 9_500, consume=[b.interrupt_id]))
    assert [i.node_id for i in await store.unconsumed(run.run_id)] == ["a"]


async def test_a_run_and_its_latest_interrupt_at_an_address_read_together(store: Store) -> None:
    run, recs = await with_interrupts(
        store,
        {"node_id": "a", "requested": 2_000, "ordinal": 0},
        {"node_id": "a", "requested": 2_000, "ordinal": 1},
        {"node_id": "b", "requested": 2_500},
        {"node_id": "a", "requested": 1_000, "ordinal": 2},
    )
    await store.mutate_interrupt(resolve(), 9_000, interrupt_id=recs[2].interrupt_id)
    for node in ("a", "b", "nowhere"):
        both = await store.run_and_interrupt_at(run.run_id, node)
        assert both == (await store.load_run(run.run_id), await store.interrupt_at(run.run_id, node))
    latest = (await store.run_and_interrupt_at(run.run_id, "a"))[1]
    assert latest is not None and latest.interrupt_id == recs[1].interrupt_id  # same time: the higher ordinal
    assert await store.run_and_interrupt_at("run_missing", "a") == (None, None)
    # No address holds U+0000 (PostgreSQL refuses to compare it): the run, and no interrupt.
    assert await store.run_and_interrupt_at(run.run_id, "a\x00") == (await store.load_run(run.run_id), None)


async def test_inbox_filters_orders_and_pages(store: Store) -> None:
    _, recs = await with_interrupts(
        store,
        {"node_id": "a", "requested": 3_000, "interrupt_id": "int_b"},
        {"node_id": "b", "requested": 3_000, "interrupt_id": "int_C"},
        {"node_id": "c", "requested": 2_000, "kind": "clarification"},
        {"node_id": "d", "requested": 2_500, "kind": "conversation.start"},
        {"node_id": "e", "requested": 4_000},
    )
    _, (x,) = await with_interrupts(store, {"node_id": "x"})  # another run of the same tenant
    other = await started(store, make_run(tenant="other"))
    own = await claimed(store, other)
    await store.commit(RunCommit(other.run_id, "A", own.epoch, 3_000, new_interrupts=[make_interrupt(other, "z")]))
    everything = await store.inbox("acme", kind=None, status="pending", limit=100, cursor=None)
    # Ties on requested_at order by id, bytewise ("C" < "b"); conversation starts are left out.
    assert [i.interrupt_id for i in everything.items] == [
        recs[2].interrupt_id,
        x.interrupt_id,
        "int_C",
        "int_b",
        recs[4].interrupt_id,
    ]
    assert everything.next_cursor is None
    pages: list[str] = []
    cursor = None
    while True:
        page = await store.inbox("acme", kind=None, status="pending", limit=2, cursor=cursor)
        assert len(page.items) <= 2
        pages += [i.interrupt_id for i in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == [i.interrupt_id for i in everything.items]
    only = await store.inbox("acme", kind="clarification", status="pending", limit=10, cursor=None)
    assert [i.interrupt_id for i in only.items] == [recs[2].interrupt_id]
    starts = await store.inbox("acme", kind="conversation.start", status="pending", limit=10, cursor=None)
    assert [i.node_id for i in starts.items] == ["d"]
    await store.mutate_interrupt(resolve(), 9_000, interrupt_id="int_C")
    resolved = await store.inbox("acme", kind=None, status="resolved", limit=10, cursor=None)
    assert [i.interrupt_id for i in resolved.items] == ["int_C"]
    with pytest.raises(ValidationError):
        await store.inbox("acme", kind=None, status="pending", limit=2, cursor="%%%")
    after_all = encode_cursor(10**12, "int_zzz")
    assert (await store.inbox("acme", kind=None, status="pending", limit=2, cursor=after_all)).items == []
    # The count matches what the pages list: the tenant's listed kinds (no conversation starts), or one kind.
    assert await store.inbox_count("acme", kind=None, status="pending") == len(everything.items) - 1  # int_C resolved
    assert await store.inbox_count("acme", kind="clarification", status="pending") == 1
    assert await store.inbox_count("acme", kind="conversation.start", status="pending") == 1
    assert await store.inbox_count("acme", kind=None, status="resolved") == 1
    assert await store.inbox_count("other", kind=None, status="pending") == 1
    assert await store.inbox_count("nobody", kind=None, status="pending") == 0


async def test_deadlines(store: Store) -> None:
    assert await store.next_deadline() is None
    _, (late, soon, _, done) = await with_interrupts(
        store,
        {"node_id": "late", "deadline": 50_000},
        {"node_id": "soon", "deadline": 20_000},
        {"node_id": "none"},
        {"node_id": "done", "deadline": 10_000},
    )
    await store.mutate_interrupt(resolve(), 9_000, interrupt_id=done.interrupt_id)
    assert await store.next_deadline() == 20_000
    assert await store.due_interrupts(19_999) == []
    assert await store.due_interrupts(20_000) == [soon.interrupt_id]
    assert await store.due_interrupts(60_000) == [soon.interrupt_id, late.interrupt_id]
    assert await store.due_interrupts(60_000, limit=1) == [soon.interrupt_id]


async def test_kv_and_audit(store: Store) -> None:
    assert await store.kv_get("ns", "k") is None
    assert await store.kv_put("ns", "k", {"a": [1, 2]}, 1_000) is True
    assert await store.kv_get("ns", "k") == {"a": [1, 2]}
    assert await store.kv_put("ns", "k", "other", 2_000, only_if_absent=True) is False
    assert await store.kv_get("ns", "k") == {"a": [1, 2]}
    assert await store.kv_put("ns", "k", "replaced", 3_000) is True
    assert await store.kv_get("ns", "k") == "replaced"
    assert await store.kv_put("ns", "fresh", None, 3_000, only_if_absent=True) is True
    assert await store.kv_get("other-ns", "k") is None
    assert await store.kv_get("ns", "k\x00") is None
    with pytest.raises(ValidationError, match="U\\+0000"):
        await store.kv_put("ns", "k\x00", "nul", 4_000)
    assert await store.kv_get("ns", "k\x00") is None and await store.kv_get("ns", "k") == "replaced"
    await store.kv_put("other-ns", "old", 1, 1_000)
    assert await store.kv_forget_before("ns", 3_000) == 0
    assert await store.kv_forget_before("ns", 3_001) == 2
    assert await store.kv_get("ns", "k") is None and await store.kv_get("other-ns", "old") == 1
    run, (gate,) = await with_interrupts(store, {"node_id": "gate"})
    for who in ("amy", "ben", "cal"):
        entry = {"principal": who, "action": "vote", "resource": gate.interrupt_id}
        await store.mutate_interrupt(lambda i, r, e=entry: Mutation(audit=[e]), 9_000, interrupt_id=gate.interrupt_id)
    assert [(a["principal"], a["details"]) for a in await store.audit(run.run_id)] == [
        ("amy", {}),
        ("ben", {}),
        ("cal", {}),
    ]
    assert await store.audit("run_missing") == []


async def test_kv_scan_pages_a_prefix_by_key_bytes_newest_first(store: Store) -> None:
    ids = ["01a", "01b", "01c", "z", "é", "中", "😀"]  # keys sort by their UTF-8 bytes, past ASCII too
    for i in ids:
        await store.kv_put("ns", f'["t1","{i}"]', {"id": i}, 1_000)
    await store.kv_put("ns", '["t10","x"]', 0, 1_000)  # shares "t1" but not the prefix '["t1",'
    await store.kv_put("ns", '["t1"]', 0, 1_000)
    await store.kv_put("other-ns", '["t1","01a"]', 0, 1_000)
    await store.kv_put("ns", '["t2","a"]', 0, 1_000)

    async def every(descending: bool, size: int) -> list[str]:
        keys: list[str] = []
        while True:
            page = await store.kv_scan(
                "ns", '["t1",', limit=size, after=keys[-1] if keys else None, descending=descending
            )
            assert len(page) <= size
            keys += [k for k, _ in page]
            if len(page) < size:
                return keys

    newest_first = [f'["t1","{i}"]' for i in reversed(ids)]
    for size in (1, 2, 3, len(ids), 100):
        assert await every(True, size) == newest_first
        assert await every(False, size) == newest_first[::-1]
    assert await store.kv_scan("ns", '["t1",', limit=2) == [
        ('["t1","😀"]', {"id": "😀"}),
        ('["t1","中"]', {"id": "中"}),
    ]
    assert await store.kv_scan("ns", '["t1",', limit=2, after='["t1","01b"]') == [('["t1","01a"]', {"id": "01a"})]
    assert await store.kv_scan("ns", '["t1","😀', limit=5) == [('["t1","😀"]', {"id": "😀"})]
    assert [k for k, _ in await store.kv_scan("ns", "", limit=100)][-1] == '["t1","01a"]'
    assert await store.kv_scan("ns", '["t1",', limit=0) == []
    assert await store.kv_scan("ns", '["t1\x00', limit=5) == []
    assert await store.kv_scan("ns", '["t3",', limit=5) == []


async def test_a_kv_scan_page_holds_at_most_kv_scan_max_pairs(store: Store) -> None:
    await asyncio.gather(*(store.kv_put("ns", f"k{i:04d}", i, 1_000) for i in range(KV_SCAN_MAX + 1)))
    page = await store.kv_scan("ns", "k", limit=10 * KV_SCAN_MAX)
    assert len(page) == KV_SCAN_MAX and page[0] == (f"k{KV_SCAN_MAX:04d}", KV_SCAN_MAX)
    assert await store.kv_scan("ns", "k", limit=KV_SCAN_MAX, after=page[-1][0]) == [("k0000", 0)]


async def test_kv_replace_and_forget_if_compare_first(store: Store) -> None:
    held = {"pending": "n1", "at": 1_000}
    assert await store.kv_replace("ns", "claim", held, {"runId": "r1"}, 1_500) is False  # absent: nothing stored
    assert await store.kv_get("ns", "claim") is None
    await store.kv_put("ns", "claim", held, 1_000)
    assert await store.kv_replace("ns", "claim", {"pending": "n2", "at": 1_000}, {"runId": "r2"}, 2_000) is False
    assert await store.kv_replace("ns", "claim", held, {"runId": "r1"}, 2_000) is True
    assert await store.kv_get("ns", "claim") == {"runId": "r1"}
    # The old value no longer matches: of two replacers reading the same value, one wins.
    assert await store.kv_replace("ns", "claim", held, {"runId": "r3"}, 3_000) is False
    assert await store.kv_get("ns", "claim") == {"runId": "r1"}
    assert await store.kv_forget_before("ns", 2_000) == 0  # the replace stamped updated_at (was 1_000)
    assert await store.kv_forget_if("ns", "claim", held) is False
    assert await store.kv_forget_if("ns", "claim", {"runId": "r1"}) is True
    assert await store.kv_get("ns", "claim") is None
    assert await store.kv_forget_if("ns", "claim", {"runId": "r1"}) is False


async def test_a_statement_the_database_refuses_commits_nothing_of_its_transaction(store: Store) -> None:
    run = make_run()
    await store.create_run(run, [draft("run.started")])
    # The adapter's write goes first, then the run's row, which exists already: the whole transaction fails.
    with pytest.raises((sqlite3.IntegrityError, psycopg.errors.UniqueViolation)):
        await store.create_run(run, [draft("run.started"), draft()], [KvWrite("ns", "refused", "1", 1_000)])
    assert await store.kv_get("ns", "refused") is None and len(await store.read_events(run.run_id)) == 1
    # The connection it ran on is clean again: the next transactions commit.
    for _ in range(3):
        await store.create_run(make_run(), [draft("run.started")], [KvWrite("ns", f"k{_}", "1", 1_000)])
    assert await store.kv_get("ns", "k2") == 1


async def test_a_new_run_carries_adapter_writes_in_its_transaction(store: Store) -> None:
    bound = KvWrite("ns", "thread", '{"runs":["r"]}', 1_000, only_if_absent=True)
    before = store.commits
    await store.create_run(make_run(), [draft("run.started")], [bound])
    assert store.commits - before == 1
    assert await store.kv_get("ns", "thread") == {"runs": ["r"]}
    # Its key taken, a write only_if_absent refuses the whole creation: no run, no events, no other write.
    again = make_run()
    with pytest.raises(KeyTakenError):
        await store.create_run(again, [draft("run.started")], [KvWrite("ns", "other", "1", 1_000), bound])
    assert await store.load_run(again.run_id) is None and await store.read_events(again.run_id) == []
    assert await store.kv_get("ns", "other") is None and await store.kv_get("ns", "thread") == {"runs": ["r"]}
    # The same through an executor's first commit, which inserts the run with its first step.
    new = make_run()
    new.owner, new.epoch = "A", 1
    step = RunCommit(new.run_id, "A", 1, 2_000, events=[draft("node.started", node="a")])
    step.create = ChildStart(new, [draft("run.started")], [bound])
    with pytest.raises(KeyTakenError):
        await store.commit(step)
    assert await store.load_run(new.run_id) is None
    step.create = ChildStart(new, [draft("run.started")], [KvWrite("ns", "thread-2", "[2]", 2_000, True)])
    committed = await store.commit(step)
    assert [d["sequence"] for d in committed.events] == [0, 1] and await store.kv_get("ns", "thread-2") == [2]
    # A compare-and-set write: only while the key holds the value expected.
    stale = make_run()
    with pytest.raises(KeyTakenError):
        await store.create_run(stale, [draft("run.started")], [KvWrite("ns", "thread", "[3]", 3_000, expected="[]")])
    assert await store.load_run(stale.run_id) is None and await store.kv_get("ns", "thread") == {"runs": ["r"]}
    await store.create_run(
        make_run(), [draft("run.started")], [KvWrite("ns", "thread", "[3]", 3_000, expected=bound.text)]
    )
    assert await store.kv_get("ns", "thread") == [3]


async def _idempotency_rows(store: Store, request: pytest.FixtureRequest) -> int:
    if isinstance(store, SqliteStore):
        with sqlite3.connect(store.path) as conn:
            return int(conn.execute("SELECT count(*) FROM idempotency").fetchone()[0])
    return int(pg.execute(request.getfixturevalue("pg_url"), "SELECT count(*) FROM idempotency")[0][0])


async def test_an_idempotency_key_is_taken_once_then_replays_its_response(store: Store) -> None:
    opts = {"lease_ms": 1_000, "ttl_ms": 100_000}
    assert await store.idempotency_begin("k1", "d1", "A", 1_000, **opts) is None
    held = await store.idempotency_begin("k1", "d1", "B", 1_500, **opts)
    assert held is not None and held.pending and held.owner == "A" and held.digest == "d1"
    assert await store.idempotency_finish("k1", "B", 200, {}, "{}") is False  # only the holder records
    assert await store.idempotency_finish("k1", "A", 201, {"location": "/v1/runs/r1"}, '{"runId":"r1"}') is True
    assert await store.idempotency_finish("k1", "A", 500, {}, "{}") is False  # recorded once
    done = await store.idempotency_begin("k1", "d1", "C", 2_000, **opts)
    assert done is not None and not done.pending
    assert (done.status, done.headers, done.body, done.expires_at_ms) == (
        201,
        {"location": "/v1/runs/r1"},
        '{"runId":"r1"}',
        101_000,
    )
    other = await store.idempotency_begin("k1", "d2", "C", 101_000 - 1, **opts)
    assert other is not None and other.digest == "d1"  # the caller tells a mismatch by the digest
    assert await store.idempotency_begin("k2", "d1", "C", 2_000, **opts) is None  # keys are independent


async def test_a_released_or_abandoned_key_can_be_taken_again(store: Store) -> None:
    opts = {"lease_ms": 1_000, "ttl_ms": 100_000}
    assert await store.idempotency_begin("k", "d", "A", 1_000, **opts) is None
    await store.idempotency_release("k", "B")  # not the holder: nothing happens
    assert (await store.idempotency_begin("k", "d", "B", 1_100, **opts)) is not None
    await store.idempotency_release("k", "A")
    assert await store.idempotency_begin("k", "d", "B", 1_200, **opts) is None
    # B dies holding it: once its lease ran out the same request may be handled again, another one may not.
    stalled = await store.idempotency_begin("k", "other", "C", 2_300, **opts)
    assert stalled is not None and stalled.pending and stalled.owner == "B"
    assert await store.idempotency_begin("k", "d", "C", 2_300, **opts) is None
    assert await store.idempotency_finish("k", "B", 200, {}, "late") is False
    assert await store.idempotency_finish("k", "C", 200, {}, "{}") is True
    await store.idempotency_release("k", "C")  # a recorded response is never released
    found = await store.idempotency_begin("k", "d", "D", 2_400, **opts)
    assert found is not None and found.status == 200


async def test_idempotency_keys_expire_and_expired_ones_are_pruned(
    store: Store, request: pytest.FixtureRequest
) -> None:
    for i in range(40):
        assert await store.idempotency_begin(f"old{i}", "d", "A", 1_000, lease_ms=10, ttl_ms=1_000) is None
        assert await store.idempotency_finish(f"old{i}", "A", 200, {}, "{}")
    assert await _idempotency_rows(store, request) == 40
    # Past its retention window a key is free again, and each new key clears away expired ones.
    assert await store.idempotency_begin("old0", "new", "B", 2_000, lease_ms=10, ttl_ms=1_000) is None
    for i in range(3):
        assert await store.idempotency_begin(f"new{i}", "d", "B", 2_000, lease_ms=10, ttl_ms=1_000) is None
    assert await _idempotency_rows(store, request) == 4  # 16 expired ones went with each of the 4 new keys
    fresh = await store.idempotency_begin("old0", "new", "C", 2_001, lease_ms=10, ttl_ms=1_000)
    assert fresh is not None and fresh.owner == "B" and fresh.digest == "new"


async def test_concurrent_takers_of_one_key_have_one_winner(store: Store) -> None:
    got = await asyncio.gather(
        *(store.idempotency_begin("race", "d", f"o{i}", 1_000, lease_ms=1_000, ttl_ms=10_000) for i in range(8))
    )
    assert sum(1 for g in got if g is None) == 1
    assert {g.owner for g in got if g is not None} == {f"o{got.index(None)}"}


# --- PostgreSQL only: what SQLite has no counterpart for -------------------------------------


@pytest.fixture
async def pg_pair(pg_url: str) -> AsyncIterator[tuple[Any, Any]]:
    """Two stores on one database, as two instances would hold them."""
    from openwop_bridge.store.postgres import PostgresStore

    a, b = PostgresStore(pg_url), PostgresStore(pg_url)
    await a.open()
    await b.open()
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()


class Heard:
    """What one instance's listener was told."""

    def __init__(self) -> None:
        self.woken: list[str] = []
        self.events: list[str] = []
        self.deadlines: list[int | None] = []
        self.changed = asyncio.Event()

    def wake(self, run_id: str) -> None:
        self.woken.append(run_id)
        self.changed.set()

    def event(self, run_id: str) -> None:
        self.events.append(run_id)
        self.changed.set()

    def deadline(self, at_ms: int | None) -> None:
        self.deadlines.append(at_ms)
        self.changed.set()

    async def until(self, predicate: Any, timeout: float = 10.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while not predicate():
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise AssertionError(f"not heard: woken={self.woken} events={self.events}")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except TimeoutError:
                pass


@pytest.mark.postgres
async def test_notices_reach_the_other_instance_only_for_committed_work(pg_pair: tuple[Any, Any]) -> None:
    a, b = pg_pair
    heard_a, heard_b = Heard(), Heard()
    await a.listen("A", heard_a.wake, heard_a.event)
    await b.listen("B", heard_b.wake, heard_b.event)
    run = await started(a)  # created on A
    await heard_b.until(lambda: run.run_id in heard_b.events)
    own = await claimed(a, run, "A")
    gate = make_interrupt(run, "gate")
    await a.commit(RunCommit(run.run_id, "A", own.epoch, 3_000, events=[draft()], new_interrupts=[gate]))
    await heard_b.until(lambda: heard_b.events.count(run.run_id) == 2)
    heard_b.events.clear()
    await b.mutate_interrupt(resolve(), 9_000, interrupt_id=gate.interrupt_id)  # answered on B
    await heard_a.until(lambda: run.run_id in heard_a.woken and run.run_id in heard_a.events)
    # A fenced commit and a refused decision roll back: nothing is announced for them.
    with pytest.raises(StaleOwnerError):
        await a.commit(RunCommit(run.run_id, "A", own.epoch + 5, 9_500, events=[draft()]))

    def boom(intr: InterruptRecord, r: RunRecord) -> Mutation:
        raise ValidationError("no")

    with pytest.raises(ValidationError):
        await a.mutate_interrupt(boom, 9_600, interrupt_id=gate.interrupt_id)
    marker = await started(a)  # a later, committed change: everything before it has been delivered
    await heard_b.until(lambda: marker.run_id in heard_b.events)
    assert run.run_id not in heard_b.events
    assert heard_a.events == [run.run_id] and heard_a.woken == [run.run_id]  # nothing of its own
    assert heard_b.woken == []  # B owns nothing, so it is never asked to wake anything


@pytest.mark.postgres
async def test_the_listener_reconnects_and_catches_up(pg_pair: tuple[Any, Any], pg_url: str) -> None:
    a, b = pg_pair
    heard = Heard()
    await a.listen("A", heard.wake, heard.event)
    run = await started(b)
    await claimed(a, run, "A")
    await heard.until(lambda: run.run_id in heard.events)
    pids = pg.execute(
        pg_url,
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name = 'openwop-bridge-listen'",
    )
    assert len(pids) == 1, "the LISTEN connection names itself"
    heard.woken.clear()
    for (pid,) in pids:
        pg.execute(pg_url, "SELECT pg_terminate_backend(%s)", pid)
    # On reconnect every run A owns is woken: a wake-up sent while it was away is not lost.
    await heard.until(lambda: run.run_id in heard.woken, timeout=30)
    later = await started(b)
    await heard.until(lambda: later.run_id in heard.events)


@pytest.mark.postgres
async def test_concurrent_claims_from_two_instances_have_one_winner(pg_pair: tuple[Any, Any]) -> None:
    a, b = pg_pair
    runs = [await started(a) for _ in range(20)]
    results = await asyncio.gather(
        *(s.claim_run(r.run_id, name, 5_000, LEASE) for r in runs for s, name in ((a, "A"), (b, "B")))
    )
    for i in range(len(runs)):
        pair = results[2 * i : 2 * i + 2]
        assert sum(r is not None for r in pair) == 1
    owners = {r.owner for r in results if r is not None}
    assert owners <= {"A", "B"}


@pytest.mark.postgres
async def test_renewal_does_not_wait_behind_or_deadlock_with_a_commit(pg_pair: tuple[Any, Any], pg_url: str) -> None:
    a, _ = pg_pair
    parent = await started(a)
    child = await started(a)
    await claimed(a, parent, "A")
    await claimed(a, child, "A")
    import psycopg

    # Another session holds the child's row, as a commit in flight would.
    async with await psycopg.AsyncConnection.connect(pg_url) as holder:
        await holder.execute("SELECT 1 FROM runs WHERE run_id=%s FOR UPDATE", (child.run_id,))
        renewal = asyncio.create_task(a.renew_leases("A", [parent.run_id, child.run_id], 50_000, LEASE))
        await asyncio.sleep(0.3)
        renewed_parent = await a.load_run(parent.run_id)
        assert renewed_parent is not None and renewed_parent.lease_until_ms == 50_000 + LEASE
        assert not renewal.done()  # the busy row is renewed on its own, once free
        await holder.commit()
    assert await asyncio.wait_for(renewal, 10) == 2


async def test_callers_resume_in_the_order_their_transactions_locked_the_run() -> None:
    from openwop_bridge.store.pg_tx import ReturnOrder, Tx

    order = ReturnOrder()
    seen: list[str] = []

    async def finish(run_id: str, ticket: int, name: str) -> None:
        try:
            await order.turn(run_id, ticket)
        finally:
            order.done(run_id, ticket)
        seen.append(name)

    first, second, other = order.take("r"), order.take("r"), order.take("s")
    late = asyncio.create_task(finish("r", second, "second"))
    unrelated = asyncio.create_task(finish("s", other, "other"))
    await asyncio.sleep(0.01)
    assert seen == ["other"] and not late.done()  # another run never waits; a later lock does
    await finish("r", first, "first")
    seen.append("first caller carries on")  # before the second caller resumes
    await asyncio.gather(late, unrelated)
    assert seen == ["other", "first", "first caller carries on", "second"]

    # A caller cancelled while waiting for its turn does not hold up the ones behind it.
    a, b, c = order.take("r"), order.take("r"), order.take("r")
    waiting_b = asyncio.create_task(finish("r", b, "b"))
    waiting_c = asyncio.create_task(finish("r", c, "c"))
    await asyncio.sleep(0.01)
    waiting_b.cancel()
    await finish("r", a, "a")
    await asyncio.wait_for(waiting_c, 5)
    assert seen[-2:] == ["a", "c"] and waiting_b.cancelled()

    # A transaction that locks one run twice takes one ticket, so it never waits for itself.
    tx = Tx(order)
    tx.locked("r")
    tx.locked("r")
    tx.locked("p")
    assert [run for run, _ in tx.tickets] == ["r", "p"]
    for run_id, ticket in tx.tickets:
        await asyncio.wait_for(order.turn(run_id, ticket), 5)
    tx.release()
    assert order._runs == {}  # nothing left behind once every caller has resumed


@pytest.mark.postgres
async def test_inbox_and_reclaim_queries_use_their_indexes(pg_url: str) -> None:
    from openwop_bridge.store.postgres import PostgresStore

    store = PostgresStore(pg_url)
    await store.open()
    await store.close()
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")

        def plan(statement: str) -> str:
            return "\n".join(r[0] for r in conn.execute("EXPLAIN " + statement).fetchall())

        by_kind = plan(
            "SELECT interrupt_id FROM interrupts WHERE tenant='t' AND status='pending' AND kind='approval' "
            "ORDER BY requested_at, interrupt_id LIMIT 51"
        )
        # An empty table's estimates favour sorting a few rows; with sorting off, a plan without one must exist.
        conn.execute("SET enable_sort = off")
        every = plan(
            " UNION ALL ".join(
                f"(SELECT interrupt_id, requested_at FROM interrupts WHERE tenant='t' AND status='pending' "
                f"AND kind='{kind}' ORDER BY requested_at, interrupt_id LIMIT 51)"
                for kind in LISTED_KINDS
            )
            + " ORDER BY requested_at, interrupt_id LIMIT 51"
        )
        due = plan(
            "SELECT interrupt_id FROM interrupts WHERE status='pending' AND deadline IS NOT NULL AND deadline <= 5"
        )
        work = plan("SELECT run_id FROM runs WHERE needs_work AND (owner IS NULL OR lease_until < 5)")
    assert "using interrupts_inbox_kind on" in by_kind and "Sort" not in by_kind
    # Without a kind (the store's query, bridge/store/reads.py): the listed kinds' ranges, merged.
    assert every.count("using interrupts_inbox_kind on") == len(LISTED_KINDS) and "Merge Append" in every, every
    assert "Sort  (" not in every, every
    assert "interrupts_deadline" in due
    assert "runs_needs_work" in work


def test_open_store_selects_postgres_and_hides_the_password() -> None:
    from openwop_bridge.store.postgres import PostgresStore

    store = open_store("postgresql://bridge:s3cret@db.example:5432/bridge")
    assert isinstance(store, PostgresStore) and store.single_instance is False
    assert store.url == "postgresql://bridge:s3cret@db.example:5432/bridge"  # connectable, e.g. by adapters
    assert store.display_url == "postgresql://bridge:***@db.example:5432/bridge"
    assert isinstance(open_store("postgres://h/db"), PostgresStore)


@pytest.mark.postgres
async def test_an_unreachable_server_is_a_clear_error() -> None:
    from openwop_bridge.store.postgres import PostgresStore

    store = PostgresStore("postgresql://nobody:pw@127.0.0.1:1/none?connect_timeout=2")
    with pytest.raises(RuntimeError) as err:
        await store.open()
    assert "cannot connect to PostgreSQL at postgresql://nobody:***@127.0.0.1:1/none" in str(err.value)


@pytest.mark.postgres
async def test_deadlines_and_released_runs_are_told_to_every_other_instance(pg_pair: tuple[Any, Any]) -> None:
    a, b = pg_pair
    heard_a, heard_b = Heard(), Heard()
    await a.listen("A", heard_a.wake, heard_a.event, heard_a.deadline)
    await b.listen("B", heard_b.wake, heard_b.event, heard_b.deadline)
    run = await started(a)
    own = await claimed(a, run, "A")
    gates = [make_interrupt(run, "late", deadline=90_000), make_interrupt(run, "soon", deadline=40_000, ordinal=1)]
    await a.commit(RunCommit(run.run_id, "A", own.epoch, 3_000, events=[draft()], new_interrupts=gates))
    await heard_b.until(lambda: heard_b.deadlines)
    assert heard_b.deadlines == [40_000]  # the earliest the commit wrote; B's timer re-arms for it
    assert heard_b.woken == []
    # A graceful stop of A: B is asked to wake the released run, though B never owned it.
    assert await a.release_owned("A") == [run.run_id]
    await heard_b.until(lambda: run.run_id in heard_b.woken)
    assert heard_a.deadlines == [] and heard_a.woken == []  # nothing of its own
