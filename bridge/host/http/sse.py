"""Run event streams over HTTP: SSE frames and the streaming response.

They follow the run through :meth:`~openwop_bridge.runtime.engine.Engine.follow`, which
owns the subscribe / backlog / gap / re-read rules; this module only frames and sends.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import aclosing
from typing import Any

import orjson
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from openwop_bridge.core.events import is_terminal
from openwop_bridge.core.records import RunRecord
from openwop_bridge.runtime.engine import Engine

KEEPALIVE_S = 15.0
#: How much of a backlog is held back to go out with ``: connected`` (larger backlogs go out as read).
HELD_BACKLOG_BYTES = 64 * 1024

#: A piece of a stream's body and whether more follows (False: it ends the body).
Chunk = tuple[bytes, bool]
#: Renders a batch of event documents as SSE frames.
Render = Callable[[list[dict[str, Any]]], Awaitable[bytes]]


def frame(doc: dict[str, Any]) -> bytes:
    """One SSE frame: ``id`` = sequence, ``event`` = type, ``data`` = the event document."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (doc["sequence"], doc["type"].encode(), orjson.dumps(doc))


async def frames(docs: list[dict[str, Any]]) -> bytes:
    """The ``/v1`` frames of a batch of event documents."""
    return b"".join(frame(doc) for doc in docs)


async def chunks(batches: AsyncIterator[list[dict[str, Any]]], render: Render) -> AsyncIterator[Chunk]:
    """A stream's body from a follower's batches: what is ready together goes out as one piece.

    The backlog goes out with ``: connected`` once the stream is live (up to
    :data:`HELD_BACKLOG_BYTES` is held for it), each later batch (the events of one commit)
    as it comes, ``: keep-alive`` when idle; the batch holding the run's terminal event
    ends the body.
    """
    live = False
    held = b""
    async for docs in batches:
        if docs:
            data = await render(docs)
            if is_terminal(docs[-1]):
                yield held + data, False
                return
            if live:
                yield data, True
            else:
                held += data
                if len(held) >= HELD_BACKLOG_BYTES:
                    yield held, True
                    held = b""
        elif not live:
            live = True
            yield held + b": connected\n\n", True
            held = b""
        else:
            yield b": keep-alive\n\n", True
    if held:
        yield held, True


async def follow(
    engine: Engine, run_id: str, after: int, *, keepalive_s: float = KEEPALIVE_S, seen: RunRecord | None = None
) -> AsyncGenerator[Chunk]:
    """The SSE body for a run's events after ``after``, live until the run ends (see :func:`chunks`).

    ``seen``: the run as the visibility check read it (see :meth:`Engine.follow`).
    """
    async with aclosing(engine.follow(run_id, after, idle_s=keepalive_s, seen=seen)) as batches:
        async for chunk in chunks(batches, frames):
            yield chunk


class EventStream(Response):
    """A ``text/event-stream`` response sending each :data:`Chunk` as it comes, until the last or the client leaves.

    One task waits for the client's ``http.disconnect`` and cancels the stream when it
    comes; the response then ends quietly, as Starlette's ``StreamingResponse`` does,
    without the task group that one runs for every stream.
    """

    media_type = "text/event-stream"

    def __init__(self, body: AsyncGenerator[Chunk], headers: Mapping[str, str] | None = None) -> None:
        self.body_chunks = body
        self.status_code = 200
        self.background = None
        self.init_headers(headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        streaming = asyncio.current_task()
        assert streaming is not None, "an ASGI app runs in a task"
        watcher = asyncio.ensure_future(_client_left(receive))

        def on_left(done: asyncio.Future[None]) -> None:
            if not done.cancelled():
                streaming.cancel()

        watcher.add_done_callback(on_left)
        try:
            await self._send_body(send)
        except asyncio.CancelledError:
            if watcher.done() and not watcher.cancelled() and streaming.uncancel() == 0:
                return  # the client left
            raise
        finally:
            watcher.remove_done_callback(on_left)
            watcher.cancel()

    async def _send_body(self, send: Send) -> None:
        async with aclosing(self.body_chunks) as body:
            async for data, more in body:
                await send({"type": "http.response.body", "body": data, "more_body": more})
                if not more:
                    return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _client_left(receive: Receive) -> None:
    """Return once the client has gone (``http.disconnect``)."""
    while (await receive())["type"] != "http.disconnect":
        pass
