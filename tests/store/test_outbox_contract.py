"""The outbox part of the store contract, on SQLite and PostgreSQL: notices planned inside the run's own
transaction (and not written when it fails), leases that share the outbox between owners and expire to the
others, retries, dead letters (content-free, per tenant), caps, give-backs and pruning."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge.core.errors import StaleOwnerError
from openwop_bridge.core.notices import NoticeDraft, OutboxLimits
from openwop_bridge.core.records import InterruptRecord, Mutation, RunRecord
from openwop_bridge.store import open_store
from openwop_bridge.store.base import RunCommit, Store
from openwop_bridge.store.plan_outbox import QUEUE_FULL, REFUSED
from openwop_bridge.store.sqlite import SqliteStore
from tests.store.test_store_contract import LEASE, draft, make_interrupt, make_run

OWNER_LEASE = 5_000
ALL = ("webhook", "email", "slack")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        s: Store = SqliteStore(tmp_path / "outbox.db")
    else:
        s = open_store(request.getfixturevalue("pg_url"))
    await s.open()
    try:
        yield s
    finally:
        await s.close()


def interrupt_planner(
    run: RunRecord, events: Sequence[dict[str, Any]], opened: Sequence[InterruptRecord], now_ms: int
) -> list[NoticeDraft]:
    """One webhook notice per interrupt opened, naming the event that opened it."""
    by_type = {e["type"]: e for e in events}
    return [
        NoticeDraft(
            "webhook",
            "wh_1",
            {"interrupt": i.interrupt_id, "seq": by_type.get("node.suspended", {}).get("sequence")},
            interrupt_id=i.interrupt_id,
        )
        for i in opened
    ]


async def _claimed_run(store: Store, now: int = 5_000) -> RunRecord:
    run = make_run()
    await store.create_run(run, [draft("run.started")])
    claimed = await store.claim_run(run.run_id, "A", now, LEASE)
    assert claimed is not None
    return claimed


async def test_notices_ride_in_the_commit_that_opens_the_interrupt(store: Store) -> None:
    store.notice_planning.planners = (interrupt_planner,)
    run = await _claimed_run(store)
    intr = make_interrupt(run)
    intr.requested_event_id = "evt_susp"
    suspended = draft("node.suspended", node="gate")
    suspended.event_id = "evt_susp"
    await store.commit(RunCommit(run.run_id, "A", run.epoch, 6_000, events=[suspended], new_interrupts=[intr], run=run))
    [notice] = await store.outbox_claim("w1", 6_000, OWNER_LEASE, 10, ALL)
    assert (notice.channel, notice.recipient, notice.tenant, notice.run_id) == ("webhook", "wh_1", "acme", run.run_id)
    assert notice.interrupt_id == intr.interrupt_id and notice.attempt == 1
    assert notice.payload == {"interrupt": intr.interrupt_id, "seq": 1}
    assert notice.notice_id.startswith("ntc_") and len(notice.notice_id) == 30

    # A commit refused by the fence writes nothing at all, its notices included.
    other = make_interrupt(run, "gate2")
    with pytest.raises(StaleOwnerError):
        await store.commit(RunCommit(run.run_id, "A", run.epoch - 1, 7_000, new_interrupts=[other], run=run))
    assert await store.outbox_claim("w1", 8_000, OWNER_LEASE, 10, ALL) == []


async def test_a_claim_is_one_owners_until_its_lease_runs_out(store: Store) -> None:
    run = await _claimed_run(store)
    [nid] = await store.outbox_add(run.tenant, run.run_id, [NoticeDraft("email", "alice", {"m": 1})], 1_000)
    [first] = await store.outbox_claim("w1", 1_000, OWNER_LEASE, 10, ALL)
    assert first.notice_id == nid and first.attempt == 1
    assert await store.outbox_claim("w2", 1_000 + OWNER_LEASE - 1, OWNER_LEASE, 10, ALL) == []
    # w1 died: once its lease ran out, w2 takes the notice as a new attempt, with the same id.
    [again] = await store.outbox_claim("w2", 1_000 + OWNER_LEASE, OWNER_LEASE, 10, ALL)
    assert (again.notice_id, again.attempt, again.payload) == (nid, 2, {"m": 1})
    # The late outcome of w1's attempt counts for nothing; w2's does.
    assert not await store.outbox_settle(nid, "w1", 1, "delivered", 0, None, 7_000)
    assert await store.outbox_settle(nid, "w2", 2, "delivered", 0, None, 7_000)
    assert await store.outbox_states([nid]) == {nid: ("delivered", 2, None)}
    assert await store.outbox_claim("w3", 99_000, OWNER_LEASE, 10, ALL) == []


async def test_a_retry_waits_for_its_time_and_a_dead_letter_names_the_delivery_only(store: Store) -> None:
    run = await _claimed_run(store)
    [nid] = await store.outbox_add(run.tenant, run.run_id, [NoticeDraft("webhook", "wh_9", {"secret": "x"})], 1_000)
    [n] = await store.outbox_claim("w1", 1_000, OWNER_LEASE, 10, ALL)
    assert await store.outbox_settle(nid, "w1", n.attempt, "queued", 3_000, "http_503", 1_100)
    assert await store.outbox_next_due() == 3_000
    assert await store.outbox_claim("w1", 2_999, OWNER_LEASE, 10, ALL) == []
    [n2] = await store.outbox_claim("w1", 3_000, OWNER_LEASE, 10, ALL)
    assert n2.attempt == 2
    assert await store.outbox_settle(nid, "w1", 2, "dead", 3_100, "http_500", 3_100)
    [dead] = await store.outbox_dead_letters("webhook", "wh_9", "acme", limit=10)
    assert (dead.notice_id, dead.attempts, dead.reason, dead.run_id, dead.dead_ms) == (
        nid,
        2,
        "http_500",
        run.run_id,
        3_100,
    )
    assert "secret" not in repr(dead)
    assert await store.outbox_dead_letters("webhook", "wh_9", "other-tenant", limit=10) == []
    assert await store.outbox_dead_letters("webhook", "wh_9", "acme", limit=10, after=nid) == []
    assert await store.outbox_next_due() is None


async def test_a_delayed_notice_is_due_only_at_its_time(store: Store) -> None:
    run = await _claimed_run(store)
    await store.outbox_add(run.tenant, run.run_id, [NoticeDraft("email", "bob", {}, not_before_ms=50_000)], 1_000)
    assert await store.outbox_claim("w1", 49_999, OWNER_LEASE, 10, ALL) == []
    assert len(await store.outbox_claim("w1", 50_000, OWNER_LEASE, 10, ALL)) == 1


async def test_caps_refuse_a_notice_visibly_and_content_free(store: Store) -> None:
    store.notice_planning.limits = OutboxLimits(per_tenant=3, per_recipient=2)
    run = await _claimed_run(store)
    drafts = [NoticeDraft("webhook", "wh_a", {"n": i}) for i in range(3)] + [NoticeDraft("webhook", "wh_b", {"n": 9})]
    ids = await store.outbox_add(run.tenant, run.run_id, drafts, 1_000)
    assert len(ids) == 4
    claimed = {n.notice_id: n for n in await store.outbox_claim("w1", 1_000, OWNER_LEASE, 10, ALL)}
    assert [claimed[i].payload for i in ids] == [{"n": 0}, {"n": 1}, {REFUSED: QUEUE_FULL}, {"n": 9}]
    # The tenant's cap: three queued now, the next refused whatever its recipient.
    [late] = await store.outbox_add(run.tenant, run.run_id, [NoticeDraft("webhook", "wh_c", {"n": 5})], 1_000)
    [refused] = await store.outbox_claim("w1", 1_000, OWNER_LEASE, 10, ALL)
    assert (refused.notice_id, refused.payload) == (late, {REFUSED: QUEUE_FULL})


async def test_a_notice_given_back_keeps_its_attempt_count(store: Store) -> None:
    run = await _claimed_run(store)
    [nid] = await store.outbox_add(run.tenant, run.run_id, [NoticeDraft("slack", "slack:C1", {})], 1_000)
    await store.outbox_claim("w1", 1_000, OWNER_LEASE, 10, ALL)
    assert await store.outbox_release([nid], "w2", 1_100) == 0
    assert await store.outbox_release([nid], "w1", 1_100) == 1
    [n] = await store.outbox_claim("w2", 1_100, OWNER_LEASE, 10, ALL)
    assert n.attempt == 1


async def test_settled_notices_are_pruned_after_their_retention(store: Store) -> None:
    store.notice_planning.limits = OutboxLimits(delivered_ttl_ms=1_000, dead_ttl_ms=5_000)
    run = await _claimed_run(store)
    a, b, c = await store.outbox_add(run.tenant, run.run_id, [NoticeDraft("email", f"p{i}", {}) for i in range(3)], 0)
    for n in await store.outbox_claim("w1", 0, OWNER_LEASE, 10, ALL):
        status = {a: "delivered", b: "dead", c: "queued"}[n.notice_id]
        await store.outbox_settle(n.notice_id, "w1", n.attempt, status, 100_000, None, 10)
    assert await store.outbox_prune(1_011) == 1
    assert set(await store.outbox_states([a, b, c])) == {b, c}
    assert await store.outbox_prune(5_011) == 1
    assert set(await store.outbox_states([a, b, c])) == {c}


async def test_answers_and_new_runs_plan_notices_for_their_events_too(store: Store) -> None:
    seen: list[tuple[str, list[str]]] = []

    def every_event(
        run: RunRecord, events: Sequence[dict[str, Any]], opened: Sequence[InterruptRecord], now_ms: int
    ) -> list[NoticeDraft]:
        seen.append((run.run_id, [e["type"] for e in events]))
        return [NoticeDraft("webhook", "wh_all", {"seq": e["sequence"]}) for e in events]

    store.notice_planning.planners = (every_event,)
    run = make_run()
    await store.create_run(run, [draft("run.started")])
    await store.mutate_run(run.run_id, lambda r, _: Mutation(events=[draft("run.resumed")]), 2_000)
    assert seen == [(run.run_id, ["run.started"]), (run.run_id, ["run.resumed"])]
    claimed = await store.outbox_claim("w1", 2_000, OWNER_LEASE, 10, ALL)
    assert sorted(n.payload["seq"] for n in claimed) == [0, 1]


async def test_a_claim_takes_only_the_channels_its_owner_delivers(store: Store) -> None:
    run = await _claimed_run(store)
    await store.outbox_add(run.tenant, run.run_id, [NoticeDraft("email", "a", {}), NoticeDraft("webhook", "w", {})], 0)
    assert [n.channel for n in await store.outbox_claim("w1", 0, OWNER_LEASE, 10, ("webhook",))] == ["webhook"]
    assert await store.outbox_claim("w1", 0, OWNER_LEASE, 10, ()) == []
    assert [n.channel for n in await store.outbox_claim("w2", 0, OWNER_LEASE, 10, ALL)] == ["email"]


async def test_owners_claiming_at_once_share_the_notices(store: Store) -> None:
    run = await _claimed_run(store)
    await store.outbox_add(run.tenant, run.run_id, [NoticeDraft("webhook", f"wh_{i}", {}) for i in range(40)], 0)
    batches = await asyncio.gather(*(store.outbox_claim(f"w{i}", 0, OWNER_LEASE, 7, ALL) for i in range(8)))
    ids = [n.notice_id for batch in batches for n in batch]
    assert len(ids) == len(set(ids)) == 40


async def test_a_single_instance_restart_frees_the_notices_it_was_delivering(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "restart.db")
    await store.open()
    try:
        run = await _claimed_run(store)
        [nid] = await store.outbox_add(run.tenant, run.run_id, [NoticeDraft("webhook", "wh", {})], 0)
        await store.outbox_claim("dead-server", 0, 60_000, 10, ALL)
        assert await store.outbox_claim("new-server", 1, 60_000, 10, ALL) == []
        await store.reset_owners()
        [again] = await store.outbox_claim("new-server", 1, 60_000, 10, ALL)
        assert (again.notice_id, again.attempt) == (nid, 2)
    finally:
        await store.close()


async def test_a_failing_planner_never_fails_the_commit(store: Store) -> None:
    def broken(
        run: RunRecord, events: Sequence[dict[str, Any]], opened: Sequence[InterruptRecord], now_ms: int
    ) -> list[NoticeDraft]:
        raise KeyError("a planner bug")

    store.notice_planning.planners = (broken, interrupt_planner)
    run = await _claimed_run(store)
    intr = make_interrupt(run)
    await store.commit(
        RunCommit(run.run_id, "A", run.epoch, 6_000, events=[draft("node.suspended")], new_interrupts=[intr], run=run)
    )
    assert [i.interrupt_id for i in await store.run_interrupts(run.run_id, open_only=True)] == [intr.interrupt_id]
    [notice] = await store.outbox_claim("w1", 6_000, OWNER_LEASE, 10, ALL)  # the other planner's notice is written
    assert notice.interrupt_id == intr.interrupt_id


async def test_next_due_of_the_channels_named(store) -> None:  # type: ignore[no-untyped-def]
    """A worker looks only for what its channels deliver: another channel's due notice is not its business."""
    await store.outbox_add("t", "run-1", [NoticeDraft("email", "alice", {}, not_before_ms=2_000)], 1_000)
    await store.outbox_add("t", "run-1", [NoticeDraft("teams", "ops", {}, not_before_ms=5_000)], 1_000)
    assert await store.outbox_next_due() == 2_000
    assert await store.outbox_next_due(["teams"]) == 5_000
    assert await store.outbox_next_due(["email", "teams"]) == 2_000
    assert await store.outbox_next_due(["slack"]) is None
    assert await store.outbox_next_due([]) is None


async def test_dead_letters_come_newest_first_naming_their_event_and_a_refused_one_keeps_its_labels(
    store: Store,
) -> None:
    store.notice_planning.limits = OutboxLimits(per_tenant=100, per_recipient=2)
    run = await _claimed_run(store)
    labels = [{"eventId": f"evt-{i:020d}", "eventType": "run.started"} for i in range(3)]
    drafts = [NoticeDraft("webhook", "wh_d", {**label, "body": {"secret": "x"}}) for label in labels]
    ids = [(await store.outbox_add(run.tenant, run.run_id, [d], 1_000 + i))[0] for i, d in enumerate(drafts)]
    # the third is past the cap: refused
    claimed = {n.notice_id: n for n in await store.outbox_claim("w1", 1_002, OWNER_LEASE, 10, ALL)}
    assert claimed[ids[2]].payload == {REFUSED: QUEUE_FULL, **labels[2]}
    for nid in ids:
        assert await store.outbox_settle(nid, "w1", 1, "dead", 0, "http_500", 2_000)
    page = await store.outbox_dead_letters("webhook", "wh_d", run.tenant, limit=2)
    assert [d.notice_id for d in page] == [ids[2], ids[1]]
    assert [(d.event_id, d.event_type) for d in page] == [(x["eventId"], x["eventType"]) for x in labels[:0:-1]]
    [last] = await store.outbox_dead_letters("webhook", "wh_d", run.tenant, limit=2, after=ids[1])
    assert last.notice_id == ids[0] and "secret" not in repr([*page, last])


async def test_a_claim_is_fair_across_tenants_and_destinations(store: Store) -> None:
    """One tenant's backlog of older due notices does not keep another tenant's newer one out of the next claim,
    nor one destination's backlog another destination's of the same tenant."""
    store.notice_planning.limits = OutboxLimits(per_tenant=10_000, per_recipient=10_000)
    backlog = [NoticeDraft("webhook", "wh_refusing", {"n": i}) for i in range(300)]
    await store.outbox_add("tenant-b", "run-b", backlog, 1_000)
    [other_endpoint] = await store.outbox_add("tenant-b", "run-b", [NoticeDraft("webhook", "wh_fine", {})], 1_500)
    [tenant_a] = await store.outbox_add("tenant-a", "run-a", [NoticeDraft("webhook", "wh_a", {})], 2_000)
    first = await store.outbox_claim("w1", 3_000, OWNER_LEASE, 16, ALL)
    assert 3 <= len(first) <= 16
    claimed = {n.notice_id for n in first}
    assert tenant_a in claimed and other_endpoint in claimed
    # Nothing is lost or claimed twice: the rest of the backlog follows.
    rest = await store.outbox_claim("w1", 3_000, OWNER_LEASE, 1_000, ALL)
    assert len(rest) == 302 - len(first) and not claimed & {n.notice_id for n in rest}


async def test_a_claim_leaves_out_the_busy_tenants_and_recipients_it_is_told(store: Store) -> None:
    """A worker that holds as many of a tenant's notices (or a destination's) as it may names them busy: the
    claim takes none of theirs, and takes the others'."""
    store.notice_planning.limits = OutboxLimits(per_tenant=10_000, per_recipient=10_000)
    await store.outbox_add("tenant-b", "run-b", [NoticeDraft("webhook", f"wh_b{i}", {}) for i in range(40)], 1_000)
    mine = await store.outbox_add("tenant-a", "run-a", [NoticeDraft("webhook", f"wh_a{i}", {}) for i in range(3)], 900)
    claimed = await store.outbox_claim("w1", 2_000, OWNER_LEASE, 16, ALL, ["wh_a2"], busy_tenants=["tenant-b"])
    assert sorted(n.notice_id for n in claimed) == sorted(mine[:2])
    rest = await store.outbox_claim("w1", 2_000, OWNER_LEASE, 100, ALL)
    assert len(rest) == 41 and {n.tenant for n in rest} == {"tenant-a", "tenant-b"}


async def test_a_redrive_queues_kept_dead_letters_again_within_the_caps(store: Store) -> None:
    store.notice_planning.limits = OutboxLimits(per_tenant=100, per_recipient=100, dead_ttl_ms=50_000)
    run = await _claimed_run(store)
    ids = [
        (await store.outbox_add(run.tenant, run.run_id, [NoticeDraft("webhook", "wh_r", {"n": i})], i))[0]
        for i in range(4)
    ]
    for n in await store.outbox_claim("w1", 10, OWNER_LEASE, 10, ALL):
        assert await store.outbox_settle(n.notice_id, "w1", n.attempt, "dead", 0, "http_500", 1_000 * n.payload["n"])
    # The oldest is past its retention: gone from the sink, not redriven. Another tenant's redrive finds nothing.
    assert await store.outbox_redrive("webhook", "wh_r", "other", None, 50_500, cap=10) == []
    assert await store.outbox_redrive("webhook", "wh_r", run.tenant, [ids[0]], 50_500, cap=10) == []
    # One named, then the rest within the destination's room (two queued at most: one left).
    assert await store.outbox_redrive("webhook", "wh_r", run.tenant, [ids[2]], 50_500, cap=2) == [ids[2]]
    assert await store.outbox_redrive("webhook", "wh_r", run.tenant, None, 50_500, cap=2) == [ids[1]]
    claimed = await store.outbox_claim("w2", 50_500, OWNER_LEASE, 10, ALL)
    assert sorted((n.notice_id, n.attempt, n.payload["n"]) for n in claimed) == [(ids[1], 1, 1), (ids[2], 1, 2)]
    assert [d.notice_id for d in await store.outbox_dead_letters("webhook", "wh_r", run.tenant, limit=10)] == [
        ids[3],
        ids[0],
    ]
