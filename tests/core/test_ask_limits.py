"""``ask`` on an approval is bounded: a question's size, asks per interrupt and per asker,
and the bytes of questions and answers one interrupt holds. Refusals leave what is stored."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from openwop_bridge import Engine, Workflow
from openwop_bridge.core.approvals import AskLimits
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.errors import ConflictError, PayloadTooLargeError
from openwop_bridge.core.records import InterruptRecord
from tests.conftest import auth
from tests.helpers import ADMIN, events, settle

BOB = Principal("bob", scopes=frozenset({"approvals:respond"}))
CAROL = Principal("carol", scopes=frozenset({"approvals:respond"}))


class CountingAskService:
    """Answers every question with a fixed text and counts the questions it was given."""

    def __init__(self, answer: str = "It is final.") -> None:
        self.asked: list[str] = []
        self.answer_text = answer

    async def answer(self, record: InterruptRecord, question: str, asked_by: str) -> str:
        self.asked.append(question)
        return self.answer_text


def gate(engine: Engine) -> None:
    wf = Workflow("asks")
    wf.node("gate", type_id="core.approvalGate", config={"title": "Publish?", "actions": ["accept", "reject", "ask"]})
    wf.register(engine)


async def start(engine: Engine) -> str:
    run = await engine.create_run(ADMIN, "asks")
    await settle(engine, run.run_id)
    return run.run_id


async def stored_asks(engine: Engine, run_id: str) -> list[dict[str, Any]]:
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None and record.open
    return list(record.state.get("askExchanges", []))


async def test_a_question_over_the_size_limit_is_refused_before_anyone_answers_it(engine: Engine) -> None:
    service = CountingAskService()
    engine.ask_service = service
    gate(engine)
    rid = await start(engine)
    await engine.resolve(ADMIN, {"action": "ask", "question": "Is it final?"}, run_id=rid, node_id="gate")
    limit = engine.config.ask_limits.question_bytes
    with pytest.raises(PayloadTooLargeError) as refused:
        await engine.resolve(ADMIN, {"action": "ask", "question": "é" * (limit // 2 + 1)}, run_id=rid, node_id="gate")
    assert refused.value.details == {"limit": "askQuestionBytes", "maxBytes": limit, "bytes": limit + 2}
    # A question given as feedback is the same question.
    with pytest.raises(PayloadTooLargeError):
        await engine.resolve(ADMIN, {"action": "ask", "feedback": "x" * (limit + 1)}, run_id=rid, node_id="gate")
    assert service.asked == ["Is it final?"]
    assert [a["question"] for a in await stored_asks(engine, rid)] == ["Is it final?"]
    assert len(await events(engine, rid, "bridge.approval.asked")) == 1
    # Exactly at the limit is fine.
    await engine.resolve(ADMIN, {"action": "ask", "question": "q" * limit}, run_id=rid, node_id="gate")
    assert len(await stored_asks(engine, rid)) == 2


async def test_one_link_cannot_ask_forever_and_can_still_decide(engine: Engine) -> None:
    engine.ask_service = CountingAskService()
    gate(engine)
    rid = await start(engine)
    record = await engine.store.interrupt_at(rid, "gate")
    assert record is not None
    token, _ = engine.mint_token(record)
    per_asker = engine.config.ask_limits.per_asker
    for i in range(per_asker):
        await engine.resolve_token(token, {"action": "ask", "question": f"question {i}?"})
    with pytest.raises(ConflictError) as refused:
        await engine.resolve_token(token, {"action": "ask", "question": "one more?"})
    assert refused.value.details == {"limit": "asksPerAsker", "max": per_asker, "askedBy": "signed-link"}
    # A fresh link is the same anonymous asker.
    fresh, _ = engine.mint_token(record)
    with pytest.raises(ConflictError):
        await engine.resolve_token(fresh, {"action": "ask", "question": "one more?"})
    assert [a["question"] for a in await stored_asks(engine, rid)] == [f"question {i}?" for i in range(per_asker)]
    done = await engine.resolve_token(token, {"action": "accept"})
    assert done["status"] == "resolved"
    assert (await settle(engine, rid)).status == "completed"


async def test_asks_per_interrupt_are_bounded_across_askers(engine: Engine) -> None:
    engine.ask_service = CountingAskService()
    engine.config.ask_limits = AskLimits(per_interrupt=3, per_asker=2)
    gate(engine)
    rid = await start(engine)
    for who in (ADMIN, ADMIN, BOB):
        await engine.resolve(who, {"action": "ask", "question": f"from {who.id}?"}, run_id=rid, node_id="gate")
    with pytest.raises(ConflictError) as refused:
        await engine.resolve(CAROL, {"action": "ask", "question": "and me?"}, run_id=rid, node_id="gate")
    assert refused.value.details == {"limit": "asksPerInterrupt", "max": 3}
    assert [a["askedBy"] for a in await stored_asks(engine, rid)] == ["alice", "alice", "bob"]


async def test_what_one_interrupt_holds_is_bounded_in_bytes(engine: Engine) -> None:
    service = CountingAskService(answer="a" * 100)
    engine.ask_service = service
    engine.config.ask_limits = AskLimits(interrupt_bytes=1020, per_asker=50, per_interrupt=50)
    gate(engine)
    rid = await start(engine)
    for i in range(3):
        await engine.resolve(ADMIN, {"action": "ask", "question": f"{i}" * 200}, run_id=rid, node_id="gate")
    with pytest.raises(PayloadTooLargeError) as refused:
        await engine.resolve(ADMIN, {"action": "ask", "question": "4" * 200}, run_id=rid, node_id="gate")
    assert refused.value.details == {"limit": "askBytesPerInterrupt", "maxBytes": 1020, "usedBytes": 900}
    # A shorter question still fits.
    await engine.resolve(ADMIN, {"action": "ask", "question": "5" * 10}, run_id=rid, node_id="gate")
    asks = await stored_asks(engine, rid)
    assert [len(a["question"]) for a in asks] == [200, 200, 200, 10]
    assert sum(len(a["question"]) + len(a["answer"]) for a in asks) == 1010


async def test_a_long_answer_is_clipped_to_its_limit(engine: Engine) -> None:
    engine.ask_service = CountingAskService(answer="ü" * 5000)
    gate(engine)
    rid = await start(engine)
    asked = await engine.resolve(ADMIN, {"action": "ask", "question": "Why?"}, run_id=rid, node_id="gate")
    limit = engine.config.ask_limits.answer_bytes
    assert asked["ask"]["answer"].endswith("…")
    assert len(asked["ask"]["answer"].encode()) <= limit
    assert (await stored_asks(engine, rid))[0]["answer"] == asked["ask"]["answer"]


async def test_ask_refusals_are_error_envelopes(engine: Engine, client: httpx.AsyncClient) -> None:
    engine.config.ask_limits = AskLimits(per_asker=1)
    gate(engine)
    rid = await start(engine)
    url = f"/v1/runs/{rid}/interrupts/gate"
    big = await client.post(
        url, json={"resumeValue": {"action": "ask", "question": "x" * 900_000}}, headers=auth("bob")
    )
    assert big.status_code == 413
    assert big.json()["error"] == "payload_too_large" and big.json()["details"]["limit"] == "askQuestionBytes"
    first = await client.post(url, json={"resumeValue": {"action": "ask", "question": "Why?"}}, headers=auth("bob"))
    assert first.status_code == 200 and first.json()["status"] == "pending"
    again = await client.post(url, json={"resumeValue": {"action": "ask", "question": "Why?"}}, headers=auth("bob"))
    assert again.status_code == 409
    assert again.json() == {
        "error": "conflict",
        "message": again.json()["message"],
        "details": {"limit": "asksPerAsker", "max": 1, "askedBy": "bob"},
    }
    decided = await client.post(url, json={"resumeValue": {"action": "accept"}}, headers=auth("bob"))
    assert decided.status_code == 200 and decided.json()["status"] == "resolved"
