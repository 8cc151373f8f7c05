"""Starting a node's coroutine in the executor's own turn of the event loop (``openwop_bridge.runtime.eager``)."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from openwop_bridge.runtime.eager import start_eagerly

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="outside")


async def test_a_coroutine_that_ends_in_its_first_step_is_done_at_once() -> None:
    async def ends() -> int:
        VAR.set("inside")
        return 7

    started = start_eagerly(ends(), "ends")
    assert started.done() and started.result() == 7
    assert VAR.get() == "outside"  # its context is its own


async def test_an_error_in_the_first_step_is_the_futures() -> None:
    async def fails() -> None:
        raise ValueError("no")

    started = start_eagerly(fails(), "fails")
    assert started.done()
    with pytest.raises(ValueError, match="no"):
        started.result()


async def test_a_coroutine_that_waits_goes_on_in_a_task_in_its_own_context() -> None:
    gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    seen: list[str] = []

    async def waits() -> str:
        VAR.set("inside")
        seen.append("before")
        value = await gate
        seen.append(VAR.get())
        return value + "!"

    started = start_eagerly(waits(), "waits")
    assert seen == ["before"] and not started.done()
    gate.set_result("go")
    assert await started == "go!"
    assert seen == ["before", "inside"] and VAR.get() == "outside"


async def test_cancelling_the_task_cancels_the_coroutine_where_it_waits() -> None:
    cleaned: list[str] = []

    async def sleeps() -> None:
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.append("finally")

    started = start_eagerly(sleeps(), "sleeps")
    await asyncio.sleep(0)
    started.cancel()
    with pytest.raises(asyncio.CancelledError):
        await started
    assert cleaned == ["finally"]


async def test_a_value_thrown_in_reaches_the_coroutine_and_it_may_go_on() -> None:
    gate: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def recovers() -> str:
        try:
            await gate
        except KeyError:
            await asyncio.sleep(0)
            return "recovered"
        return "not reached"

    started = start_eagerly(recovers(), "recovers")
    gate.set_exception(KeyError("k"))
    assert await started == "recovered"
