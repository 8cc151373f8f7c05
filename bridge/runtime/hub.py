"""In-process fan-out of committed events to subscribers (SSE streams, waiters).

Only events that are already committed are published, in sequence order per
run. A subscriber that falls behind by more than its queue holds is dropped
and told so; it reconnects with ``Last-Event-ID`` and reads the gap from the
store. Several instances share events through the store (and, on PostgreSQL,
``LISTEN/NOTIFY``), not through this hub.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

Listener = Callable[[str, list[dict[str, Any]]], None]


class Subscription:
    """Committed events of one run (or of every run, for ``run_id=None``)."""

    def __init__(self, hub: EventHub, run_id: str | None, maxsize: int) -> None:
        self._hub = hub
        self.run_id = run_id
        self.queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(maxsize)
        self.overflowed = False

    def _resync(self) -> None:
        """Tell the reader to re-read the store (events were committed elsewhere)."""
        if not self.overflowed:
            try:
                self.queue.put_nowait(None)
            except asyncio.QueueFull:
                self._offer_overflow()

    def _offer_overflow(self) -> None:
        self.overflowed = True
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(None)

    def _offer(self, doc: dict[str, Any]) -> None:
        if self.overflowed:
            return
        try:
            self.queue.put_nowait(doc)
        except asyncio.QueueFull:
            # Make room for the marker so the reader wakes up and reads the gap from the store.
            self._offer_overflow()

    async def get(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next event, or None meaning "read the store" (overflow, or events committed
        by another instance); raises TimeoutError after ``timeout``."""
        if timeout is None:
            return await self.queue.get()
        async with asyncio.timeout(timeout):
            return await self.queue.get()

    def ready(self) -> list[dict[str, Any] | None]:
        """Whatever is queued already, without waiting (events committed together arrive together)."""
        items: list[dict[str, Any] | None] = []
        while not self.queue.empty():
            items.append(self.queue.get_nowait())
        return items

    def close(self) -> None:
        """Stop receiving."""
        self._hub._remove(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class EventHub:
    """Publishes committed event documents to per-run and global subscribers."""

    def __init__(self) -> None:
        self._by_run: dict[str, set[Subscription]] = {}
        self._global: set[Subscription] = set()
        self._listeners: list[Listener] = []

    def subscribe(self, run_id: str | None, maxsize: int = 10_000) -> Subscription:
        """Receive every event committed from now on (for one run, or all)."""
        sub = Subscription(self, run_id, maxsize)
        if run_id is None:
            self._global.add(sub)
        else:
            self._by_run.setdefault(run_id, set()).add(sub)
        return sub

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(run_id, docs)`` synchronously for every publication."""
        self._listeners.append(listener)

    def _remove(self, sub: Subscription) -> None:
        if sub.run_id is None:
            self._global.discard(sub)
            return
        subs = self._by_run.get(sub.run_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._by_run[sub.run_id]

    def publish(self, run_id: str, docs: list[dict[str, Any]]) -> None:
        """Deliver committed events (already in sequence order)."""
        if not docs:
            return
        for sub in tuple(self._by_run.get(run_id, ())):
            for doc in docs:
                sub._offer(doc)
        for sub in tuple(self._global):
            for doc in docs:
                sub._offer(doc)
        for listener in self._listeners:
            listener(run_id, docs)

    def poke(self, run_id: str) -> None:
        """Events of ``run_id`` were committed by another instance: subscribers re-read the store."""
        for sub in tuple(self._by_run.get(run_id, ())):
            sub._resync()
        for sub in tuple(self._global):
            sub._resync()

    def subscriber_count(self, run_id: str) -> int:
        """How many streams follow a run."""
        return len(self._by_run.get(run_id, ()))
