"""Two answers posted at the same moment to a conversation's open turn, over real HTTP.

Neither names its turn. The first commits its answer with the step that opens the next prompt;
the second arrives before the first returned and reads the address only after that commit. It
is for the turn open when it arrived: ``409 interrupt_already_resolved`` in the OpenWOP error
envelope, and nothing changes. The store hook below makes that interleaving happen every time.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from openwop_bridge import Engine, Workflow
from openwop_bridge.core.records import InterruptDecision, InterruptRecord, Mutation, RunRecord
from openwop_bridge.store.base import AnswerStepResult, Claim, RunCommit
from tests.conftest import auth
from tests.helpers import ADMIN, envelope, event_types, events, settle

TRIALS = 10


async def test_the_second_of_two_bare_answers_is_409_and_never_answers_the_next_prompt(
    live: tuple[str, httpx.AsyncClient], engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, client = live
    wf = Workflow("chat", channels={"transcript": {"reducer": "message", "schema": {"type": "array"}}})
    wf.node("talk", type_id="core.conversationGate", config={"initialPrompt": "Hello", "turnCount": 3})
    wf.register(engine)

    async def say(run_id: str, value: Any) -> httpx.Response:
        return await client.post(
            f"/v1/runs/{run_id}/interrupts/talk", json={"resumeValue": value}, headers=auth("admin")
        )

    # What one answer to turn 1 leaves in the log, with nothing else posted.
    alone = await engine.create_run(ADMIN, "chat")
    await settle(engine, alone.run_id)
    assert (await say(alone.run_id, "from alpha")).status_code == 200
    await settle(engine, alone.run_id)
    expected = await event_types(engine, alone.run_id)

    real_answer, real_read = engine.store.answer_and_step, engine.store.run_and_interrupt_at
    second: list[asyncio.Task[httpx.Response]] = []
    read: list[InterruptRecord | None] = []
    read_done = asyncio.Event()
    current: list[str] = []

    async def then_another(
        seen: tuple[RunRecord, InterruptRecord],
        decided: Mutation,
        decide: InterruptDecision,
        now_ms: int,
        claim: Claim,
        step: RunCommit | None,
    ) -> AnswerStepResult:
        done = await real_answer(seen, decided, decide, now_ms, claim, step)
        if not second:
            # Committed with the step that opened turn 2, not yet returned: the second answer comes now.
            second.append(asyncio.ensure_future(say(current[-1], {"content": "from beta"})))
            await read_done.wait()
        return done

    async def reading(run_id: str, node_id: str) -> tuple[RunRecord | None, InterruptRecord | None]:
        found = await real_read(run_id, node_id)
        if second:
            read.append(found[1])
            read_done.set()
        return found

    monkeypatch.setattr(engine.store, "answer_and_step", then_another)
    monkeypatch.setattr(engine.store, "run_and_interrupt_at", reading)
    for _ in range(TRIALS):
        run = await engine.create_run(ADMIN, "chat")
        await settle(engine, run.run_id)
        current.append(run.run_id)
        second.clear()
        read.clear()
        read_done.clear()
        first = await say(run.run_id, "from alpha")
        assert second, "the answer did not commit with its step"
        late = await second[0]
        await settle(engine, run.run_id)
        assert read[0] is not None and read[0].payload["data"]["turnIndex"] == 2  # it read turn 2 open
        assert first.status_code == 200 and first.json()["turnIndex"] == 1, first.text
        body = envelope(late, 409, "interrupt_already_resolved")
        assert body["details"] == {"turnIndex": 1}
        assert await event_types(engine, run.run_id) == expected
        said = [e["payload"]["turn"]["content"] for e in await events(engine, run.run_id, "conversation.exchanged")]
        assert said == ["from alpha"]
        pending = await engine.store.interrupt_at(run.run_id, "talk")
        assert pending is not None and pending.status == "pending" and pending.payload["data"]["turnIndex"] == 2
        assert pending.resolution is None
