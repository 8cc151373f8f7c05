"""Run event streams: SSE frames, ``Last-Event-ID`` and long polling.

A stream subscribes *before* reading the backlog from the store, so nothing
committed in between is missed; duplicates are dropped by sequence, and a gap
(or a subscriber that fell behind) is filled from the store. The stream closes
after the run's terminal event.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from bridge.engine import Engine
from bridge.events import is_terminal
from bridge.store.base import TERMINAL_RUN_STATUSES

KEEPALIVE_S = 15.0


def frame(doc: dict[str, Any]) -> bytes:
    """One SSE frame: ``id`` = sequence, ``event`` = type, ``data`` = the event document."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (doc["sequence"], doc["type"].encode(), orjson.dumps(doc))


async def follow(engine: Engine, run_id: str, after: int, *, keepalive_s: float = KEEPALIVE_S) -> AsyncIterator[bytes]:
    """SSE bytes for a run's events after ``after``, live until the run ends.

    Frames that are ready together (a backlog, the events of one commit) go out
    as one write.
    """
    last = after
    with engine.hub.subscribe(run_id) as sub:
        backlog = await engine.store.read_events(run_id, last, 100_000)
        chunk, last, ended = _frames(backlog, last)
        if chunk:
            yield chunk
        if ended:
            return
        run = await engine.store.load_run(run_id)
        if run is not None and run.status in TERMINAL_RUN_STATUSES:
            # Ended before we subscribed and every event was in the backlog.
            chunk, last, _ = _frames(await engine.store.read_events(run_id, last, 100_000), last)
            if chunk:
                yield chunk
            return
        yield b": connected\n\n"
        while True:
            try:
                first = await sub.get(timeout=keepalive_s)
            except TimeoutError:
                yield b": keep-alive\n\n"
                continue
            batch = [first, *sub.ready()]
            docs = [d for d in batch if d is not None]
            if len(docs) < len(batch) or _gap(docs, last):
                # Committed elsewhere, or this subscriber fell behind: read the store.
                sub.overflowed = False
                docs = await engine.store.read_events(run_id, last, 100_000)
            chunk, last, ended = _frames(docs, last)
            if chunk:
                yield chunk
            if ended:
                return


def _gap(docs: list[dict[str, Any]], last: int) -> bool:
    """Whether the queued events skip a sequence number after ``last``."""
    expected = last + 1
    for doc in docs:
        if doc["sequence"] < expected:
            continue
        if doc["sequence"] > expected:
            return True
        expected += 1
    return False


def _frames(docs: list[dict[str, Any]], last: int) -> tuple[bytes, int, bool]:
    """The frames of the events after ``last`` (up to a terminal one), the new ``last``, whether it ended."""
    out: list[bytes] = []
    for doc in docs:
        if doc["sequence"] <= last:
            continue
        out.append(frame(doc))
        last = doc["sequence"]
        if is_terminal(doc):
            return b"".join(out), last, True
    return b"".join(out), last, False


async def poll(engine: Engine, run_id: str, after: int, timeout_ms: int) -> dict[str, Any]:
    """Events after ``after``; waits up to ``timeout_ms`` for the first one if there are none."""
    with engine.hub.subscribe(run_id) as sub:
        events = await engine.store.read_events(run_id, after, 1000)
        if not events and timeout_ms > 0:
            run = await engine.store.load_run(run_id)
            if run is not None and run.status not in TERMINAL_RUN_STATUSES:
                try:
                    await sub.get(timeout=timeout_ms / 1000)
                except TimeoutError:
                    pass
                events = await engine.store.read_events(run_id, after, 1000)
    run = await engine.store.load_run(run_id)
    complete = (
        run is not None
        and run.status in TERMINAL_RUN_STATUSES
        and (not events or events[-1]["sequence"] >= run.next_seq - 1)
    )
    return {
        "events": events,
        "isComplete": complete,
        "lastSequence": events[-1]["sequence"] if events else after,
        "status": run.status if run else None,
    }
