"""The conversation primitive (RFC 0005): turns, events, channels, timeout, replay, capability."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from openwop_bridge import Engine, NodeContext, Workflow, spec
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.core.errors import CapabilityRefusedError
from openwop_bridge.host.app import create_app
from openwop_bridge.host.discovery import discovery_document
from openwop_bridge.runtime.config import EngineConfig
from tests.conftest import KEYS, auth
from tests.helpers import ADMIN, event_types, events, settle


def _chat_workflow(engine: Engine, workflow_id: str = "chat", **config: Any) -> None:
    wf = Workflow(workflow_id, channels={"transcript": {"reducer": "message", "schema": {"type": "array"}}})
    wf.node(
        "talk",
        type_id="core.conversationGate",
        config={"initialPrompt": "Hello! Three questions.", "prompt": "Next?", **config},
    )
    wf.register(engine)


async def _start(client: httpx.AsyncClient, engine: Engine, workflow: str) -> str:
    r = await client.post("/v1/runs", json={"workflowId": workflow}, headers=auth("admin"))
    assert r.status_code == 201, r.text
    await settle(engine, r.json()["runId"])
    return str(r.json()["runId"])


async def _start_chat(client: httpx.AsyncClient, engine: Engine, **config: Any) -> str:
    """Register the ``chat`` workflow (``config`` on its conversation gate) and start a run of it; its id."""
    _chat_workflow(engine, **config)
    return await _start(client, engine, "chat")


async def _conversation_id(engine: Engine, run_id: str) -> str:
    """The id of the conversation open at the run's ``talk`` node."""
    return str((await engine.store.interrupt_at(run_id, "talk")).payload["data"]["conversationId"])


async def _say(client: httpx.AsyncClient, run_id: str, value: Any) -> httpx.Response:
    return await client.post(f"/v1/runs/{run_id}/interrupts/talk", json={"resumeValue": value}, headers=auth("admin"))


async def test_three_exchanges_over_http(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start_chat(client, engine, turnCount=3)
    snap = (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()
    assert snap["status"] == "waiting-approval" and snap["interrupt"]["kind"] == "conversation.exchange"
    inbox = (await client.get("/v1/interrupts", params={"kind": "conversation.exchange"}, headers=auth("admin"))).json()
    assert inbox["items"][0]["turnCount"] == 0 and inbox["items"][0]["conversationId"]
    answers: list[Any] = [
        "first answer",
        {"content": "second answer"},
        {"operation": "exchange", "turn": {"content": {"rating": 5}}},
    ]
    for answer in answers:
        r = await _say(client, run_id, answer)
        assert r.status_code == 200 and r.json()["status"] == "resolved", r.text
        await settle(engine, run_id)
    done = await engine.store.load_run(run_id)
    assert done is not None and done.status == "completed"
    assert done.state["outputs"]["talk"]["outcome"] == {"replies": ["first answer", "second answer", {"rating": 5}]}

    docs = await engine.store.read_events(run_id)
    for doc in docs:
        assert not spec.validate_event(doc), doc
    opened = next(d for d in docs if d["type"] == "conversation.opened")
    start_suspended = next(
        d for d in docs if d["type"] == "node.suspended" and d["payload"]["kind"] == "conversation.start"
    )
    assert opened["causationId"] == start_suspended["eventId"]
    cid = opened["payload"]["conversationId"]
    assert opened["payload"]["initialTurn"]["turnIndex"] == 0
    exchanged = [d["payload"] for d in docs if d["type"] == "conversation.exchanged"]
    assert [e["turnIndex"] for e in exchanged] == [1, 2, 3]
    assert [e["turn"]["messageId"] for e in exchanged] == [f"{cid}:{i}:user" for i in (1, 2, 3)]
    closed = next(d["payload"] for d in docs if d["type"] == "conversation.closed")
    assert closed["turnIndex"] == 4 and closed["finalTurn"]["messageId"] == f"{cid}:4:agent"
    waiting = [
        d["payload"] for d in docs if d["type"] == "node.suspended" and d["payload"]["reason"] == "conversation-input"
    ]
    assert len(waiting) == 3 and all(w["kind"] == "conversation.exchange" for w in waiting)

    snap = (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()
    transcript = snap["channels"]["transcript"]
    assert [t["messageId"].split(":", 4)[-1] for t in transcript] == [
        "0:agent",
        "1:agent",
        "1:user",
        "2:agent",
        "2:user",
        "3:agent",
        "3:user",
        "4:agent",
    ]
    assert [t["turnIndex"] for t in transcript] == [0, 1, 1, 2, 2, 3, 3, 4]
    assert all("speakerId" in t for t in transcript if t["role"] == "agent")
    for turn in transcript:
        assert not list(spec.validator("conversation-turn.schema.json").iter_errors(turn))


async def test_person_closes_and_later_exchanges_are_refused(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start_chat(client, engine)
    await _say(client, run_id, "one")
    await settle(engine, run_id)
    r = await _say(client, run_id, {"operation": "close", "outcome": {"booked": True}, "reason": "done"})
    assert r.status_code == 200 and r.json()["closed"] is True
    done = await settle(engine, run_id)
    assert done.status == "completed"
    assert done.state["outputs"]["talk"]["outcome"] == {"booked": True}
    assert done.state["outputs"]["talk"]["closedBy"] == "user"
    late = await _say(client, run_id, "anyone there?")
    assert late.status_code == 400 and late.json()["error"] == "validation_error"
    closed = await events(engine, run_id, "conversation.closed")
    assert len(closed) == 1 and closed[0]["payload"]["outcome"] == {"booked": True}


async def test_node_exchange_after_close_is_a_validation_error(engine: Engine) -> None:
    wf = Workflow("after-close")

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        conv = await ctx.conversation(title="t")
        await conv.close("bye")
        await conv.exchange("still there?")
        return {}

    wf.register(engine)
    run = await engine.create_run(ADMIN, "after-close")
    done = await settle(engine, run.run_id)
    assert done.status == "failed" and done.state["error"]["code"] == "validation_error"


async def test_schema_rejection_keeps_the_exchange_open(client: httpx.AsyncClient, engine: Engine) -> None:
    _chat_workflow(
        engine,
        turnCount=1,
        outcomeSchema={
            "type": "object",
            "required": ["score"],
            "properties": {"score": {"type": "integer", "maximum": 10}},
        },
    )
    run_id = await _start(client, engine, "chat")
    bad = await _say(client, run_id, {"content": {"score": 11}})
    assert bad.status_code == 400 and bad.json()["error"] == "validation_error"
    assert (await engine.store.interrupt_at(run_id, "talk")).status == "pending"
    ok = await _say(client, run_id, {"content": {"score": 7}})
    assert ok.status_code == 200
    assert (await settle(engine, run_id)).state["outputs"]["talk"]["outcome"] == {"replies": [{"score": 7}]}


async def test_repeated_answer_with_the_same_message_id_is_idempotent(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    run_id = await _start_chat(client, engine, turnCount=2)
    cid = await _conversation_id(engine, run_id)
    answer = {"operation": "exchange", "turn": {"messageId": f"{cid}:1:user", "content": "hi"}}
    first = await _say(client, run_id, answer)
    await settle(engine, run_id)
    retry = await _say(client, run_id, answer)
    assert first.status_code == retry.status_code == 200 and retry.json()["idempotent"] is True
    assert (await engine.store.interrupt_at(run_id, "talk")).status == "pending"  # turn 2 still waits
    assert (await event_types(engine, run_id)).count("conversation.exchanged") == 1


async def test_an_older_turn_sent_again_later_is_a_retry_and_a_foreign_message_id_is_refused(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    run_id = await _start_chat(client, engine, turnCount=3)
    cid = await _conversation_id(engine, run_id)
    first = {"operation": "exchange", "turn": {"messageId": f"{cid}:1:user", "content": "one"}}
    assert (await _say(client, run_id, first)).status_code == 200
    await settle(engine, run_id)
    assert (await _say(client, run_id, "two")).status_code == 200
    await settle(engine, run_id)
    late_retry = await _say(client, run_id, first)  # turn 1 again, while the third exchange waits
    assert late_retry.status_code == 200 and late_retry.json()["idempotent"] is True
    for foreign in (f"{cid}:99:user", "conv:elsewhere:1:user", "my-own-id"):
        bad = await _say(client, run_id, {"operation": "exchange", "turn": {"messageId": foreign, "content": "x"}})
        assert bad.status_code == 400 and bad.json()["details"]["messageId"].startswith(cid), bad.text
    assert (await engine.store.interrupt_at(run_id, "talk")).status == "pending"
    assert (await _say(client, run_id, "three")).status_code == 200
    done = await settle(engine, run_id)
    assert done.status == "completed"
    said = [e["payload"]["turn"]["content"] for e in await events(engine, run_id, "conversation.exchanged")]
    assert said == ["one", "two", "three"]
    ids = [
        m["messageId"]
        for m in (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()["channels"]["transcript"]
    ]
    assert len(ids) == len(set(ids)) and sum(i.endswith(":user") for i in ids) == 3


async def test_timeout_over_the_whole_conversation(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start_chat(client, engine, timeoutMs=400)
    await _say(client, run_id, "quick answer")
    done = await settle(engine, run_id, statuses=("failed", "completed"), timeout=10)
    assert done.status == "failed" and done.state["error"]["code"] == "interrupt_timeout"
    closed = await events(engine, run_id, "conversation.closed")
    assert len(closed) == 1
    payload = closed[0]["payload"]
    assert payload["outcome"] is None and payload["finalTurn"]["role"] == "system"
    assert not spec.validate_event(closed[0])


async def test_fork_replay_reproduces_the_channels_byte_for_byte(client: httpx.AsyncClient, engine: Engine) -> None:
    source = await _start_chat(client, engine, turnCount=3)
    for answer in ("a", "b", "c"):
        await _say(client, source, answer)
        await settle(engine, source)
    r = await client.post(f"/v1/runs/{source}:fork", json={"mode": "replay"}, headers=auth("admin"))
    assert r.status_code == 201, r.text
    fork = r.json()["runId"]
    done = await settle(engine, fork)
    assert done.status == "completed"
    a = (await client.get(f"/v1/runs/{source}", headers=auth("admin"))).json()
    b = (await client.get(f"/v1/runs/{fork}", headers=auth("admin"))).json()
    assert orjson.dumps(a["channels"]) == orjson.dumps(b["channels"])
    assert b["replayOf"] == source
    assert not await engine.store.run_interrupts(fork, open_only=True)  # nobody was asked again
    for doc in await engine.store.read_events(fork):
        assert not spec.validate_event(doc)


async def test_an_answered_exchange_stores_its_turn_once(client: httpx.AsyncClient, engine: Engine) -> None:
    # The events an answer emits are in the log; the interrupt's row keeps the answer, not those events again.
    _chat_workflow(engine, turnCount=2)
    run_id = await _start(client, engine, "chat")
    await _say(client, run_id, "a")
    await settle(engine, run_id)
    answered = [r for r in await engine.store.run_interrupts(run_id, open_only=False) if r.status == "resolved"]
    exchange = next(r for r in answered if r.kind == "conversation.exchange")
    assert exchange.resolution is not None
    assert set(exchange.resolution) == {
        "resumeValue",
        "resolvedBy",
        "resolvedAt",
        "turn",
        "operation",
        "decisionRecordId",
    }
    assert exchange.resolution["turn"]["content"] == "a"


async def _said(engine: Engine, run_id: str, *also: str) -> list[tuple[str, dict[str, Any]]]:
    """A run's conversation events and their resolutions (and ``also`` these types), without the interrupt
    ids a fork gives anew."""
    kept = ("interrupt.resolved", "conversation.opened", "conversation.exchanged", "conversation.closed", *also)
    docs = [d for d in await engine.store.read_events(run_id) if d["type"] in kept]
    return [(d["type"], {k: v for k, v in d["payload"].items() if k != "interruptId"}) for d in docs]


async def _fork(client: httpx.AsyncClient, engine: Engine, source: str) -> str:
    fork = (await client.post(f"/v1/runs/{source}:fork", json={"mode": "replay"}, headers=auth("admin"))).json()
    assert (await settle(engine, fork["runId"])).status == "completed"
    return str(fork["runId"])


async def test_fork_replay_emits_the_source_answers_events_again(client: httpx.AsyncClient, engine: Engine) -> None:
    _chat_workflow(engine)
    source = await _start(client, engine, "chat")
    await _say(client, source, "one")
    await settle(engine, source)
    await _say(client, source, {"operation": "close", "outcome": {"booked": True}, "reason": "done"})
    await settle(engine, source)
    fork = await _fork(client, engine, source)
    assert await _said(engine, fork) == await _said(engine, source)
    assert [t for t, _ in await _said(engine, source)].count("conversation.exchanged") == 1


async def test_a_node_close_stores_its_outcome_once_and_a_fork_replays_it(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    _chat_workflow(engine, turnCount=2)
    source = await _start(client, engine, "chat")
    for answer in ("a", "b"):
        await _say(client, source, answer)
        await settle(engine, source)
    closes = [r for r in await engine.store.run_interrupts(source, open_only=False) if r.kind == "conversation.close"]
    assert len(closes) == 1 and closes[0].resolution is not None
    assert closes[0].resolution == {"resumeValue": None, "resolvedBy": "system", "outcome": {"replies": ["a", "b"]}}
    fork = await _fork(client, engine, source)
    assert await _said(engine, fork) == await _said(engine, source)
    # The close's own events, its node.resumed with the outcome included.
    said = (await _said(engine, source, "node.resumed"))[-3:]
    assert [t for t, _ in said] == ["conversation.closed", "interrupt.resolved", "node.resumed"]
    assert (await _said(engine, fork, "node.resumed"))[-3:] == said


async def test_fork_replay_of_an_unfinished_run_continues_live(client: httpx.AsyncClient, engine: Engine) -> None:
    source = await _start_chat(client, engine, turnCount=3)
    await _say(client, source, "a")
    await settle(engine, source)
    fork = (await client.post(f"/v1/runs/{source}:fork", json={}, headers=auth("admin"))).json()["runId"]
    await settle(engine, fork)
    pending = await engine.store.interrupt_at(fork, "talk")
    assert pending.status == "pending" and pending.payload["data"]["turnIndex"] == 2
    bad = await client.post(f"/v1/runs/{source}:fork", json={"mode": "live"}, headers=auth("admin"))
    assert bad.status_code == 400


async def test_a_fork_continued_live_closes_with_the_source_answers_and_its_own(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    # The fork settles the source's answer as it replays; a later activation's close reads it from the store.
    source = await _start_chat(client, engine, turnCount=3)
    await _say(client, source, "a")
    await settle(engine, source)
    fork = (await client.post(f"/v1/runs/{source}:fork", json={}, headers=auth("admin"))).json()["runId"]
    await settle(engine, fork)
    for answer in ("b", "c"):
        assert (await _say(client, fork, answer)).status_code == 200
        await settle(engine, fork)
    done = await engine.store.load_run(fork)
    assert done is not None and done.status == "completed"
    assert done.state["nodes"]["talk"]["outputs"]["outcome"] == {"replies": ["a", "b", "c"]}


async def test_conversation_fixtures(engine: Engine) -> None:
    for fixture in (
        "conformance-conversation-lifecycle",
        "conformance-conversation-replay",
        "conformance-conversation-vs-clarification",
    ):
        run = await engine.create_run(ADMIN, fixture)
        done = await settle(engine, run.run_id)
        assert done.status == "completed", fixture
        types = await event_types(engine, run.run_id)
        assert types.count("conversation.opened") == 1 and types.count("conversation.closed") == 1
        assert not any(t.startswith("clarification.") for t in types)
        expected_turns = 3 if fixture == "conformance-conversation-replay" else 1
        assert types.count("conversation.exchanged") == expected_turns
    run = await engine.create_run(ADMIN, "conformance-conversation-replay")
    await settle(engine, run.run_id)
    fork = await engine.fork_run(run.run_id, ADMIN)
    await settle(engine, fork.run_id)
    a, b = (await engine.snapshot(run.run_id, ADMIN)), (await engine.snapshot(fork.run_id, ADMIN))
    assert orjson.dumps(a["channels"]) == orjson.dumps(b["channels"]) and len(a["channels"]["conversation"]) == 8
    negotiation = await engine.create_run(ADMIN, "conformance-conversation-capability-negotiation")
    await settle(engine, negotiation.run_id)
    await engine.resolve(ADMIN, {"operation": "close", "outcome": "ok"}, run_id=negotiation.run_id, node_id="convo")
    assert (await settle(engine, negotiation.run_id)).status == "completed"


async def test_capability_switched_off_refuses_at_run_creation(make_engine) -> None:
    engine = make_engine(EngineConfig(conversation_enabled=False))
    await engine.start()
    try:
        assert discovery_document(engine)["conversationPrimitive"] is False
        with pytest.raises(CapabilityRefusedError) as refused:
            await engine.create_run(ADMIN, "conformance-conversation-capability-negotiation")
        assert refused.value.code == "validation_error"
        assert refused.value.details == {"requiredCapability": "conversationPrimitive"}
        run = await engine.create_run(ADMIN, "conformance-clarification")
        assert (await settle(engine, run.run_id)).status == "waiting-input"
    finally:
        await engine.stop()


async def test_capability_off_over_http_for_python_workflows_too(make_engine) -> None:
    engine = make_engine(EngineConfig(conversation_enabled=False))
    declared = Workflow("declared-chat")

    @declared.node("talk", conversation=True)
    async def talk(ctx: NodeContext) -> dict[str, Any]:
        conv = await ctx.conversation(title="Trip", initial_prompt="Where to?")
        return {"said": await conv.exchange("Where to?")}

    declared.register(engine)
    undeclared = Workflow("undeclared-chat")

    @undeclared.node("talk")
    async def talk_too(ctx: NodeContext) -> dict[str, Any]:
        conv = await ctx.conversation(title="Trip", initial_prompt="Where to?")
        return {"said": await conv.exchange("Where to?")}

    undeclared.register(engine)
    await engine.start()
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test") as c:
            refused = await c.post("/v1/runs", json={"workflowId": "declared-chat"}, headers=auth("admin"))
            assert refused.status_code == 400, refused.text
            assert refused.json()["details"] == {"requiredCapability": "conversationPrimitive"}
            started = await c.post("/v1/runs", json={"workflowId": "undeclared-chat"}, headers=auth("admin"))
            assert started.status_code == 201
            failed = await settle(engine, started.json()["runId"])
            assert failed.status == "failed"
            assert failed.state["error"]["details"] == {"requiredCapability": "conversationPrimitive"}
    finally:
        await engine.stop()
