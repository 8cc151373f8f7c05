"""An answer that names no turn is for the turn open when it arrived, never the next one.

Two bare answers to one turn (a string, ``{"content": …}``) at the same moment: one takes the
turn, the other is ``409 interrupt_already_resolved`` and changes nothing, even when it reads the
address only after the first answer committed the next prompt with the step it woke. A bare
answer sent once the first answer returned answers the next prompt.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openwop_bridge import Engine, Workflow
from openwop_bridge.core.errors import BridgeError, InterruptAlreadyResolvedError
from openwop_bridge.core.records import InterruptDecision, InterruptRecord, Mutation, RunRecord
from openwop_bridge.store.base import AnswerStepResult, Claim, RunCommit
from tests.helpers import ADMIN, event_types, events, settle


def _chat(engine: Engine) -> None:
    wf = Workflow("chat", channels={"transcript": {"reducer": "message", "schema": {"type": "array"}}})
    wf.node("talk", type_id="core.conversationGate", config={"initialPrompt": "Hello", "turnCount": 3})
    wf.register(engine)


async def _answer(engine: Engine, run_id: str, value: Any) -> dict[str, Any] | BridgeError:
    try:
        return await engine.resolve(ADMIN, value, run_id=run_id, node_id="talk")
    except BridgeError as exc:
        return exc


async def _said(engine: Engine, run_id: str) -> list[tuple[int, Any]]:
    return [
        (e["payload"]["turnIndex"], e["payload"]["turn"]["content"])
        for e in await events(engine, run_id, "conversation.exchanged")
    ]


async def test_a_bare_answer_arriving_while_another_commits_the_next_prompt_is_409(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _chat(engine)
    real = engine.store.answer_and_step
    real_read = engine.store.run_and_interrupt_at
    second: list[asyncio.Task[dict[str, Any] | BridgeError]] = []
    run_ids: list[str] = []
    read: list[InterruptRecord | None] = []
    read_done = asyncio.Event()

    async def reading(run_id: str, node_id: str) -> tuple[RunRecord | None, InterruptRecord | None]:
        found = await real_read(run_id, node_id)
        if second:
            read.append(found[1])
            read_done.set()
        return found

    async def then_another(
        seen: tuple[RunRecord, InterruptRecord],
        decided: Mutation,
        decide: InterruptDecision,
        now_ms: int,
        claim: Claim,
        step: RunCommit | None,
    ) -> AnswerStepResult:
        # The first answer commits with the step that opens turn 2; before it returns, a second
        # bare answer arrives, and it reads the address only after that commit.
        done = await real(seen, decided, decide, now_ms, claim, step)
        if not second:
            second.append(asyncio.ensure_future(_answer(engine, run_ids[-1], {"content": "from beta"})))
            await read_done.wait()
        return done

    # What one answer to turn 1 leaves in the log, with nothing else posted.
    alone = await engine.create_run(ADMIN, "chat")
    await settle(engine, alone.run_id)
    assert isinstance(await _answer(engine, alone.run_id, "from alpha"), dict)
    await settle(engine, alone.run_id)
    expected = await event_types(engine, alone.run_id)
    monkeypatch.setattr(engine.store, "answer_and_step", then_another)
    monkeypatch.setattr(engine.store, "run_and_interrupt_at", reading)
    for _ in range(5):
        run = await engine.create_run(ADMIN, "chat")
        run_ids.append(run.run_id)
        await settle(engine, run.run_id)
        second.clear()
        read.clear()
        read_done.clear()
        first = await _answer(engine, run.run_id, "from alpha")
        assert second, "the answer did not commit with its step"
        late = await second[0]
        # The second answer read the address after the first committed: it found turn 2 open.
        assert read[0] is not None and read[0].payload["data"]["turnIndex"] == 2
        await settle(engine, run.run_id)
        assert isinstance(first, dict) and first["turnIndex"] == 1, first
        assert isinstance(late, InterruptAlreadyResolvedError), late
        assert late.details == {"turnIndex": 1}
        # The 409 changed nothing: the log is the one answer's, and turn 2 waits, unanswered.
        assert await event_types(engine, run.run_id) == expected
        assert await _said(engine, run.run_id) == [(1, "from alpha")]
        pending = await engine.store.interrupt_at(run.run_id, "talk")
        assert pending is not None and pending.status == "pending" and pending.payload["data"]["turnIndex"] == 2
        assert pending.resolution is None


async def test_two_bare_answers_at_the_same_moment_one_wins(engine: Engine) -> None:
    _chat(engine)
    for _ in range(20):
        run = await engine.create_run(ADMIN, "chat")
        await settle(engine, run.run_id)
        replies = await asyncio.gather(_answer(engine, run.run_id, "alpha"), _answer(engine, run.run_id, "beta"))
        await settle(engine, run.run_id)
        won = [r for r in replies if isinstance(r, dict)]
        lost = [r for r in replies if isinstance(r, InterruptAlreadyResolvedError)]
        assert len(won) == 1 and len(lost) == 1, replies
        assert won[0]["turnIndex"] == 1 and lost[0].details == {"turnIndex": 1}
        assert await _said(engine, run.run_id) == [(1, won[0]["resumeValue"])]


async def test_a_bare_answer_sent_after_the_next_prompt_opened_answers_it(engine: Engine) -> None:
    _chat(engine)
    run = await engine.create_run(ADMIN, "chat")
    await settle(engine, run.run_id)
    first = await _answer(engine, run.run_id, "one")
    # Sent once the first answer returned, before anyone read the run again: it answers turn 2.
    second = await _answer(engine, run.run_id, {"content": "two"})
    await settle(engine, run.run_id)
    assert isinstance(first, dict) and first["turnIndex"] == 1
    assert isinstance(second, dict) and second["turnIndex"] == 2
    assert await _said(engine, run.run_id) == [(1, "one"), (2, "two")]


async def test_a_bare_answer_arriving_beside_a_refused_one_answers_the_open_turn(engine: Engine) -> None:
    _chat(engine)
    run = await engine.create_run(ADMIN, "chat")
    await settle(engine, run.run_id)
    # The first is refused (a turn's answer is no object of this shape): the turn stays open for the second.
    refused, answered = await asyncio.gather(
        _answer(engine, run.run_id, {"operation": "wave"}), _answer(engine, run.run_id, "hello")
    )
    await settle(engine, run.run_id)
    assert isinstance(refused, BridgeError) and refused.code == "validation_error", refused
    assert isinstance(answered, dict) and answered["turnIndex"] == 1
    assert await _said(engine, run.run_id) == [(1, "hello")]


async def test_an_answer_by_id_read_after_another_committed_the_next_prompt_is_409(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a surface does (AG-UI, the LangGraph API): read the open turn, then answer it by its id.
    _chat(engine)
    run = await engine.create_run(ADMIN, "chat")
    await settle(engine, run.run_id)
    real = engine.store.answer_and_step
    second: list[asyncio.Task[dict[str, Any] | BridgeError]] = []
    read = asyncio.Event()

    async def by_id() -> dict[str, Any] | BridgeError:
        found = await engine.store.interrupt_at(run.run_id, "talk")
        assert found is not None and found.payload["data"]["turnIndex"] == 2  # read after the first committed
        read.set()  # the answer starts in this same step of the task
        try:
            return await engine.resolve(ADMIN, "from beta", interrupt_id=found.interrupt_id)
        except BridgeError as exc:
            return exc

    async def then_another(*args: Any) -> Any:
        done = await real(*args)
        if not second:
            second.append(asyncio.ensure_future(by_id()))
            await read.wait()
        return done

    monkeypatch.setattr(engine.store, "answer_and_step", then_another)
    first = await _answer(engine, run.run_id, "from alpha")
    late = await second[0]
    await settle(engine, run.run_id)
    assert isinstance(first, dict) and first["turnIndex"] == 1
    assert isinstance(late, InterruptAlreadyResolvedError) and late.details == {"turnIndex": 1}, late
    assert await _said(engine, run.run_id) == [(1, "from alpha")]
