"""An executor's wake-up: a flag that something changed for its run, and the one wait it ends.

The drive loop (:class:`~openwop_bridge.runtime.executor.RunExecutor`) clears the flag when it
looks at the run's inputs, and waits on one future for whichever comes first: a node
settling, a wake-up, the flush timer. An :class:`asyncio.Event` would cost a task per wait.
"""

from __future__ import annotations

import asyncio


class Wake:
    """Whether something changed for the run since the drive loop last looked, and the wait it ends."""

    __slots__ = ("_set", "waiter")

    def __init__(self) -> None:
        self._set = True
        #: The drive loop's wait, while it waits (see :meth:`openwop_bridge.runtime.executor.RunExecutor._wait`).
        self.waiter: asyncio.Future[None] | None = None

    def set(self) -> None:
        """Something changed: the drive loop looks again (and stops waiting, if it is)."""
        self._set = True
        settle_once(self.waiter)

    def clear(self) -> None:
        """Looked: nothing new until the next :meth:`set`."""
        self._set = False

    def is_set(self) -> bool:
        """Whether something changed since the last :meth:`clear`."""
        return self._set


def settle_once(waiter: asyncio.Future[None] | None, _: object = None) -> None:
    """End a wait (once)."""
    if waiter is not None and not waiter.done():
        waiter.set_result(None)
