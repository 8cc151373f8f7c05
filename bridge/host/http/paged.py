"""Whole JSON documents of a run's events (``{events}``, a long poll's page), written a page at a time.

A document holding a run's event log may run to megabytes. It is never built whole:
its items are read from the store a page at a time (at most
:data:`~openwop_bridge.runtime.follow.STREAM_PAGE` events and :data:`PAGE_BYTES` bytes as stored)
and written as they are read, so the bytes are the ones ``orjson.dumps`` of the whole
document gives, and a client that stops reading stops the writer where it stands
(:class:`~openwop_bridge.host.http.streams.GuardedStream` paces it and holds its slot).
The first piece (the document's head and its first page, or all of it) is ready
before the response starts, so a refusal or a failing store is still an error envelope.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import aclosing
from typing import Any

import orjson

from openwop_bridge.host.http.sse import Chunk, EventStream
from openwop_bridge.runtime.engine import Engine
from openwop_bridge.runtime.follow import PAGE, STREAM_PAGE, take_after

#: About how many bytes of encoded events a page holds once events are large (a stream's piece).
PAGE_BYTES = 64 * 1024

#: The trailing members of a document, known once its items are written.
Trailer = Callable[[], Awaitable[Mapping[str, Any]]]


class JSONStream(EventStream):
    """An ``application/json`` response sending its document's pieces as they come."""

    media_type = "application/json"


async def array_document(
    head: Mapping[str, Any], key: str, pages: AsyncIterator[list[bytes]], trailer: Trailer | None = None
) -> AsyncGenerator[Chunk]:
    """The bytes of ``{**head, key: [*items of pages], **await trailer()}``, a page of items at a time.

    ``pages``: the array's items, each already encoded. The head goes out with the first
    page (or with the end, when there is none).
    """
    pending = orjson.dumps({**head, key: []})[:-2]  # the document up to and with the array's "["
    first = True
    async for items in pages:
        if not items:
            continue
        data = b",".join(items)
        yield pending + (b"" if first else b",") + data, True
        pending, first = b"", False
    rest = await trailer() if trailer is not None else {}
    yield pending + b"]" + (b"," + orjson.dumps(dict(rest))[1:] if rest else b"}"), False


async def array_stream(pages: AsyncIterator[list[bytes]]) -> JSONStream:
    """A response whose document is a JSON array of ``pages``' items (each already encoded), a page at a time."""
    return await json_stream(_array(pages))


async def _array(pages: AsyncIterator[list[bytes]]) -> AsyncGenerator[Chunk]:
    pending, first = b"[", True
    async for items in pages:
        if items:
            yield pending + (b"" if first else b",") + b",".join(items), True
            pending, first = b"", False
    yield pending + b"]", False


async def json_stream(body: AsyncGenerator[Chunk]) -> JSONStream:
    """A response of ``body`` whose first piece is already read: its errors are raised here, before any byte is sent."""
    try:
        first = await anext(body)
    except BaseException:
        await body.aclose()
        raise
    return JSONStream(_after(first, body))


async def _after(first: Chunk, rest: AsyncGenerator[Chunk]) -> AsyncGenerator[Chunk]:
    async with aclosing(rest):
        yield first
        if first[1]:
            async for chunk in rest:
                yield chunk


#: Encodes a page of event documents as the items of a document (an event in a surface's shape).
Render = Callable[[list[dict[str, Any]]], Awaitable[list[Any]]]


async def _encode(docs: list[dict[str, Any]], render: Render | None) -> list[bytes]:
    return [orjson.dumps(item) for item in (await render(docs) if render is not None else docs)]


class StoredEvents:
    """Up to ``limit`` stored events of a run after ``after``, encoded, a page at a time (visibility checked).

    A page holds at most :data:`STREAM_PAGE` events and no more than fit in ``budget`` bytes as
    stored (:data:`PAGE_BYTES` unless given; at least one); only its bytes are kept (the documents
    read are dropped once encoded). ``until_terminal``: stop after the run's terminal event.
    :attr:`last` is the last sequence read (``after`` while none).
    """

    def __init__(
        self,
        engine: Engine,
        run_id: str,
        after: int,
        limit: int,
        *,
        render: Render | None = None,
        until_terminal: bool = False,
        budget: int | None = None,
    ) -> None:
        self.engine = engine
        self.run_id = run_id
        self.last = after
        self.limit = limit
        self.render = render
        self.until_terminal = until_terminal
        self.budget = budget if budget is not None else PAGE_BYTES

    async def pages(self) -> AsyncGenerator[list[bytes]]:
        """The encoded events, in pages (see the class)."""
        left = self.limit
        while left > 0:
            docs = await self.engine.run_events(self.run_id, self.last, min(STREAM_PAGE, left), max_bytes=self.budget)
            docs, self.last, ended = take_after(docs, self.last) if self.until_terminal else (docs, self.last, False)
            if not docs:
                return
            self.last = docs[-1]["sequence"]
            left -= len(docs)
            items = await _encode(docs, self.render)
            del docs
            yield items
            if ended:
                return


async def audit_entries(engine: Engine, run_id: str) -> AsyncGenerator[list[bytes]]:
    """A run's audit entries, encoded, :data:`STREAM_PAGE` at a time (visibility checked)."""
    after = -1
    while True:
        rows = await engine.audit_page(run_id, after, STREAM_PAGE)
        if not rows:
            return
        after = rows[-1][0]
        yield [orjson.dumps(entry) for _, entry in rows]
        if len(rows) < STREAM_PAGE:
            return


class Poll:
    """One long poll of a run's events after ``after``: the events it answers with, a page at a time.

    Up to :data:`~openwop_bridge.runtime.follow.PAGE` events of the backlog, up to the run's terminal one;
    with no backlog, it waits up to ``timeout_ms`` for the first live commit and answers with that.
    :attr:`last` is the sequence of the last event written (``after`` while none).
    """

    def __init__(self, engine: Engine, run_id: str, after: int, timeout_ms: int, render: Render | None = None) -> None:
        self.engine = engine
        self.run_id = run_id
        self.after = after
        self.last = after
        self.timeout_ms = timeout_ms
        self.render = render

    async def pages(self) -> AsyncGenerator[list[bytes]]:
        """The encoded events, in pages (see the class)."""
        backlog = StoredEvents(self.engine, self.run_id, self.after, PAGE, render=self.render, until_terminal=True)
        async for items in backlog.pages():
            self.last = backlog.last
            yield items
        if self.last != self.after or self.timeout_ms <= 0:
            return
        waited = False
        follow = self.engine.follow(self.run_id, self.after, idle_s=self.timeout_ms / 1000, page=STREAM_PAGE)
        async with aclosing(follow) as batches:
            async for docs in batches:
                if docs:
                    self.last = docs[-1]["sequence"]
                    yield await _encode(docs, self.render)
                    return
                if waited:
                    return
                waited = True  # live now: wait one idle period for the first event

    async def trailer(self) -> dict[str, Any]:
        """The v1 poll's members after ``events``: ``isComplete``, ``lastSequence``, ``status``."""
        run = await self.engine.run_record(self.run_id)
        found = self.last != self.after
        complete = run is not None and run.terminal and (not found or self.last >= run.next_seq - 1)
        return {"isComplete": complete, "lastSequence": self.last, "status": run.status if run else None}
