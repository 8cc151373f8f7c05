"""``bufferMs`` on the v2 event stream: events accumulated into ``event: batch`` frames (events.md §SSE frames).

With ``bufferMs`` (0..5000; 0 sends every event as its own frame) the stream
gathers events for up to that long into one ``batch`` frame whose ``data:`` is an
array of ``RunEventDoc`` and whose ``id:`` is its highest ``sequence`` (so
``Last-Event-ID`` resumes after the whole batch). A batch is flushed when it is
``bufferMs`` old, on a terminal event, on a suspension, and before the stream closes;
and once it holds a page of events (:data:`~openwop_bridge.runtime.follow.STREAM_PAGE`), so a
backlog read within ``bufferMs`` goes out a page at a time instead of as one frame.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import Any

import orjson

from openwop_bridge.core.records import RunRecord
from openwop_bridge.host.http.sse import Chunk
from openwop_bridge.host.v2 import documents, events
from openwop_bridge.runtime.engine import Engine
from openwop_bridge.runtime.follow import STREAM_PAGE

#: ``bufferMs`` bounds (events.md §SSE frames).
BUFFER_MS = {"low": 0, "high": 5000}
#: Types that flush a batch at once: the terminal events and the suspension.
FLUSH_ON = frozenset({"run.completed", "run.failed", "run.cancelled", "interrupt.requested", "node.suspended"})

LookupOf = Callable[[Engine, str], Awaitable[events.InterruptOf]]


def batch_frame(docs: list[dict[str, Any]]) -> bytes:
    """One ``event: batch`` frame; its id is the batch's highest sequence."""
    return b"id: %d\nevent: batch\ndata: %s\n\n" % (max(d["sequence"] for d in docs), orjson.dumps(docs))


async def batched_frames(
    eng: Engine, seen: RunRecord, after: int, keepalive_s: float, buffer_ms: int, lookup_of: LookupOf
) -> AsyncGenerator[Chunk]:
    """The SSE body of a run's events in v2 ``batch`` frames, live until the run ends.

    ``seen``: the run as the visibility check read it (see :meth:`Engine.follow`).
    """
    run_id, tenant = seen.run_id, seen.tenant
    buffer_s = buffer_ms / 1000
    pending: list[dict[str, Any]] = []
    since = 0.0
    idle = 0.0
    loop = asyncio.get_running_loop()
    async with aclosing(eng.follow(run_id, after, idle_s=min(keepalive_s, buffer_s), seen=seen)) as batches:
        async for docs in batches:
            if docs:
                lookup = await lookup_of(eng, run_id) if any(d["type"] in events.RESOLVED for d in docs) else None
                since = since if pending else loop.time()
                pending.extend(documents.event(doc, tenant, lookup) for doc in docs)
            full = len(pending) >= STREAM_PAGE
            if pending and (full or loop.time() - since >= buffer_s or any(d["type"] in FLUSH_ON for d in pending)):
                yield batch_frame(pending), True
                pending, idle = [], loop.time()
            elif not docs and loop.time() - idle >= keepalive_s:
                idle = loop.time()
                yield b": keep-alive\n\n", True
    if pending:
        yield batch_frame(pending), True
