"""Deadlines: fires interrupt timeouts on schedule, with or without traffic.

The next deadline comes from an index in the store, not from memory, so a
restart (or another instance) picks up every timer that was pending. Firing is
an ordinary guarded transaction: when two instances race, one resolves and the
other finds the interrupt no longer open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("openwop_bridge.runtime.timers")

MAX_SLEEP_S = 30.0


class TimerService:
    """Sleeps until the earliest deadline (or a poke), then fires what is due."""

    def __init__(
        self,
        next_deadline: Callable[[], Awaitable[int | None]],
        fire_due: Callable[[int], Awaitable[int]],
        now_ms: Callable[[], int],
    ) -> None:
        self._next_deadline = next_deadline
        self._fire_due = fire_due
        self._now_ms = now_ms
        self._poke = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._armed_for: int | None = None

    def start(self) -> None:
        """Begin watching deadlines."""
        self._task = asyncio.create_task(self._loop(), name="openwop-bridge-timers")

    async def stop(self) -> None:
        """Stop watching."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def poke(self, deadline_ms: int | None = None) -> None:
        """A new deadline exists (or may): re-check if it is earlier than the armed one."""
        if deadline_ms is None or self._armed_for is None or deadline_ms < self._armed_for:
            self._poke.set()

    async def _loop(self) -> None:
        while True:
            try:
                self._poke.clear()
                now = self._now_ms()
                fired = await self._fire_due(now)
                if fired:
                    continue
                deadline = await self._next_deadline()
                self._armed_for = deadline
                wait = MAX_SLEEP_S if deadline is None else min(MAX_SLEEP_S, max(0.0, (deadline - now) / 1000))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._poke.wait()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("timer loop failed; retrying in 1 s")
                await asyncio.sleep(1.0)
