"""A conversation is bounded like ``ask``: the bytes of one message, the bytes of all its
answers, and its turns. Beyond a bound the answer is ``413 payload_too_large``, nothing is
stored and the turn stays open; a close without words still ends a full conversation."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from openwop_bridge import Engine, Workflow
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.core.conversation_limits import ConversationLimits
from openwop_bridge.host.app import create_app
from openwop_bridge.runtime.config import EngineConfig
from tests.conftest import KEYS, auth
from tests.helpers import envelope, event_types, settle

Talk = Callable[[ConversationLimits, "int | None"], Any]


@pytest.fixture
async def bounded(make_engine: Any) -> AsyncIterator[Callable[..., Any]]:
    """Start an engine with the given conversation limits and a run of an open-ended chat; ``(client, engine, run)``."""
    opened: list[tuple[Engine, httpx.AsyncClient]] = []

    async def start(limits: ConversationLimits, turns: int | None = None) -> tuple[httpx.AsyncClient, Engine, str]:
        engine: Engine = make_engine(EngineConfig(conversation_limits=limits), name=f"bounded{len(opened)}.db")
        wf = Workflow("chat", channels={"transcript": {"reducer": "message", "schema": {"type": "array"}}})
        config: dict[str, Any] = {"initialPrompt": "Hello"}
        if turns is not None:
            config["turnCount"] = turns
        wf.node("talk", type_id="core.conversationGate", config=config)
        wf.register(engine)
        await engine.start()
        app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False, keepalive_s=0.2)
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test")
        opened.append((engine, client))
        r = await client.post("/v1/runs", json={"workflowId": "chat"}, headers=auth("admin"))
        assert r.status_code == 201, r.text
        run_id = str(r.json()["runId"])
        await settle(engine, run_id)
        return client, engine, run_id

    yield start
    for engine, client in opened:
        await client.aclose()
        await engine.stop()


async def _say(client: httpx.AsyncClient, run_id: str, value: Any) -> httpx.Response:
    return await client.post(f"/v1/runs/{run_id}/interrupts/talk", json={"resumeValue": value}, headers=auth("admin"))


async def _refused_and_nothing_stored(
    client: httpx.AsyncClient, engine: Engine, run_id: str, value: Any, limit: str
) -> dict[str, Any]:
    before = await event_types(engine, run_id)
    open_before = await engine.store.interrupt_at(run_id, "talk")
    body = envelope(await _say(client, run_id, value), 413, "payload_too_large")
    assert body["details"]["limit"] == limit
    await settle(engine, run_id)
    assert await event_types(engine, run_id) == before
    still = await engine.store.interrupt_at(run_id, "talk")
    assert still is not None and open_before is not None
    assert still.interrupt_id == open_before.interrupt_id and still.status == "pending"
    return body


def test_the_defaults_are_finite() -> None:
    limits = EngineConfig().conversation_limits
    assert limits == ConversationLimits()
    assert 0 < limits.message_bytes <= limits.conversation_bytes < 1024 * 1024 * 64
    assert 0 < limits.turns <= 10_000


async def test_a_message_over_the_default_bound_is_413_and_stores_nothing(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    wf = Workflow("chat", channels={"transcript": {"reducer": "message", "schema": {"type": "array"}}})
    wf.node("talk", type_id="core.conversationGate", config={"initialPrompt": "Hello", "turnCount": 2})
    wf.register(engine)
    r = await client.post("/v1/runs", json={"workflowId": "chat"}, headers=auth("admin"))
    run_id = str(r.json()["runId"])
    await settle(engine, run_id)
    big = "x" * (ConversationLimits().message_bytes + 1)
    body = await _refused_and_nothing_stored(client, engine, run_id, big, "conversationMessageBytes")
    assert body["details"]["maxBytes"] == ConversationLimits().message_bytes
    # The other shapes of an answer are measured the same way: words in a turn, a close's outcome.
    await _refused_and_nothing_stored(client, engine, run_id, {"turn": {"content": big}}, "conversationMessageBytes")
    await _refused_and_nothing_stored(
        client, engine, run_id, {"operation": "close", "outcome": {"notes": big}}, "conversationMessageBytes"
    )
    assert (await _say(client, run_id, "small")).status_code == 200


async def test_a_message_bound_counts_utf8_bytes(bounded: Callable[..., Any]) -> None:
    client, engine, run_id = await bounded(ConversationLimits(message_bytes=100))
    assert (await _say(client, run_id, "é" * 40)).status_code == 200  # 80 bytes of content
    await settle(engine, run_id)
    await _refused_and_nothing_stored(client, engine, run_id, "é" * 60, "conversationMessageBytes")  # 120 bytes


async def test_the_conversation_bytes_bound_holds_across_turns(bounded: Callable[..., Any]) -> None:
    client, engine, run_id = await bounded(ConversationLimits(message_bytes=1000, conversation_bytes=2500))
    for _ in range(2):
        assert (await _say(client, run_id, "y" * 900)).status_code == 200
        await settle(engine, run_id)
    body = await _refused_and_nothing_stored(client, engine, run_id, "y" * 900, "conversationBytes")
    assert body["details"]["maxBytes"] == 2500 and body["details"]["usedBytes"] >= 1800
    assert (await _say(client, run_id, "y" * 100)).status_code == 200  # a shorter one still fits
    await settle(engine, run_id)
    closed = await _say(client, run_id, {"operation": "close"})  # a close without words always fits
    assert closed.status_code == 200 and closed.json()["closed"] is True
    done = await settle(engine, run_id)
    assert done.status == "completed"


async def test_the_turn_bound_refuses_one_more_exchange_but_not_the_close(bounded: Callable[..., Any]) -> None:
    client, engine, run_id = await bounded(ConversationLimits(turns=2))
    for word in ("one", "two"):
        assert (await _say(client, run_id, word)).status_code == 200
        await settle(engine, run_id)
    body = await _refused_and_nothing_stored(client, engine, run_id, "three", "conversationTurns")
    assert body["details"]["max"] == 2
    closed = await _say(client, run_id, {"operation": "close", "outcome": {"done": True}})
    assert closed.status_code == 200
    done = await settle(engine, run_id)
    assert done.status == "completed" and done.state["outputs"]["talk"]["outcome"] == {"done": True}


async def test_a_retry_of_a_taken_turn_is_still_idempotent_once_the_bound_is_reached(
    bounded: Callable[..., Any],
) -> None:
    client, engine, run_id = await bounded(ConversationLimits(message_bytes=1000, conversation_bytes=1000))
    record = await engine.store.interrupt_at(run_id, "talk")
    assert record is not None
    answer = {"turn": {"messageId": f"{record.payload['data']['conversationId']}:1:user", "content": "z" * 900}}
    assert (await _say(client, run_id, answer)).status_code == 200
    await settle(engine, run_id)
    again = await _say(client, run_id, answer)
    assert again.status_code == 200 and again.json()["idempotent"] is True
