"""Tool calls that need a person's approval before they run.

``await approved_tool_call(ctx, "send_email", {"to": …}, send)`` emits
``agent.toolCalled``, raises an ``approval`` interrupt whose artifact is the call
(``artifactType: "tool-call"``, ``artifactData: {toolCallId, name, args}``), runs
the tool with the approved (or edited) arguments exactly once — its result is
recorded with ``ctx.step`` — and emits ``agent.toolReturned``. A rejection emits
``agent.toolReturned`` with ``status: "forbidden"`` and does not run the tool.

Frontends see the pending call before the question (the AG-UI adapter streams
it as ``TOOL_CALL_*`` and asks with a ``tool_call`` interrupt).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openwop_bridge.core.kinds import TOOL_CALL_ARTIFACT, ApprovalKind, approval

if TYPE_CHECKING:
    from openwop_bridge.runtime.context import NodeContext

ToolFunction = Callable[[dict[str, Any]], Awaitable[Any] | Any]


@dataclass(frozen=True, slots=True)
class ToolCallOutcome:
    """What happened to a gated tool call."""

    call_id: str
    approved: bool
    args: dict[str, Any]
    result: Any = None
    feedback: str | None = None
    decided_by: str | None = None


def is_tool_call_approval(payload: Mapping[str, Any]) -> bool:
    """True for an approval interrupt created by :func:`approved_tool_call` (or shaped like one)."""
    return ApprovalKind.is_tool_call(payload)


async def approved_tool_call(
    ctx: NodeContext,
    name: str,
    args: Mapping[str, Any],
    run: ToolFunction,
    *,
    call_id: str | None = None,
    description: str | None = None,
    allow_edit: bool = True,
    timeout_ms: int | None = None,
) -> ToolCallOutcome:
    """Ask before running a tool; see the module docstring."""
    call = call_id or f"call_{ctx.run_id.rsplit('_', 1)[-1][-10:]}_{ctx.node_id}_{ctx.next_interrupt_number()}"
    agent = ctx.agent_id
    ctx.emit("agent.toolCalled", {"agentId": agent, "toolName": name, "callId": call, "inputs": dict(args)})
    actions = ["accept", "edit-accept", "reject"] if allow_edit else ["accept", "reject"]
    decision = await ctx.interrupt(
        approval(
            f"Run {name}?",
            actions=actions,
            artifact_id=call,
            artifact_type=TOOL_CALL_ARTIFACT,
            artifact_data={"toolCallId": call, "name": name, "args": dict(args)},
            description=description,
            timeout_ms=timeout_ms,
        )
    )
    action = decision.get("action")
    decided_by = decision.get("decidedBy")
    if action not in ("accept", "edit-accept"):
        feedback = decision.get("feedback") or decision.get("reason")
        ctx.emit(
            "agent.toolReturned",
            {
                "agentId": agent,
                "toolName": name,
                "callId": call,
                "status": "forbidden",
                "outcome": {"rejected": True, "feedback": feedback},
            },
        )
        return ToolCallOutcome(call, False, dict(args), feedback=feedback, decided_by=decided_by)
    edited = decision.get("editedArtifactData")
    final_args = (
        dict(edited["args"]) if isinstance(edited, Mapping) and isinstance(edited.get("args"), Mapping) else dict(args)
    )

    async def invoke() -> Any:
        value = run(final_args)
        if asyncio.iscoroutine(value) or isinstance(value, Awaitable):
            value = await value
        return value

    result = await ctx.step(f"tool:{call}", invoke)
    ctx.emit(
        "agent.toolReturned",
        {"agentId": agent, "toolName": name, "callId": call, "status": "ok", "outcome": result},
    )
    return ToolCallOutcome(call, True, final_args, result=result, decided_by=decided_by)
