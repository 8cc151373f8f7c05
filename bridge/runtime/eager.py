"""Starting a coroutine in the current turn of the event loop, as Python 3.12's eager tasks do.

:func:`start_eagerly` runs a coroutine's first step at once, in a context of its own.
One that ends there (a gate that suspends on its interrupt, or completes) costs no
task and no turn of the loop: its outcome is a future already done. One that waits
for something goes on in a task from there, in that same context, so whoever holds
the future waits for it, or cancels it, as it would a task.

Python 3.12 and later start the task itself eagerly, which also makes it the current
task during that first step. Python 3.11 runs the first step in the caller's task:
code run that way must not take the current task (``asyncio.timeout``).
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import types
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

T = TypeVar("T")


def start_eagerly(coro: Coroutine[Any, Any, T], name: str) -> asyncio.Future[T]:
    """Run ``coro`` until it first waits; a done future if it ended there, else its task (named ``name``)."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    if sys.version_info >= (3, 12):  # pragma: no cover - the test environment runs 3.11
        return asyncio.Task(coro, loop=loop, name=name, context=context, eager_start=True)  # type: ignore[call-arg]
    try:
        waits_on = context.run(coro.send, None)
    except StopIteration as stop:
        done: asyncio.Future[T] = loop.create_future()
        done.set_result(stop.value)
        return done
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        failed: asyncio.Future[T] = loop.create_future()
        if isinstance(exc, asyncio.CancelledError):
            failed.cancel()
        else:
            failed.set_exception(exc)
        return failed
    return loop.create_task(_rest(coro, waits_on), name=name, context=context)


async def _rest(coro: Coroutine[Any, Any, T], waits_on: Any) -> T:
    """The rest of ``coro``, whose first step waits on ``waits_on``."""
    result: T = await _go_on(coro, waits_on)
    return result


@types.coroutine
def _go_on(coro: Coroutine[Any, Any, T], waits_on: Any) -> Generator[Any, Any, T]:
    """Hand what ``coro`` waits on to the task driving this, and pass on what the task sends or throws."""
    while True:
        try:
            sent = yield waits_on
        except BaseException as exc:  # a cancel the task throws in goes to ``coro``
            step: Any = coro.throw
            value: Any = exc
        else:
            step, value = coro.send, sent
        try:
            waits_on = step(value)
        except StopIteration as stop:
            result: T = stop.value
            return result
