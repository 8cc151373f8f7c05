"""``notify_drain``: how fast the outbox delivers the notices a batch of interrupts owes.

1,000 approvals (20 with ``--quick``) are opened on a SQLite engine whose webhook subscription asks for
``interrupt.requested``: each commit that opens one writes its delivery in its own transaction. The
channel is plugged in only once they are all queued, and the figure is the notices delivered per
second from then until the last one reached a local receiver (a plain HTTP/1.1 server on loopback, in
this process). Every notice must arrive exactly once: a lost or doubled one fails the figure.

Other channels join here as they come: each adds its planner before the runs are opened and its local
receiver beside the webhook one (:data:`RECEIVERS`), and the count of notices owed grows by one per
interrupt for each.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from bench import workflows
from bench.harness import Bench, Result, Target
from bridge.core.auth import Principal
from bridge.host.http.app import webhook_surface
from bridge.host.v2.webhook_delivery import WebhookSettings
from bridge.host.v2.webhook_subs import Subscription
from bridge.runtime.engine import Engine
from bridge.store.sqlite import SqliteStore

NAME = "notify_drain"
TARGET = Target(">=", 200)


@dataclass
class HookReceiver:
    """A keep-alive HTTP/1.1 server that answers every POST 204 and counts the event ids it got."""

    seen: Counter[str] = field(default_factory=Counter)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    expected: int = 0
    port: int = 0

    async def serve(self) -> asyncio.Server:
        server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        return server

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length)
                self.seen[orjson.loads(body)["event"]["eventId"]] += 1
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
                await writer.drain()
                if sum(self.seen.values()) >= self.expected:
                    self.done.set()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


#: The channels measured, each ``(name, how to plug it into an engine given its receiver's port)``.
RECEIVERS: list[tuple[str, Callable[[Engine, int], None]]] = []


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Open the interrupts, then time the drain (see the module)."""
    if NAME not in wanted:
        return []
    n = bench.scale(1000, 20)
    engine = Engine(SqliteStore(bench.path("notify.db")), workflows=workflows.definitions())
    receiver = HookReceiver(expected=n)
    server = await receiver.serve()
    hooks = webhook_surface(engine, WebhookSettings(allow_loopback=True))
    # The planner plans from the start; the channel is taken away until every notice is queued.
    channel = engine.notify.channels.pop("webhook")
    await engine.start()
    try:
        sub = Subscription(
            webhook_id=engine.clock.new_id("whk"),
            tenant="default",
            url=f"http://127.0.0.1:{receiver.port}/hook",
            events=frozenset({"interrupt.requested"}),
            secret="bench-secret-0123456789",
        )
        await hooks.state.put(sub.webhook_id, sub.to_json())
        hooks.remember(sub)
        who = Principal("bench")
        queued = _Opened(n)
        engine.hub.add_listener(queued.on_events)
        bench.progress.say("notify", f"opening {n} approvals")
        for done in range(n):
            await engine.create_run(who, workflows.APPROVAL)
            bench.progress.tick("notify", done + 1, n)
        await asyncio.wait_for(queued.all.wait(), 600)
        bench.progress.say("notify", f"draining {n} webhook deliveries")
        started = time.perf_counter()
        engine.notify.add_channel(channel, engine.config.webhook_retry)
        await asyncio.wait_for(receiver.done.wait(), 600)
        elapsed = time.perf_counter() - started
        await asyncio.sleep(0.2)  # a doubled delivery would arrive now
    finally:
        await engine.stop()
        server.close()
    doubled = sum(1 for c in receiver.seen.values() if c > 1)
    if len(receiver.seen) != n or doubled:
        error = f"{n} notices owed, {len(receiver.seen)} delivered, {doubled} more than once"
        return [Result(NAME, "notices/s", None, n=n, error=error)]
    return [Result(NAME, "notices/s", n / elapsed, n=n, target=TARGET, note="webhooks, SQLite, one local receiver")]


class _Opened:
    """Counts the interrupts opened (each one's commit queued its notice)."""

    def __init__(self, n: int) -> None:
        self.left = n
        self.all = asyncio.Event()

    def on_events(self, run_id: str, docs: list[dict[str, Any]]) -> None:
        self.left -= sum(1 for d in docs if d["type"] == "interrupt.requested")
        if self.left <= 0:
            self.all.set()
