"""``threads.search`` from ``langgraph_sdk``: every thread of the tenant, page after page, filtered and ordered.

Threads are read from the range of their stored keys, so nothing caps how many
are listed, and threads stored before (when a list of the newest 2,000 ids was
kept beside them) are listed as well.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from openwop_bridge import Engine
from openwop_bridge.core.auth import DEFAULT_TENANT
from openwop_bridge.langgraph_api import threads
from tests.conftest import TOKENS


def client(url: str, who: str = "admin") -> Any:
    return get_client(url=url, api_key=TOKENS[who])


async def every(c: Any, page: int, **filters: Any) -> list[dict[str, Any]]:
    """All that ``threads.search`` lists, ``page`` at a time (``limit`` / ``offset``)."""
    found: list[dict[str, Any]] = []
    while True:
        got = await c.threads.search(limit=page, offset=len(found), **filters)
        found += got
        if len(got) < page:
            return found


async def test_more_than_two_thousand_threads_and_one_stored_before_are_all_listed(served: str, engine: Engine) -> None:
    # A thread as stored before, and the list of newest ids kept then, which no longer names it.
    old = {"threadId": "t-old", "tenant": DEFAULT_TENANT, "createdAt": 1, "updatedAt": 1, "metadata": {"era": "old"}}
    await engine.adapter_state(threads.NAMESPACE).put(threads.stored(engine).key(DEFAULT_TENANT, "t-old"), old)
    await engine.adapter_state("langgraph.threads").put(DEFAULT_TENANT, ["t-gone"])
    now = engine.clock.now_ms()
    made = [threads.Thread(engine.clock.new_id("thread"), DEFAULT_TENANT, now, now) for _ in range(2_050)]
    assert all(await asyncio.gather(*(threads.save(engine, t, create=True) for t in made)))
    c = client(served)
    listed = [t["thread_id"] for t in await every(c, 1000)]
    assert len(listed) == len(set(listed)) == 2_051
    assert set(listed) == {t.thread_id for t in made} | {"t-old"}
    [shown] = await c.threads.search(metadata={"era": "old"})
    assert shown["thread_id"] == "t-old" and shown["status"] == "idle"
    assert await client(served, "other").threads.search() == []


async def test_newest_first_and_oldest_first_page_by_page(served: str) -> None:
    c = client(served)
    made = [(await c.threads.create(metadata={"lane": "order"}))["thread_id"] for _ in range(7)]
    await c.threads.create(thread_id="zz-other-lane", metadata={"lane": "other"})
    newest = await every(c, 3, metadata={"lane": "order"})
    assert {t["thread_id"] for t in newest} == set(made)
    created = [t["created_at"] for t in newest]
    assert created == sorted(created, reverse=True)
    oldest = await every(c, 2, metadata={"lane": "order"}, sort_order="asc")
    assert [t["thread_id"] for t in oldest] == [t["thread_id"] for t in reversed(newest)]
    by_id = await every(c, 4, metadata={"lane": "order"}, sort_by="thread_id", sort_order="desc")
    assert [t["thread_id"] for t in by_id] == sorted(made, reverse=True)
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await c.threads.search(sort_order="sideways")
    assert refused.value.response.status_code == 400
    assert refused.value.response.json()["error"] == "validation_error"


async def test_status_values_and_ids_filter_with_offset(served: str) -> None:
    c = client(served)
    waiting = [(await c.threads.create(metadata={"lane": "f"}))["thread_id"] for _ in range(3)]
    for thread_id in waiting:
        await c.runs.wait(thread_id, "conformance-approval", input={})
    idle = [(await c.threads.create(metadata={"lane": "f"}))["thread_id"] for _ in range(3)]
    await c.threads.update_state(idle[1], {"topic": "billing"})
    interrupted = await every(c, 2, metadata={"lane": "f"}, status="interrupted")
    assert sorted(t["thread_id"] for t in interrupted) == sorted(waiting)
    assert [t["thread_id"] for t in await every(c, 1, status="idle", metadata={"lane": "f"})] == idle[::-1]
    [billing] = await c.threads.search(values={"topic": "billing"})
    assert billing["thread_id"] == idle[1]
    picked = [waiting[0], idle[2], "t-missing"]
    assert [t["thread_id"] for t in await c.threads.search(ids=picked)] == sorted(picked[:2], reverse=True)
    assert [t["thread_id"] for t in await c.threads.search(ids=picked, offset=1)] == [min(picked[:2])]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await c.threads.search(ids=[f"t-{i}" for i in range(1001)])
    assert refused.value.response.status_code == 400


def test_timestamps_have_one_width_so_they_sort_as_text() -> None:
    """A time on a whole second keeps its fraction: '…:46.000000Z' sorts before '…:46.002000Z', '…:46Z' did not."""
    from openwop_bridge.langgraph_api.shapes import iso

    whole, later = iso(1_795_000_000_000), iso(1_795_000_000_002)
    assert len(whole) == len(later) and whole < later
