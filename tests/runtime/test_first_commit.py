"""An executor stopped while it waits on the answer that resumed it leaves that answer's futures alone.

The answer (``openwop_bridge.runtime.joint``) and anything waiting for it (``joint_settled``: timers, cancels,
other answers to the run) share ``Handoff.answered`` and ``Handoff.result``; the executor must not
cancel them by being cancelled while it awaits them (an engine stopping cancels its executors).
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from openwop_bridge.runtime.first_commit import FirstCommit
from openwop_bridge.runtime.joint import Handoff
from openwop_bridge.store.base import RunCommit


def _handoff() -> Handoff:
    loop = asyncio.get_running_loop()
    return Handoff(loop.create_future(), loop.create_future(), loop.create_future())


async def _cancel_while_waiting(waiting: asyncio.Future[Any]) -> None:
    await asyncio.sleep(0)
    assert not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting


@pytest.mark.parametrize("where", ["woken again", "committing after the answer"])
async def test_a_stopped_executor_does_not_cancel_the_answer_it_waits_for(where: str) -> None:
    first, handoff = FirstCommit(cast(Any, None)), _handoff()
    first.handoff = handoff
    if where == "woken again":
        waiting = asyncio.ensure_future(first.before_answer(claimed=False))
    else:
        handoff.closed = True  # the answer commits alone; the executor's step follows it
        waiting = asyncio.ensure_future(first.send(cast(RunCommit, object())))
    await _cancel_while_waiting(waiting)
    assert not handoff.answered.cancelled()
    handoff.answered.set_result(None)  # the answer's side still ends it


async def test_a_stopped_executor_does_not_cancel_the_outcome_the_answer_reports() -> None:
    first, handoff = FirstCommit(cast(Any, None)), _handoff()
    first.handoff = handoff
    step = cast(RunCommit, object())
    waiting = asyncio.ensure_future(first.send(step))
    await _cancel_while_waiting(waiting)
    assert handoff.offered.result() is step
    assert not handoff.result.cancelled()
