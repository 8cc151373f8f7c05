"""Two ``openwop-bridge serve`` processes on one PostgreSQL database, driven by ``langgraph_sdk``.

Threads created on both instances at once are all listed by ``threads.search``
on either instance, page after page: no instance's thread is lost from the
listing because the other created one at the same moment.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from openwop_bridge.spec import load_fixture
from tests.server import ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

KEY = "lg-multi-key-123456"
PER_INSTANCE = 60
IN_FLIGHT = 12
PAGE = 25


@pytest.fixture
def pair(pg_url: str, tmp_path: Path) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two instances serving ``/langgraph`` on one fresh database."""
    folder = tmp_path / "workflows"
    folder.mkdir()
    (folder / "conformance-approval.json").write_text(json.dumps(load_fixture("conformance-approval")))
    args = ["--no-demo", "--workflows", str(folder), "--api-key", f"alice={KEY}+admin"]
    a = ServerProcess(pg_url, args)
    a.log = tmp_path / "a.log"
    b = ServerProcess(pg_url, args)
    b.log = tmp_path / "b.log"
    a.start()
    try:
        b.start()
        yield a, b
    finally:
        a.stop()
        b.stop()


async def create_many(client: Any, prefix: str) -> list[str]:
    """``PER_INSTANCE`` threads, ``IN_FLIGHT`` at a time; every fourth made by its first run."""
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def one(i: int) -> str:
        async with gate:
            if i % 4 == 3:
                thread_id = f"{prefix}-{i}"
                await client.runs.create(thread_id, "conformance-approval", input={}, if_not_exists="create")
                return thread_id
            return str((await client.threads.create(metadata={"from": prefix}))["thread_id"])

    return list(await asyncio.gather(*(one(i) for i in range(PER_INSTANCE))))


async def listed(client: Any, **filters: Any) -> list[str]:
    """Every thread ``threads.search`` lists, page by page (``limit`` / ``offset``)."""
    ids: list[str] = []
    while True:
        page = await client.threads.search(limit=PAGE, offset=len(ids), **filters)
        ids += [t["thread_id"] for t in page]
        if len(page) < PAGE:
            return ids


async def test_threads_created_on_two_instances_at_once_are_all_listed(
    pair: tuple[ServerProcess, ServerProcess],
) -> None:
    a, b = pair
    ca = get_client(url=f"{a.url}/langgraph", api_key=KEY)
    cb = get_client(url=f"{b.url}/langgraph", api_key=KEY)
    try:
        made_a, made_b = await asyncio.gather(create_many(ca, "a"), create_many(cb, "b"))
        made = set(made_a) | set(made_b)
        assert len(made) == 2 * PER_INSTANCE
        for client in (ca, cb):
            ids = await listed(client)
            assert len(ids) == len(set(ids)), "a thread was listed twice"
            assert set(ids) == made
        from_a = await listed(cb, metadata={"from": "a"})
        assert set(from_a) == {t for t in made_a if not t.startswith("a-")}
    finally:
        await ca.aclose()
        await cb.aclose()
