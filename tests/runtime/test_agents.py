"""Low-confidence escalation: agent.decided, thresholds, the orchestrator and multi-agent fixtures."""

from __future__ import annotations

import math
from typing import Any

import pytest

from openwop_bridge import Engine, NodeContext, Workflow, spec
from tests.helpers import ADMIN, event_types, events, settle


async def test_agent_low_confidence_fixture(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-agent-low-confidence")
    await settle(engine, run.run_id)
    assert (await engine.store.load_run(run.run_id)).status == "waiting-approval"
    docs = await engine.store.read_events(run.run_id)
    types = [d["type"] for d in docs]
    decided = types.index("agent.decided")
    suspended = next(d for d in docs if d["type"] == "node.suspended")
    assert types.index("node.suspended") > decided
    assert suspended["payload"]["reason"] == "low-confidence"
    assert (suspended["payload"]["agentId"], suspended["payload"]["threshold"], suspended["payload"]["observed"]) == (
        "core.conformance.low-conf-decider",
        0.7,
        0.5,
    )
    snap = await engine.snapshot(run.run_id, ADMIN)
    assert snap["interrupt"]["kind"] == "low-confidence"
    assert snap["interrupt"]["payload"]["data"]["decision"] == {"kind": "stub-low-conf"}
    await engine.resolve(ADMIN, {"kind": "operator-corrected"}, run_id=run.run_id, node_id="low-conf-decider")
    done = await settle(engine, run.run_id)
    assert done.state["outputs"]["low-conf-decider"]["decision"] == {"kind": "operator-corrected"}


def _agent(engine: Engine, confidence: Any) -> None:
    wf = Workflow(f"agent-{abs(hash(repr(confidence)))}")

    @wf.node("a")
    async def a(ctx: NodeContext) -> dict[str, Any]:
        return {"decision": await ctx.decide({"route": "billing"}, confidence=confidence, agent_id="host:triage")}

    wf.register(engine)
    engine._last = wf.id  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("confidence", "configurable", "escalates"),
    [
        (0.69, {}, True),
        (0.7, {}, False),  # equal to the threshold continues
        (None, {}, False),  # no signal
        (float("nan"), {}, False),  # buggy payload: logged, never escalates
        (float("inf"), {}, False),
        (0.5, {"escalationThreshold": 0.4}, False),  # per-run override
        (0.5, {"escalationThreshold": 0.9}, True),
    ],
)
async def test_threshold_rules(engine: Engine, confidence: Any, configurable: dict, escalates: bool) -> None:
    _agent(engine, confidence)
    run = await engine.create_run(ADMIN, engine._last, configurable=configurable)  # type: ignore[attr-defined]
    done = await settle(engine, run.run_id)
    assert (done.status == "waiting-approval") is escalates
    decided = (await events(engine, run.run_id, "agent.decided"))[0]["payload"]
    assert decided["agentId"] == "host:triage"
    usable = confidence is not None and math.isfinite(confidence)
    if usable:
        assert decided["confidence"] == confidence
    else:
        assert "confidence" not in decided
    warnings = await events(engine, run.run_id, "log.appended")
    assert bool(warnings) is (confidence is not None and not usable)
    if warnings:
        assert warnings[0]["payload"]["level"] == "warn"
    for doc in await engine.store.read_events(run.run_id):
        assert not spec.validate_event(doc)


async def test_orchestrator_holds_its_decision_until_ratified(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-orchestrator-low-confidence")
    await settle(engine, run.run_id)
    assert (await engine.store.load_run(run.run_id)).status == "waiting-approval"
    types = await event_types(engine, run.run_id)
    assert "runOrchestrator.decided" not in types and "agent.decided" in types
    suspended = (await events(engine, run.run_id, "node.suspended"))[0]["payload"]
    assert suspended["reason"] == "low-confidence" and suspended["observed"] == 0.5
    decision = {"kind": "next-worker", "nextWorkerIds": ["conformance-noop"]}
    await engine.resolve(ADMIN, decision, run_id=run.run_id, node_id="supervisor")
    done = await settle(engine, run.run_id, timeout=15)
    assert done.status == "completed"
    decided = [e["payload"]["decision"] for e in await events(engine, run.run_id, "runOrchestrator.decided")]
    assert decided == [decision, {"kind": "terminate", "reason": "no further work"}]
    chain = [e["payload"]["phase"] for e in await events(engine, run.run_id, "core.workflowChain.event")]
    assert chain == ["dispatch.began", "dispatch.succeeded", "child.completed", "output.harvested"]
    children = await engine.store.child_runs(run.run_id)
    assert [(c.workflow_id, c.status) for c in children] == [("conformance-noop", "completed")]
    for doc in await engine.store.read_events(run.run_id):
        assert not spec.validate_event(doc), doc


async def test_multi_agent_confidence_floor_escalates_before_any_dispatch(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-multi-agent-confidence-escalation")
    await settle(engine, run.run_id)
    assert (await engine.store.load_run(run.run_id)).status == "waiting-input"
    types = await event_types(engine, run.run_id)
    assert types.count("core.workflowChain.confidence-escalated") == 1
    assert types.count("core.workflowChain.event") == 0
    escalated = (await events(engine, run.run_id, "core.workflowChain.confidence-escalated"))[0]["payload"]
    assert (escalated["confidence"], escalated["floor"], escalated["escalationKind"]) == (0.3, 0.5, "clarify")
    snap = await engine.snapshot(run.run_id, ADMIN)
    assert snap["interrupt"]["kind"] == "clarification"
    await engine.resolve(ADMIN, {"answers": {"proceed": False}}, run_id=run.run_id, node_id="dispatch")
    done = await settle(engine, run.run_id)
    assert done.status == "completed"
    assert (await event_types(engine, run.run_id)).count("core.workflowChain.event") == 0
    for doc in await engine.store.read_events(run.run_id):
        assert not spec.validate_event(doc), doc


async def test_mock_agent_scripted_events(engine: Engine) -> None:
    wf = Workflow("scripted")
    wf.node(
        "agent",
        type_id="core.conformance.mock-agent",
        agent={"agentId": "vendor.acme.helper"},
        config={
            "mockReasoning": {"summary": "Chose A.", "streamChunks": ["Cho", "se A."]},
            "mockToolCalls": [{"toolId": "acme:search", "arguments": {"q": "x"}, "result": ["hit"], "durationMs": 3}],
            "mockHandoff": {"toAgentId": "vendor.acme.writer", "reason": "specialist"},
            "mockDecision": {"decision": {"next": "write"}, "confidence": 0.95},
        },
    )
    wf.register(engine)
    run = await engine.create_run(ADMIN, "scripted")
    done = await settle(engine, run.run_id)
    assert done.status == "completed" and done.state["outputs"]["agent"]["decision"] == {"next": "write"}
    types = await event_types(engine, run.run_id)
    ordered = [
        "agent.reasoning.delta",
        "agent.reasoned",
        "agent.toolCalled",
        "agent.toolReturned",
        "agent.handoff",
        "agent.decided",
    ]
    assert [t for t in types if t.startswith("agent.")] == ordered[:1] * 2 + ordered[1:]
    for doc in await engine.store.read_events(run.run_id):
        assert not spec.validate_event(doc), doc
