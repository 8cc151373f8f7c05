"""Following a run: its committed events after a sequence number, live, until it ends.

Every surface that shows a run as it happens (SSE, long polling, the AG-UI stream)
follows it here, in one way:

1. subscribe to the hub *before* reading the backlog, so nothing committed in
   between is missed;
2. read the backlog from the store, a page at a time;
3. take live events from the subscription, dropping duplicates by sequence;
4. when the subscription says "read the store" (it fell behind, or another
   instance committed) or the live events skip a sequence number, re-read the
   store from the last sequence seen;
5. stop after the run's terminal event.

A batch is yielded as soon as it is ready (a backlog page, the events of one
commit). An empty batch says the follower is live: the first one comes as soon
as the backlog is read and the run is still going (a stream tells its client it
is connected), each later one after ``idle_s`` seconds without an event (a
stream writes a keep-alive, a long poll answers).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

from openwop_bridge.core.events import is_terminal
from openwop_bridge.core.records import RunRecord
from openwop_bridge.runtime.hub import EventHub, Subscription
from openwop_bridge.store.base import Store

PAGE = 1000
#: The page of a stream's backlog: what a stream holds ready for a client that stopped reading.
STREAM_PAGE = 32
#: The bytes (as stored) a page of a stream's backlog holds at most: fewer events when they are large
#: (at least one, however large).
STREAM_PAGE_BYTES = 64 * 1024


async def read_page(
    store: Store, run_id: str, after: int, limit: int, max_bytes: int | None
) -> tuple[list[dict[str, Any]], bool]:
    """Up to ``limit`` events after ``after`` whose stored documents fit in ``max_bytes`` (at least one),
    and whether the store may hold more after them (False: these were the last, when read)."""
    if max_bytes is None:
        docs = await store.read_events(run_id, after, limit)
        return docs, len(docs) == limit
    return await store.read_event_page(run_id, after, limit, max_bytes)


class RunFollower:
    """Follows runs over one store and one hub; see the module docstring."""

    def __init__(self, store: Store, hub: EventHub) -> None:
        self._store = store
        self._hub = hub

    async def follow(
        self,
        run_id: str,
        after: int,
        *,
        idle_s: float | None = None,
        page: int = PAGE,
        page_bytes: int | None = STREAM_PAGE_BYTES,
        seen: RunRecord | None = None,
    ) -> AsyncGenerator[list[dict[str, Any]]]:
        """Batches of event documents with ``sequence > after``, in order, ending after the terminal one.

        A batch read from the store holds at most ``page`` events and ``page_bytes`` bytes as
        stored (at least one event); ``page_bytes=None``: no bound in bytes.

        ``seen``: the run as the caller read it just before (a visibility check). The
        run is then not read again after the backlog: had it ended before that read, the
        record says so; if it ends later, its last events are committed after the
        subscription began, so they are in the backlog or come live.
        """
        last = after
        with self._hub.subscribe(run_id) as sub:
            reread = False
            while True:
                async for docs in self._read(run_id, last, page, page_bytes):
                    docs, last, ended = take_after(docs, last)
                    if docs:
                        yield docs
                    if ended:
                        return
                if seen is not None:
                    if seen.terminal:
                        return  # its terminal event was at or before ``after``
                    break
                run = await self._store.load_run(run_id)
                if run is None or (run.terminal and reread):
                    return
                if not run.terminal:
                    break
                # It ended after (or while) the backlog was read: its last events, up to the
                # terminal one, are in the store now; read them once more.
                reread = True
            yield []
            async for docs in self._live(run_id, sub, last, idle_s, page, page_bytes):
                if not docs:
                    yield docs
                    continue
                docs, last, ended = take_after(docs, last)
                if docs:
                    yield docs
                if ended:
                    return

    async def _live(
        self, run_id: str, sub: Subscription, last: int, idle_s: float | None, page: int, page_bytes: int | None
    ) -> AsyncIterator[list[dict[str, Any]]]:
        while True:
            try:
                first = await sub.get(timeout=idle_s)
            except TimeoutError:
                yield []
                continue
            batch = [first, *sub.ready()]
            docs = [d for d in batch if d is not None]
            if len(docs) < len(batch) or has_gap(docs, last):
                sub.overflowed = False
                async for reread in self._read(run_id, last, page, page_bytes):
                    last = max(last, reread[-1]["sequence"])
                    yield reread
                continue
            if docs:
                last = max(last, docs[-1]["sequence"])
                yield docs

    async def _read(
        self, run_id: str, after: int, page: int, page_bytes: int | None
    ) -> AsyncIterator[list[dict[str, Any]]]:
        """The store's events after ``after``, a page at a time (see :func:`read_page`)."""
        while True:
            docs, more = await read_page(self._store, run_id, after, page, page_bytes)
            if docs:
                yield docs
                after = docs[-1]["sequence"]
            if not more:
                return


def has_gap(docs: Sequence[dict[str, Any]], last: int) -> bool:
    """Whether events skip a sequence number after ``last``."""
    expected = last + 1
    for doc in docs:
        if doc["sequence"] < expected:
            continue
        if doc["sequence"] > expected:
            return True
        expected += 1
    return False


def take_after(docs: Sequence[dict[str, Any]], last: int) -> tuple[list[dict[str, Any]], int, bool]:
    """The events after ``last`` up to a terminal one, the new ``last``, and whether the run ended."""
    out: list[dict[str, Any]] = []
    for doc in docs:
        if doc["sequence"] <= last:
            continue
        out.append(doc)
        last = doc["sequence"]
        if is_terminal(doc):
            return out, last, True
    return out, last, False
