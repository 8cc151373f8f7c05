"""Run event streams over HTTP: SSE frames and long polling.

Both follow the run through :meth:`~bridge.runtime.engine.Engine.follow`, which
owns the subscribe / backlog / gap / re-read rules; this module only frames.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import orjson

from bridge.runtime.engine import Engine

KEEPALIVE_S = 15.0


def frame(doc: dict[str, Any]) -> bytes:
    """One SSE frame: ``id`` = sequence, ``event`` = type, ``data`` = the event document."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (doc["sequence"], doc["type"].encode(), orjson.dumps(doc))


async def follow(engine: Engine, run_id: str, after: int, *, keepalive_s: float = KEEPALIVE_S) -> AsyncIterator[bytes]:
    """SSE bytes for a run's events after ``after``, live until the run ends.

    Frames that are ready together (a backlog page, the events of one commit) go
    out as one write; ``: connected`` once the stream is live, ``: keep-alive`` when idle.
    """
    live = False
    async with aclosing(engine.follow(run_id, after, idle_s=keepalive_s)) as batches:
        async for docs in batches:
            if docs:
                yield b"".join(frame(doc) for doc in docs)
            elif not live:
                live = True
                yield b": connected\n\n"
            else:
                yield b": keep-alive\n\n"


async def poll(engine: Engine, run_id: str, after: int, timeout_ms: int) -> dict[str, Any]:
    """Events after ``after``; waits up to ``timeout_ms`` for the first one if there are none."""
    events: list[dict[str, Any]] = []
    waited = False
    async with aclosing(engine.follow(run_id, after, idle_s=timeout_ms / 1000)) as batches:
        async for docs in batches:
            if docs:
                events = docs
                break
            if waited or timeout_ms <= 0:
                break
            waited = True  # live now: wait one idle period for the first event
    run = await engine.run_record(run_id)
    complete = run is not None and run.terminal and (not events or events[-1]["sequence"] >= run.next_seq - 1)
    return {
        "events": events,
        "isComplete": complete,
        "lastSequence": events[-1]["sequence"] if events else after,
        "status": run.status if run else None,
    }
