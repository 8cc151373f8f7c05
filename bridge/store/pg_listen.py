"""How an instance hears what the others commit: ``LISTEN`` on a dedicated connection.

Every write transaction of :class:`~openwop_bridge.store.postgres.PostgresStore` sends,
from inside itself, one notice per run it touched (see
:class:`~openwop_bridge.store.pg_sql.Outbox`). The listener hands them to the engine:
``on_events(run_id)`` so local streams re-read the store, ``on_wake(run_id)``
when the notice names this instance as the run's owner (or any instance: a run
released by an instance that stopped), and ``on_deadline(at_ms)``
when another instance wrote a deadline, so this instance's timer fires it on time
too (the instance that wrote it may die before it passes). Notices this instance
sent itself are skipped; it acted on them already.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from psycopg import AsyncConnection

from openwop_bridge.store import pg_sql as q

log = logging.getLogger("openwop_bridge.store.postgres")

Conn = AsyncConnection[Any]

CHECK_S = 5.0  # a quiet connection is pinged this often
RECONNECT_MAX_S = 5.0
CATCH_UP_SLACK_MS = 60_000  # how far before a lost connection to look for missed work


class Listener:
    """Delivers other instances' notices; reconnects, and catches up on what it missed."""

    def __init__(
        self,
        *,
        instance_id: str,
        connect: Callable[[], Awaitable[Conn]],
        query: Callable[[str, tuple[Any, ...]], Awaitable[list[tuple[Any, ...]]]],
        on_wake: Callable[[str], None],
        on_events: Callable[[str], None],
        where: str,
        on_deadline: Callable[[int | None], None] | None = None,
    ) -> None:
        self.instance_id = instance_id
        self._connect = connect
        self._query = query
        self._on_wake = on_wake
        self._on_events = on_events
        self._on_deadline = on_deadline
        self._where = where
        self._task: asyncio.Task[None] | None = None
        #: How each notice this instance sends begins (:meth:`~openwop_bridge.store.pg_sql.Outbox.payloads`).
        self._own = q.sender_prefix(instance_id)

    async def start(self) -> None:
        """Return once ``LISTEN`` is in place: nothing committed after this is missed."""
        conn = await self._listening()
        self._task = asyncio.create_task(self._loop(conn), name="openwop-bridge-pg-listen")

    async def stop(self) -> None:
        """Stop listening and close the connection."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _listening(self) -> Conn:
        conn = await self._connect()
        conn.add_notify_handler(lambda note: self.deliver(note.payload))
        try:
            await conn.execute(f"LISTEN {q.CHANNEL}")
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _loop(self, conn: Conn | None) -> None:
        lost_at_ms: int | None = None
        backoff = 0.1
        while True:
            try:
                if conn is None:
                    conn = await self._listening()
                    log.info("LISTEN connection to %s re-established", self._where)
                    backoff = 0.1
                    if lost_at_ms is not None:
                        await self._catch_up(lost_at_ms)
                        lost_at_ms = None
                await self._hear(conn, CHECK_S)
                # A half-open TCP connection delivers nothing and raises nothing; ask.
                async with asyncio.timeout(CHECK_S):
                    await conn.execute("SELECT 1")
            except asyncio.CancelledError:
                if conn is not None:
                    await conn.close()
                raise
            except Exception as exc:
                log.warning("LISTEN connection to %s lost (%s); reconnecting", self._where, exc)
                if lost_at_ms is None:
                    # The clock that stamps ``updated_at``: the instances' own.
                    lost_at_ms = time.time_ns() // 1_000_000
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await conn.close()
                conn = None
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RECONNECT_MAX_S)

    async def _hear(self, conn: Conn, seconds: float) -> None:
        """Deliver notices as they arrive for ``seconds``; raise if the connection is lost meanwhile.

        The socket is watched by the event loop itself, and each time it is readable one callback
        takes in what arrived and delivers every notice in it: no task wakes for a notice, which
        every transaction of this instance sends too (it reaches its own listener and is dropped).
        Notices arriving while a statement runs on ``conn`` reach :meth:`deliver` through psycopg's
        notify handler (see :meth:`_listening`).
        """
        loop = asyncio.get_running_loop()
        lost: asyncio.Future[None] = loop.create_future()
        pgconn, fd = conn.pgconn, conn.fileno()
        encoding = conn.info.encoding
        deliver = self.deliver

        def readable() -> None:
            try:
                pgconn.consume_input()
                while (note := pgconn.notifies()) is not None:
                    deliver(note.extra.decode(encoding))
            except Exception as exc:  # the connection is lost: the loop reconnects
                loop.remove_reader(fd)
                if not lost.done():
                    lost.set_exception(exc)

        loop.add_reader(fd, readable)
        try:
            readable()  # what arrived before the reader was in place
            await asyncio.wait((lost,), timeout=seconds)
        finally:
            loop.remove_reader(fd)
        if lost.done():
            lost.result()

    def deliver(self, payload: str) -> None:
        """Hand one notice to the engine (on the event loop thread)."""
        if payload.startswith(self._own):
            return  # sent by this instance, which acted on it already
        notice = q.parse_notice(payload)
        if notice is None:
            log.warning("ignoring a malformed notice on %s: %.200s", q.CHANNEL, payload)
            return
        sender, run_id, events, wake_owner, deadline_ms = notice
        if sender == self.instance_id:
            return
        if events:
            self._on_events(run_id)
        if wake_owner in (self.instance_id, q.ANY_INSTANCE):
            self._on_wake(run_id)
        if deadline_ms is not None and self._on_deadline is not None:
            self._on_deadline(deadline_ms)

    async def _catch_up(self, lost_at_ms: int) -> None:
        """What a lost connection may have missed: wake every run this instance
        owns, announce every run updated since shortly before the loss, and have
        the timer look at the deadlines again.

        Events that do not touch ``updated_at`` (a vote that does not settle, a
        denial) reach remote streams with the run's next event instead.
        """
        for (run_id,) in await self._query("SELECT run_id FROM runs WHERE owner=%s", (self.instance_id,)):
            self._on_wake(run_id)
        for (run_id,) in await self._query(
            "SELECT run_id FROM runs WHERE updated_at >= %s", (lost_at_ms - CATCH_UP_SLACK_MS,)
        ):
            self._on_events(run_id)
        if self._on_deadline is not None:
            self._on_deadline(None)
