"""``vendor.openwop-bridge.toolCall``: a tool call a person approves (or edits) before it runs.

The tool is a built-in stand-in that records the call and returns what it was
given, so a workflow written in JSON (and the demo) can show the whole gated
tool-call flow: the pending call, the approval with editable arguments, the
result. Real tools are called from Python nodes with
:func:`openwop_bridge.runtime.tools.approved_tool_call`.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core.workflow import NodeSpec, thaw
from openwop_bridge.runtime.context import NodeContext
from openwop_bridge.runtime.tools import approved_tool_call


def check_tool_call(node: NodeSpec) -> list[str]:
    """``toolName`` is required; ``args`` must be an object."""
    config = thaw(node.config)
    problems = []
    if not isinstance(config.get("toolName"), str) or not config.get("toolName"):
        problems.append("toolName is required")
    if not isinstance(config.get("args", {}), dict):
        problems.append("args must be an object")
    return problems


async def tool_call(ctx: NodeContext) -> dict[str, Any]:
    """Asks before running the stand-in tool; outputs whether it ran and its result."""
    config = ctx.config

    def run(args: dict[str, Any]) -> dict[str, Any]:
        return {"executed": True, "tool": config["toolName"], "args": args}

    outcome = await approved_tool_call(
        ctx,
        str(config["toolName"]),
        dict(config.get("args") or {}),
        run,
        description=config.get("description"),
        allow_edit=bool(config.get("allowEdit", True)),
    )
    return {
        "approved": outcome.approved,
        "result": outcome.result,
        "feedback": outcome.feedback,
        "toolCallId": outcome.call_id,
    }
