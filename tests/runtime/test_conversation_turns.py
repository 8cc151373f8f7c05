"""One answer per conversation turn: concurrent answers to the open turn, and ``messageId`` retries.

An answer answers the turn that was open when it arrived, or the turn it names (``turn.messageId``
or ``turn.turnIndex``), never a later one: of concurrent answers naming one turn exactly one wins,
the others are ``409 interrupt_already_resolved``. A ``messageId`` already applied with the same
content is an idempotent retry; with different content it is a conflict (409).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from openwop_bridge import Engine, Workflow
from tests.conftest import auth
from tests.helpers import envelope, events, settle


def _chat(engine: Engine, turns: int = 3) -> None:
    wf = Workflow("chat", channels={"transcript": {"reducer": "message", "schema": {"type": "array"}}})
    wf.node("talk", type_id="core.conversationGate", config={"initialPrompt": "Hello", "turnCount": turns})
    wf.register(engine)


async def _start(client: httpx.AsyncClient, engine: Engine, turns: int = 3) -> str:
    _chat(engine, turns)
    r = await client.post("/v1/runs", json={"workflowId": "chat"}, headers=auth("admin"))
    assert r.status_code == 201, r.text
    run_id = str(r.json()["runId"])
    await settle(engine, run_id)
    return run_id


async def _say(client: httpx.AsyncClient, run_id: str, value: Any) -> httpx.Response:
    return await client.post(f"/v1/runs/{run_id}/interrupts/talk", json={"resumeValue": value}, headers=auth("admin"))


async def _said(engine: Engine, run_id: str) -> list[tuple[int, Any]]:
    return [
        (e["payload"]["turnIndex"], e["payload"]["turn"]["content"])
        for e in await events(engine, run_id, "conversation.exchanged")
    ]


async def test_two_concurrent_answers_to_one_turn_give_one_winner(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine)
    # Each names the turn it answers (by index): however the two interleave, turn 2 never takes either.
    first, second = await asyncio.gather(
        _say(client, run_id, {"turn": {"turnIndex": 1, "content": "from alpha"}}),
        _say(client, run_id, {"turn": {"turnIndex": 1, "content": "from beta"}}),
    )
    await settle(engine, run_id)
    codes = sorted([first.status_code, second.status_code])
    assert codes == [200, 409], (first.text, second.text)
    loser = first if first.status_code == 409 else second
    winner = first if first.status_code == 200 else second
    envelope(loser, 409, "interrupt_already_resolved")
    assert winner.json()["turnIndex"] == 1
    said = await _said(engine, run_id)
    assert len(said) == 1 and said[0][0] == 1
    pending = await engine.store.interrupt_at(run_id, "talk")
    assert pending is not None and pending.status == "pending"
    assert pending.payload["data"]["turnIndex"] == 2  # the second turn waits, unanswered


async def test_many_concurrent_answers_each_turn_has_one_winner(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, turns=2)
    for turn in (1, 2):
        record = await engine.store.interrupt_at(run_id, "talk")
        assert record is not None
        mid = f"{record.payload['data']['conversationId']}:{turn}:user"
        # Half name the turn by index, half by messageId (each with words of its own).
        named = [{"turnIndex": turn} if i % 2 else {"messageId": mid} for i in range(8)]
        replies = await asyncio.gather(
            *(_say(client, run_id, {"turn": {**n, "content": f"turn {turn} from {i}"}}) for i, n in enumerate(named))
        )
        await settle(engine, run_id)
        codes = [r.status_code for r in replies]
        assert codes.count(200) == 1 and codes.count(409) == 7, codes
        for r in replies:
            if r.status_code == 409:
                envelope(r, 409, "interrupt_already_resolved")
    assert [index for index, _ in await _said(engine, run_id)] == [1, 2]
    assert (await settle(engine, run_id)).status == "completed"


async def test_a_message_id_applied_with_other_content_is_a_conflict(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine)
    record = await engine.store.interrupt_at(run_id, "talk")
    assert record is not None
    cid = record.payload["data"]["conversationId"]
    turn_one = {"operation": "exchange", "turn": {"messageId": f"{cid}:1:user", "content": "one"}}
    assert (await _say(client, run_id, turn_one)).status_code == 200
    await settle(engine, run_id)
    same = await _say(client, run_id, turn_one)
    assert same.status_code == 200 and same.json()["idempotent"] is True
    other = {"operation": "exchange", "turn": {"messageId": f"{cid}:1:user", "content": "not one"}}
    body = envelope(await _say(client, run_id, other), 409, "interrupt_already_resolved")
    assert body["details"]["messageId"] == f"{cid}:1:user"
    # The second turn is open: naming turn 1 again with new words is still a conflict, not the next answer.
    assert (await engine.store.interrupt_at(run_id, "talk")).payload["data"]["turnIndex"] == 2
    two = {"operation": "exchange", "turn": {"messageId": f"{cid}:2:user", "content": "two"}}
    assert (await _say(client, run_id, two)).status_code == 200
    await settle(engine, run_id)
    envelope(await _say(client, run_id, other), 409, "interrupt_already_resolved")
    retry = await _say(client, run_id, turn_one)
    assert retry.status_code == 200 and retry.json()["idempotent"] is True
    assert await _said(engine, run_id) == [(1, "one"), (2, "two")]


async def test_concurrent_answers_with_one_message_id_and_other_content(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    run_id = await _start(client, engine)
    record = await engine.store.interrupt_at(run_id, "talk")
    assert record is not None
    mid = f"{record.payload['data']['conversationId']}:1:user"
    replies = await asyncio.gather(
        *(_say(client, run_id, {"turn": {"messageId": mid, "content": f"v{i}"}}) for i in range(4))
    )
    await settle(engine, run_id)
    codes = [r.status_code for r in replies]
    assert codes.count(200) == 1 and codes.count(409) == 3, codes
    assert len(await _said(engine, run_id)) == 1


async def test_an_answer_naming_a_taken_turn_by_its_index_is_409_not_the_open_turns_answer(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    run_id = await _start(client, engine)
    assert (await _say(client, run_id, {"turn": {"turnIndex": 1, "content": "one"}})).status_code == 200
    await settle(engine, run_id)
    late = await _say(client, run_id, {"turn": {"turnIndex": 1, "content": "one, said again"}})
    body = envelope(late, 409, "interrupt_already_resolved")
    assert body["details"]["turnIndex"] == 1
    ahead = await _say(client, run_id, {"turn": {"turnIndex": 3, "content": "too soon"}})
    envelope(ahead, 400, "validation_error")
    assert await _said(engine, run_id) == [(1, "one")]
    pending = await engine.store.interrupt_at(run_id, "talk")
    assert pending is not None and pending.status == "pending" and pending.payload["data"]["turnIndex"] == 2
