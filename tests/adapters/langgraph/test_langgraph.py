"""The LangGraph adapter with real graphs and a real checkpointer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from openwop_bridge import Engine, SqliteStore, spec
from openwop_bridge.core.errors import ValidationError
from openwop_bridge.langgraph import GraphWorkflows
from openwop_bridge.langgraph.checkpoints import Checkpoints
from openwop_bridge.runtime.config import EngineConfig
from tests import graphs
from tests.conftest import auth
from tests.helpers import ADMIN, event_types, events, settle


@pytest.fixture
async def lg(engine: Engine) -> AsyncIterator[GraphWorkflows]:
    workflows = GraphWorkflows(engine)
    try:
        yield workflows
    finally:
        await workflows.close()


async def _open(engine: Engine, run_id: str) -> list[Any]:
    return await engine.open_interrupts(run_id)


async def test_helper_approval_over_rest(lg: GraphWorkflows, engine: Engine, client: httpx.AsyncClient) -> None:
    lg.add("publish", graphs.approve_graph())
    r = await client.post("/v1/runs", json={"workflowId": "publish", "inputs": {"text": "v1"}}, headers=auth("admin"))
    run_id = r.json()["runId"]
    await settle(engine, run_id)
    snap = (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()
    assert snap["status"] == "waiting-approval"
    node = snap["interrupt"]["nodeId"]
    assert node.startswith("graph:review.") and snap["interrupt"]["kind"] == "approval"
    assert snap["interrupt"]["payload"]["data"]["artifactData"] == {"text": "v1"}
    answer = {"action": "edit-accept", "editedArtifactData": {"text": "v2"}}
    assert (
        await client.post(f"/v1/runs/{run_id}/interrupts/{node}", json={"resumeValue": answer}, headers=auth("bob"))
    ).status_code == 200
    done = await settle(engine, run_id)
    assert done.status == "completed"
    state = done.state["outputs"]["graph"]["state"]
    assert state == {"text": "v2", "decision": "edit-accept", "decided_by": "bob"}
    for doc in await engine.store.read_events(run_id):
        assert not spec.validate_event(doc), doc


async def test_parallel_interrupts_are_independent(lg: GraphWorkflows, engine: Engine) -> None:
    lg.add("fan", graphs.fan_out_graph())
    run = await engine.create_run(ADMIN, "fan", inputs={"topics": ["legal", "finance", "security"]})
    await settle(engine, run.run_id)
    pending = await _open(engine, run.run_id)
    assert len(pending) == 3 and len({p.node_id for p in pending}) == 3
    inbox = await engine.inbox(ADMIN, kind="custom")
    assert {i["nodeId"] for i in inbox["items"]} == {p.node_id for p in pending}
    first = pending[0]
    await engine.resolve(ADMIN, {"ok": True}, run_id=run.run_id, node_id=first.node_id)
    await settle(engine, run.run_id)
    left = await _open(engine, run.run_id)
    assert {p.interrupt_id for p in left} == {p.interrupt_id for p in pending[1:]}
    for p in left:
        await engine.resolve(ADMIN, {"ok": False}, run_id=run.run_id, node_id=p.node_id)
        await settle(engine, run.run_id)
    done = await settle(engine, run.run_id)
    answers = done.state["outputs"]["graph"]["state"]["answers"]
    assert sorted(a["ok"] for a in answers) == [False, False, True] and len(answers) == 3


async def test_response_schema_is_enforced_before_the_graph(lg: GraphWorkflows, engine: Engine) -> None:
    from openwop_bridge.core.errors import ValidationError

    lg.add("fan", graphs.fan_out_graph())
    run = await engine.create_run(ADMIN, "fan", inputs={"topics": ["legal"]})
    await settle(engine, run.run_id)
    [p] = await _open(engine, run.run_id)
    assert p.payload["resumeSchema"]["required"] == ["ok"]
    with pytest.raises(ValidationError):
        await engine.resolve(ADMIN, {"ok": "nope"}, run_id=run.run_id, node_id=p.node_id)
    assert (await engine.store.get_interrupt(p.interrupt_id)).status == "pending"
    await engine.resolve(ADMIN, {"ok": True}, run_id=run.run_id, node_id=p.node_id)
    assert (await settle(engine, run.run_id)).state["outputs"]["graph"]["state"]["answers"] == [
        {"topic": "legal", "ok": True}
    ]


async def test_subgraph_interrupt(lg: GraphWorkflows, engine: Engine) -> None:
    lg.add("nested", graphs.subgraph_graph())
    run = await engine.create_run(ADMIN, "nested")
    await settle(engine, run.run_id)
    [p] = await _open(engine, run.run_id)
    assert p.kind == "clarification"
    await engine.resolve(ADMIN, {"answers": {"q1": "EU"}}, run_id=run.run_id, node_id=p.node_id)
    done = await settle(engine, run.run_id)
    assert done.state["outputs"]["graph"]["state"]["answers"] == {"q1": "EU"}


async def test_low_confidence_helper(lg: GraphWorkflows, engine: Engine) -> None:
    lg.add("route", graphs.supervisor_graph())
    run = await engine.create_run(ADMIN, "route", inputs={"confidence": 0.4})
    await settle(engine, run.run_id)
    assert (await engine.store.load_run(run.run_id)).status == "waiting-approval"
    types = await event_types(engine, run.run_id)
    assert types.index("agent.decided") < types.index("node.suspended")
    suspended = (await events(engine, run.run_id, "node.suspended"))[0]["payload"]
    assert (suspended["reason"], suspended["observed"], suspended["threshold"]) == ("low-confidence", 0.4, 0.7)
    [p] = await _open(engine, run.run_id)
    await engine.resolve(ADMIN, {"route": "sales"}, run_id=run.run_id, node_id=p.node_id)
    done = await settle(engine, run.run_id)
    assert done.state["outputs"]["graph"]["state"]["decision"] == {"route": "sales"}
    confident = await engine.create_run(ADMIN, "route", inputs={"confidence": 0.9})
    assert (await settle(engine, confident.run_id)).state["outputs"]["graph"]["state"]["decision"] == {
        "route": "billing"
    }
    lowered = await engine.create_run(
        ADMIN, "route", inputs={"confidence": 0.4}, configurable={"escalationThreshold": 0.3}
    )
    assert (await settle(engine, lowered.run_id)).status == "completed"


async def test_conversation_helper_folds_into_one_conversation(lg: GraphWorkflows, engine: Engine) -> None:
    lg.add("intake", graphs.conversation_graph())
    run = await engine.create_run(ADMIN, "intake")
    for answer in ("Lisbon", "May", "Two"):
        await settle(engine, run.run_id)
        [p] = await _open(engine, run.run_id)
        assert p.kind == "conversation.exchange"
        await engine.resolve(ADMIN, answer, run_id=run.run_id, node_id=p.node_id)
    done = await settle(engine, run.run_id)
    assert done.status == "completed"
    assert done.state["outputs"]["graph"]["state"]["replies"] == ["Lisbon", "May", "Two"]
    types = await event_types(engine, run.run_id)
    assert types.count("conversation.opened") == 1 and types.count("conversation.exchanged") == 3
    assert types.count("conversation.closed") == 1
    snap = await engine.snapshot(run.run_id, ADMIN)
    turns = snap["channels"]["messages"]
    assert [t["content"] for t in turns if t["role"] == "user"] == ["Lisbon", "May", "Two"]
    assert turns[-1]["content"] == "Thanks, all set."
    for doc in await engine.store.read_events(run.run_id):
        assert not spec.validate_event(doc), doc


async def test_hitl_per_call_one_approval_per_tool_call(lg: GraphWorkflows, engine: Engine) -> None:
    lg.add("agent", graphs.hitl_per_call())
    run = await engine.create_run(ADMIN, "agent", inputs={"messages": [{"role": "user", "content": "launch"}]})
    await settle(engine, run.run_id)
    pending = await _open(engine, run.run_id)
    calls = {p.payload["data"]["artifactData"]["toolCallId"]: p for p in pending}
    assert set(calls) == {"call_mail", "call_rm"}
    assert calls["call_mail"].payload["data"]["actions"] == ["accept", "edit-accept", "reject", "refine"]
    assert calls["call_rm"].payload["data"]["actions"] == ["accept", "reject"]
    await engine.resolve(
        ADMIN,
        {
            "action": "edit-accept",
            "editedArtifactData": {
                "toolCallId": "call_mail",
                "name": "send_email",
                "args": {"to": "team@acme.test", "subject": "Launch"},
            },
        },
        run_id=run.run_id,
        node_id=calls["call_mail"].node_id,
    )
    await settle(engine, run.run_id)
    assert [p.interrupt_id for p in await _open(engine, run.run_id)] == [calls["call_rm"].interrupt_id]
    await engine.resolve(
        ADMIN, {"action": "reject", "feedback": "keep the draft"}, run_id=run.run_id, node_id=calls["call_rm"].node_id
    )
    done = await settle(engine, run.run_id)
    messages = done.state["outputs"]["graph"]["state"]["messages"]
    tools = {m["toolCallId"]: m["content"] for m in messages if m["type"] == "tool"}
    assert "team@acme.test" in tools["call_mail"] and "keep the draft" in tools["call_rm"]
    types = await event_types(engine, run.run_id)
    assert types.count("agent.toolCalled") == 2 and types.count("agent.toolReturned") == 2
    assert types.index("agent.toolCalled") < types.index("interrupt.requested")
    said = [e["payload"]["chunk"] for e in await events(engine, run.run_id, "output.chunk")]
    assert said == ["Sending it now.", "All done."]


async def test_hitl_batched_one_approval_answered_per_call(lg: GraphWorkflows, engine: Engine) -> None:
    lg.add("agent", graphs.hitl_batched())
    run = await engine.create_run(ADMIN, "agent", inputs={"messages": [{"role": "user", "content": "launch"}]})
    await settle(engine, run.run_id)
    [p] = await _open(engine, run.run_id)
    assert p.payload["data"]["artifactType"] == "tool-calls"
    assert [a["name"] for a in p.payload["data"]["artifactData"]["actions"]] == ["send_email", "delete_file"]
    await engine.resolve(
        ADMIN,
        {
            "action": "edit-accept",
            "editedArtifactData": {"decisions": [{"type": "approve"}, {"type": "reject", "message": "not now"}]},
        },
        run_id=run.run_id,
        node_id=p.node_id,
    )
    done = await settle(engine, run.run_id)
    tools = {
        m["toolCallId"]: m["content"]
        for m in done.state["outputs"]["graph"]["state"]["messages"]
        if m["type"] == "tool"
    }
    assert tools["call_mail"].startswith("sent") and "not now" in tools["call_rm"]


async def test_a_tool_review_answer_the_graph_would_refuse_is_a_400_and_stays_open(
    lg: GraphWorkflows, engine: Engine, client: httpx.AsyncClient
) -> None:
    lg.add("agent", graphs.hitl_per_call())
    run = await engine.create_run(ADMIN, "agent", inputs={"messages": [{"role": "user", "content": "launch"}]})
    await settle(engine, run.run_id)
    calls = {p.payload["data"]["artifactData"]["toolCallId"]: p for p in await _open(engine, run.run_id)}
    url = f"/v1/runs/{run.run_id}/interrupts/{calls['call_mail'].node_id}"
    wrong_type = {"action": "edit-accept", "editedArtifactData": {"args": {"to": 5, "subject": "Launch"}}}
    r = await client.post(url, json={"resumeValue": wrong_type}, headers=auth("admin"))
    assert r.status_code == 400 and r.json()["error"] == "validation_error", r.text
    assert "problems" in r.json()["details"]
    rm_url = f"/v1/runs/{run.run_id}/interrupts/{calls['call_rm'].node_id}"
    not_allowed = await client.post(
        rm_url, json={"resumeValue": {"action": "refine", "feedback": "x"}}, headers=auth("admin")
    )
    assert not_allowed.status_code == 400, not_allowed.text
    assert len(await _open(engine, run.run_id)) == 2  # both still open; nothing reached the graph
    assert (await engine.store.load_run(run.run_id)).status == "waiting-approval"
    ok = await client.post(url, json={"resumeValue": {"action": "accept"}}, headers=auth("admin"))
    assert ok.status_code == 200
    await settle(engine, run.run_id)
    ok = await client.post(rm_url, json={"resumeValue": {"action": "reject"}}, headers=auth("admin"))
    assert ok.status_code == 200
    assert (await settle(engine, run.run_id)).status == "completed"


async def test_batched_review_answers_are_checked_per_call(lg: GraphWorkflows, engine: Engine) -> None:
    lg.add("agent", graphs.hitl_batched())
    run = await engine.create_run(ADMIN, "agent", inputs={"messages": [{"role": "user", "content": "launch"}]})
    await settle(engine, run.run_id)
    [p] = await _open(engine, run.run_id)
    for bad in (
        {"action": "refine", "feedback": "why?"},  # delete_file allows approve/reject only
        {"action": "edit-accept", "editedArtifactData": {"decisions": [{"type": "approve"}]}},  # 2 calls
        {"action": "edit-accept", "editedArtifactData": {"decisions": [{"type": "approve"}, {"type": "edit"}]}},
    ):
        with pytest.raises(ValidationError):
            await engine.resolve(ADMIN, bad, run_id=run.run_id, node_id=p.node_id)
    assert [i.interrupt_id for i in await _open(engine, run.run_id)] == [p.interrupt_id]
    await engine.resolve(
        ADMIN,
        {"action": "edit-accept", "editedArtifactData": {"decisions": [{"type": "approve"}, {"type": "reject"}]}},
        run_id=run.run_id,
        node_id=p.node_id,
    )
    assert (await settle(engine, run.run_id)).status == "completed"


async def test_any_other_value_is_a_custom_interrupt_stored_as_json(lg: GraphWorkflows, engine: Engine) -> None:
    lg.add("odd", graphs.odd_value_graph())
    run = await engine.create_run(ADMIN, "odd")
    await settle(engine, run.run_id)
    [p] = await _open(engine, run.run_id)
    assert p.kind == "custom" and p.payload["data"]["customKind"] == "langgraph.interrupt"
    assert p.payload["data"]["payload"] == {"question": "Which plan?", "options": ["basic", "pro"]}
    await engine.resolve(ADMIN, "pro", run_id=run.run_id, node_id=p.node_id)
    done = await settle(engine, run.run_id)
    assert done.status == "completed" and done.state["outputs"]["graph"]["state"]["text"] == "pro"


async def test_stale_answer_is_an_error_the_user_sees(lg: GraphWorkflows, engine: Engine) -> None:
    lg.add("publish", graphs.approve_graph())
    run = await engine.create_run(ADMIN, "publish", inputs={"text": "v1"})
    await settle(engine, run.run_id)
    [p] = await _open(engine, run.run_id)
    # Someone resumes the graph behind the bridge's back: the LangGraph interrupt is consumed.
    graph = await lg.checkpoints.bind(graphs.approve_graph())
    config = {"configurable": {"thread_id": f"openwop:{run.run_id}:graph:0"}}
    state = await graph.aget_state(config)
    await graph.ainvoke(Command(resume={state.interrupts[0].id: {"action": "accept"}}), config)
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id=p.node_id)
    done = await settle(engine, run.run_id)
    assert done.status == "failed" and done.state["error"]["code"] == "langgraph_unknown_interrupt"
    assert done.state["error"]["details"]["reason"] == "not_pending"


async def test_a_crash_after_the_graph_took_an_answer_still_finishes_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "crash.db"
    first = Engine(SqliteStore(db), config=EngineConfig(lease_ms=300))
    await first.start()
    lg = GraphWorkflows(first)
    lg.add("publish", graphs.approve_graph())
    run = await first.create_run(ADMIN, "publish", inputs={"text": "v1"})
    await settle(first, run.run_id)
    [p] = await _open(first, run.run_id)
    took = asyncio.Event()
    real_bind = Checkpoints.bind

    async def bind(self: Checkpoints, graph: Any) -> Any:
        bound = await real_bind(self, graph)
        real_ainvoke = bound.ainvoke

        async def ainvoke(step: Any, *args: Any, **kwargs: Any) -> Any:
            out = await real_ainvoke(step, *args, **kwargs)
            if isinstance(step, Command):
                took.set()  # the graph's checkpoint holds the answer now; the process dies here
                await asyncio.Event().wait()
            return out

        bound.ainvoke = ainvoke
        return bound

    monkeypatch.setattr(Checkpoints, "bind", bind)
    await first.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id=p.node_id)
    await asyncio.wait_for(took.wait(), 10)
    await first.stop()
    await lg.close()
    monkeypatch.undo()

    second = Engine(SqliteStore(db), config=EngineConfig(lease_ms=300))
    lg2 = GraphWorkflows(second)
    lg2.add("publish", graphs.approve_graph())
    await second.start()
    try:
        done = await settle(second, run.run_id, timeout=15)
        assert done.status == "completed", done.state.get("error")
        assert done.state["outputs"]["graph"]["state"]["decision"] == "accept"
        assert (await event_types(second, run.run_id)).count("interrupt.requested") == 1
    finally:
        await second.stop()
        await lg2.close()


async def test_chat_agent_conversation_on_one_agent_thread(lg: GraphWorkflows, engine: Engine) -> None:
    lg.add_chat("travel", graphs.chat_agent(), greeting="Where would you like to go?")
    run = await engine.create_run(ADMIN, "travel")
    prompts = []
    for answer in ("Lisbon", "Friday", "Two of us"):
        await settle(engine, run.run_id)
        [p] = await _open(engine, run.run_id)
        prompts.append(p.payload["data"]["prompt"])
        await engine.resolve(ADMIN, answer, run_id=run.run_id, node_id=p.node_id)
    done = await settle(engine, run.run_id)
    assert prompts == [
        "Where would you like to go?",
        "Lisbon it is. When do you leave? (you said: Lisbon)",
        "How many travellers?",
    ]
    assert done.status == "completed" and done.state["outputs"]["graph"]["closedBy"] == "node"
    snap = await engine.snapshot(run.run_id, ADMIN)
    assert snap["channels"]["messages"][-1]["content"] == "Booked! Have a good trip."
    agent = await lg.checkpoints.bind(graphs.chat_agent())
    thread = await agent.aget_state({"configurable": {"thread_id": f"openwop:{run.run_id}:graph:0"}})
    humans = [m.content for m in thread.values["messages"] if m.type == "human"]
    assert humans == ["Lisbon", "Friday", "Two of us"]  # each turn once, on the agent's own thread


async def test_a_chat_agent_s_own_interrupt_is_asked_before_its_reply(lg: GraphWorkflows, engine: Engine) -> None:
    lg.add_chat("mailer", graphs.chat_agent_with_a_gated_tool(), greeting="What should I send?")
    run = await engine.create_run(ADMIN, "mailer")
    await settle(engine, run.run_id)
    [turn] = await _open(engine, run.run_id)
    await engine.resolve(ADMIN, "mail ops", run_id=run.run_id, node_id=turn.node_id)
    await settle(engine, run.run_id)
    [review] = await _open(engine, run.run_id)  # not the next turn: the agent's tool call first
    assert review.kind == "approval"
    assert [a["name"] for a in review.payload["data"]["artifactData"]["actions"]] == ["send_email"]
    assert (await engine.store.load_run(run.run_id)).status == "waiting-approval"
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id=review.node_id)
    await settle(engine, run.run_id)
    [turn] = await _open(engine, run.run_id)
    assert turn.kind == "conversation.exchange" and turn.payload["data"]["prompt"] == "Sent it. Anything else?"
    await engine.resolve(ADMIN, "no", run_id=run.run_id, node_id=turn.node_id)
    done = await settle(engine, run.run_id)
    assert done.status == "completed", done.state.get("error")
    assert done.state["outputs"]["graph"]["closedBy"] == "node"
    agent = await lg.checkpoints.bind(graphs.chat_agent_with_a_gated_tool())
    thread = await agent.aget_state({"configurable": {"thread_id": f"openwop:{run.run_id}:graph:0"}})
    tools = [m.content for m in thread.values["messages"] if m.type == "tool"]
    assert tools == ["sent 'Hi' to ops@acme.test"]


async def test_chat_closed_by_the_person(lg: GraphWorkflows, engine: Engine) -> None:
    lg.add_chat("travel", graphs.chat_agent())
    run = await engine.create_run(ADMIN, "travel")
    await settle(engine, run.run_id)
    [p] = await _open(engine, run.run_id)
    await engine.resolve(ADMIN, {"operation": "close", "outcome": "never mind"}, run_id=run.run_id, node_id=p.node_id)
    done = await settle(engine, run.run_id)
    assert done.state["outputs"]["graph"] == {
        **done.state["outputs"]["graph"],
        "outcome": "never mind",
        "closedBy": "peer",
        "turns": 0,
    }


async def test_helpers_also_run_under_plain_langgraph() -> None:
    graph = graphs.approve_graph().copy(update={"checkpointer": InMemorySaver()})
    config = {"configurable": {"thread_id": "plain"}}
    await graph.ainvoke({"text": "v1"}, config)
    state = await graph.aget_state(config)
    [itr] = state.interrupts
    assert itr.value["openwop"]["kind"] == "approval"
    out = await graph.ainvoke(Command(resume={itr.id: {"action": "accept", "decidedBy": "me"}}), config)
    assert out["decision"] == "accept" and out["decided_by"] == "me"


async def test_graph_workflows_cannot_be_fork_replayed(lg: GraphWorkflows, engine: Engine) -> None:
    from openwop_bridge.core.errors import ValidationError

    lg.add("publish", graphs.approve_graph())
    run = await engine.create_run(ADMIN, "publish")
    await settle(engine, run.run_id)
    with pytest.raises(ValidationError):
        await engine.fork_run(run.run_id, ADMIN)


async def test_the_helper_escalates_below_the_host_threshold_not_a_fixed_one(tmp_path: Path) -> None:
    engine = Engine(SqliteStore(tmp_path / "threshold.db"), config=EngineConfig(default_threshold=0.3))
    await engine.start()
    lg = GraphWorkflows(engine)
    lg.add("route", graphs.supervisor_graph())
    try:
        sure_enough = await engine.create_run(ADMIN, "route", inputs={"confidence": 0.4})
        assert (await settle(engine, sure_enough.run_id)).status == "completed"
        unsure = await engine.create_run(ADMIN, "route", inputs={"confidence": 0.2})
        await settle(engine, unsure.run_id)
        suspended = (await events(engine, unsure.run_id, "node.suspended"))[0]["payload"]
        assert (suspended["observed"], suspended["threshold"]) == (0.2, 0.3)
    finally:
        await engine.stop()
        await lg.close()


def test_an_approval_result_reads_every_legacy_decision_and_edit() -> None:
    from openwop_bridge.langgraph import ApprovalResult

    assert ApprovalResult.from_value({"decision": "granted"}).approved
    assert ApprovalResult.from_value({"decision": "approved"}).action == "accept"
    assert ApprovalResult.from_value({"decision": "cancelled"}).action == "reject"
    assert ApprovalResult.from_value({"action": "edit", "editedArtifactData": 1}).approved
    assert ApprovalResult.from_value("edit").action == "edit-accept"
