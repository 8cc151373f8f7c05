"""Agent nodes used by the multi-agent conformance fixtures.

- ``core.conformance.mock-agent`` (RFC 0023): emits the scripted ``agent.*``
  events, then ``agent.decided``; below the threshold it escalates through a
  ``low-confidence`` interrupt and outputs the ratified decision.
- ``core.orchestrator.supervisor``: one decision per visit, from
  ``mockPendingDecision`` (held behind the CP-1 threshold check when
  ``mockConfidence`` is set) or ``mockDispatchPlan``; ``terminate`` once the
  plan is spent. Emits ``runOrchestrator.decided`` only for a ratified decision.
- ``core.dispatch``: executes the supervisor's decision. A ``next-worker``
  decision whose own ``confidence`` is below the RFC 0039 floor (0.5) is first
  confirmed by a person (``core.workflowChain.confidence-escalated`` then a
  clarification), before any child starts.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core import kinds
from openwop_bridge.core.errors import BridgeError, NodeError
from openwop_bridge.runtime.context import NodeContext
from openwop_bridge.runtime.nodes.base import NodeResult

CONFIDENCE_FLOOR = 0.5


async def mock_agent(ctx: NodeContext) -> dict[str, Any]:
    """Replays a scripted agent turn (conformance only)."""
    config = ctx.config
    agent = ctx.agent_id
    reasoning = config.get("mockReasoning")
    if reasoning:
        if isinstance(reasoning, dict):
            for i, chunk in enumerate(reasoning.get("streamChunks") or []):
                ctx.emit("agent.reasoning.delta", {"agentId": agent, "delta": chunk, "sequence": i})
            text = reasoning.get("trace") or reasoning.get("summary") or ""
            payload: dict[str, Any] = {"agentId": agent, "reasoning": text, "summary": reasoning.get("summary")}
            if reasoning.get("tokenCount") is not None:
                payload["tokenCount"] = reasoning["tokenCount"]
        else:
            payload = {"agentId": agent, "reasoning": "mock reasoning", "summary": "mock reasoning"}
        ctx.emit("agent.reasoned", payload)
    for i, call in enumerate(config.get("mockToolCalls") or []):
        call_id = f"{ctx.run_id}:{ctx.node_id}:{ctx.visit}:call{i}"
        ctx.emit(
            "agent.toolCalled",
            {"agentId": agent, "toolName": call["toolId"], "callId": call_id, "inputs": call.get("arguments")},
        )
        returned: dict[str, Any] = {"agentId": agent, "toolName": call["toolId"], "callId": call_id}
        if "error" in call:
            returned["error"] = {"code": call["error"]["error"], "message": call["error"]["message"]}
            returned["status"] = "error"
        else:
            returned["outcome"] = call.get("result")
            returned["status"] = "ok"
        if call.get("durationMs") is not None:
            returned["durationMs"] = call["durationMs"]
        ctx.emit("agent.toolReturned", returned)
    handoff = config.get("mockHandoff")
    if handoff:
        ctx.emit(
            "agent.handoff",
            {"fromAgentId": agent, "toAgentId": handoff["toAgentId"], "reason": handoff.get("reason", "handoff")},
        )
    scripted = config.get("mockDecision")
    if scripted is None and "mockConfidence" in config:
        scripted = {"decision": {"kind": "mock"}, "confidence": config["mockConfidence"]}
    if scripted is None:
        return {}
    decision = await ctx.decide(scripted.get("decision"), confidence=scripted.get("confidence"), agent_id=agent)
    return {"decision": decision}


def _planned_decision(ctx: NodeContext) -> tuple[dict[str, Any], float | None]:
    config = ctx.config
    plan = config.get("mockDispatchPlan")
    if isinstance(plan, list):
        if ctx.visit < len(plan):
            return dict(plan[ctx.visit]), None
        return {"kind": "terminate", "reason": "dispatch plan complete"}, None
    if ctx.visit == 0 and config.get("mockPendingDecision") is not None:
        return dict(config["mockPendingDecision"]), config.get("mockConfidence")
    if ctx.visit == 0 and config.get("decision") is not None:
        return dict(config["decision"]), config.get("confidence")
    return {"kind": "terminate", "reason": "no further work"}, None


async def supervisor(ctx: NodeContext) -> NodeResult:
    """Decides what happens next; a low-confidence decision waits for a person (CP-1)."""
    decision, confidence = _planned_decision(ctx)
    if confidence is not None:
        decision = await ctx.decide(decision, confidence=confidence)
    ctx.emit("runOrchestrator.decided", {"agentId": ctx.agent_id, "decision": decision})
    outputs = {"decision": decision}
    if isinstance(decision, dict) and decision.get("kind") == "terminate":
        return NodeResult(outputs, route=[])
    return NodeResult(outputs)


def _upstream_decision(ctx: NodeContext) -> dict[str, Any] | None:
    for info in ctx.upstream.values():
        decision = (info.get("outputs") or {}).get("decision")
        if isinstance(decision, dict):
            return decision
    decision = ctx.inputs.get("decision")
    return decision if isinstance(decision, dict) else None


async def dispatch(ctx: NodeContext) -> NodeResult:
    """Executes the supervisor's decision: child runs, a question to a person, or the end."""
    decision = _upstream_decision(ctx)
    if decision is None or decision.get("kind") == "terminate":
        return NodeResult({"dispatched": [], "terminated": True}, route=[])
    if decision.get("kind") == "ask-user":
        answer = await ctx.interrupt(
            kinds.CLARIFICATION.payload(
                {
                    "questions": [{"id": "answer", "question": str(decision.get("prompt", "Your input?"))}],
                    "contextType": "orchestrator.ask-user",
                }
            )
        )
        return NodeResult({"answer": answer["answers"][0]["answer"], "dispatched": []})
    workers = [str(w) for w in decision.get("nextWorkerIds") or []]
    if not workers:
        raise NodeError("a next-worker decision needs nextWorkerIds", code="validation_error")
    confidence = kinds.finite_confidence(decision.get("confidence"))
    if confidence is not None and confidence < CONFIDENCE_FLOOR:
        ctx.emit(
            "core.workflowChain.confidence-escalated",
            {
                "confidence": confidence,
                "floor": CONFIDENCE_FLOOR,
                "escalationKind": "clarify",
                "workerId": workers[0],
                "parentRunId": ctx.run_id,
                "originalDecision": decision,
            },
        )
        answer = await ctx.interrupt(
            kinds.CLARIFICATION.payload(
                {
                    "questions": [
                        {
                            "id": "proceed",
                            "question": f"The supervisor is only {confidence:.0%} confident it should hand this to "
                            f"{', '.join(workers)}. Proceed?",
                            "schema": {"type": "boolean"},
                        }
                    ],
                    "contextType": "orchestrator.confidence-escalation",
                }
            )
        )
        if answer["answers"][0]["answer"] is not True:
            return NodeResult({"dispatched": [], "declined": True})
    dispatched = []
    for worker in workers:
        dispatched.append(await _dispatch_one(ctx, worker))
    return NodeResult({"dispatched": dispatched})


async def _dispatch_one(ctx: NodeContext, worker: str) -> dict[str, Any]:
    """One planner→worker handoff, with a ``core.workflowChain.event`` per transition."""
    base = {"workerId": worker, "parentRunId": ctx.run_id}
    ctx.emit("core.workflowChain.event", {"phase": "dispatch.began", **base})
    try:
        child_id = await ctx.start_child(worker)
    except BridgeError as exc:
        ctx.emit("core.workflowChain.event", {"phase": "dispatch.failed", **base})
        raise NodeError(f"could not dispatch {worker}: {exc.message}", code=exc.code) from exc
    ctx.emit("core.workflowChain.event", {"phase": "dispatch.succeeded", **base, "childRunId": child_id})
    status, summary = await ctx.wait_child(child_id)
    phase = {"completed": "child.completed", "failed": "child.failed"}.get(status, "child.cancelled")
    ctx.emit("core.workflowChain.event", {"phase": phase, **base, "childRunId": child_id})
    ctx.emit("node.dispatched", {"childRunId": child_id, "childWorkflowId": worker, "childStatus": status})
    harvested = dict(summary.get("variables") or {}) if status == "completed" else {}
    if status == "completed":
        ctx.emit(
            "core.workflowChain.event",
            {"phase": "output.harvested", **base, "childRunId": child_id, "harvestedKeys": sorted(harvested)},
        )
    return {"workflowId": worker, "runId": child_id, "status": status, "outputs": harvested}
