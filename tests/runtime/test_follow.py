"""Engine.follow: the one way every surface follows a run."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_bridge import Engine
from tests.helpers import ADMIN, settle


async def test_a_run_ending_between_the_backlog_and_the_run_check_is_followed_to_its_end(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = await engine.create_run(ADMIN, "conformance-approval")
    await settle(engine, run.run_id)
    load_run = engine.store.load_run
    finished = False

    async def ending_first(run_id: str) -> Any:
        # The follower has read the backlog; the run is answered and ends before it looks at the run.
        nonlocal finished
        if not finished:
            finished = True
            [record] = await engine.open_interrupts(run.run_id)
            await engine.resolve(ADMIN, {"action": "accept"}, interrupt_id=record.interrupt_id)
            await settle(engine, run.run_id, statuses=("completed",))
        return await load_run(run_id)

    monkeypatch.setattr(engine.store, "load_run", ending_first)
    followed = [doc async for docs in engine.follow(run.run_id, -1, idle_s=1.0) for doc in docs]
    stored = await engine.run_events(run.run_id)
    assert finished
    assert [d["sequence"] for d in followed] == [d["sequence"] for d in stored]
    assert followed[-1]["type"] == "run.completed"


async def test_a_backlog_batch_holds_no_more_bytes_than_its_page_allows(engine: Engine) -> None:
    """Large events come fewer to a batch (at least one): what a stalled stream holds is bounded in bytes."""
    from openwop_bridge.runtime.follow import RunFollower

    run = await engine.create_run(ADMIN, "conformance-approval")
    await settle(engine, run.run_id)
    [record] = await engine.open_interrupts(run.run_id)
    await engine.resolve(ADMIN, {"action": "accept"}, interrupt_id=record.interrupt_id)
    await settle(engine, run.run_id, statuses=("completed",))
    stored = await engine.run_events(run.run_id)
    sizes = await engine.store.event_sizes(run.run_id, -1, 100)
    follower = RunFollower(engine.store, engine.hub)
    one_each = [docs async for docs in follower.follow(run.run_id, -1, page=32, page_bytes=1)]
    assert one_each == [[doc] for doc in stored]
    two = [docs async for docs in follower.follow(run.run_id, -1, page=32, page_bytes=sizes[0] + sizes[1])]
    assert two[0] == stored[:2]
    whole = [docs async for docs in follower.follow(run.run_id, -1, page=32)]
    assert whole == [stored]


async def test_a_page_of_events_is_bounded_by_its_stored_bytes_in_one_read(engine: Engine) -> None:
    """``Store.read_event_page``: up to ``limit`` events whose stored documents fit in ``max_bytes`` (at least one),
    and whether more may follow, on either store."""
    run = await engine.create_run(ADMIN, "conformance-approval")
    await settle(engine, run.run_id)
    [record] = await engine.open_interrupts(run.run_id)
    await engine.resolve(ADMIN, {"action": "accept"}, interrupt_id=record.interrupt_id)
    await settle(engine, run.run_id, statuses=("completed",))
    store = engine.store
    stored = await engine.run_events(run.run_id)
    sizes = await store.event_sizes(run.run_id, -1, 100)
    assert len(stored) == len(sizes) >= 4
    # At least one, however small the bound; more follow.
    assert await store.read_event_page(run.run_id, -1, 32, 1) == (stored[:1], True)
    # Exactly the bytes of the first two: two, more follow; one byte short of them: one.
    assert await store.read_event_page(run.run_id, -1, 32, sizes[0] + sizes[1]) == (stored[:2], True)
    assert await store.read_event_page(run.run_id, -1, 32, sizes[0] + sizes[1] - 1) == (stored[:1], True)
    # The limit ends the page first: more may follow.
    assert await store.read_event_page(run.run_id, -1, 3, 10**9) == (stored[:3], True)
    # Everything fits: the last events, and the store holds no more.
    assert await store.read_event_page(run.run_id, -1, 100, 10**9) == (stored, False)
    after = stored[1]["sequence"]
    assert await store.read_event_page(run.run_id, after, 100, 10**9) == (stored[2:], False)
    # Nothing after the last.
    assert await store.read_event_page(run.run_id, stored[-1]["sequence"], 100, 10**9) == ([], False)
