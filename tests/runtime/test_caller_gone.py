"""A caller that goes away (its task cancelled) while the engine commits for it changes nothing committed.

``create_run`` waits for the executor's first commit, and ``resolve`` for the answer's transaction
and the step it carries; each waits on a future of its own, so cancelling the caller cancels only
that wait: the run is still inserted once, the answer still commits, the run goes on.
"""

from __future__ import annotations

import asyncio

import pytest

from openwop_bridge import Engine
from tests.helpers import ADMIN, event_types, settle
from tests.runtime.test_commits import one_gate


@pytest.mark.parametrize("turns", [1, 2, 3])
async def test_a_creator_that_goes_away_leaves_the_run_created_once(engine: Engine, turns: int) -> None:
    one_gate(engine)
    started: list[str] = []
    engine.hub.add_listener(lambda run_id, docs: started.extend(run_id for d in docs if d["type"] == "run.started"))
    before = engine.store.commits
    creating = asyncio.ensure_future(engine.create_run(ADMIN, "one-gate"))
    for _ in range(turns):
        await asyncio.sleep(0)
    assert not creating.done()
    creating.cancel()
    with pytest.raises(asyncio.CancelledError):
        await creating
    await engine.wait_idle()
    assert len(started) == 1
    run = await settle(engine, started[0])
    assert run.status == "waiting-approval"
    assert (await event_types(engine, run.run_id)).count("run.started") == 1
    assert engine.store.commits - before == 1


async def test_an_answerer_that_goes_away_leaves_the_answer_and_its_step_committed(engine: Engine) -> None:
    one_gate(engine)
    run = await engine.create_run(ADMIN, "one-gate")
    await settle(engine, run.run_id)
    answering = asyncio.ensure_future(engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="gate"))
    while not engine._executing.answers_in_flight:
        await asyncio.sleep(0)
    answering.cancel()
    with pytest.raises(asyncio.CancelledError):
        await answering
    done = await settle(engine, run.run_id)
    assert done.status == "completed"
    assert (await event_types(engine, run.run_id)).count("interrupt.resolved") == 1
