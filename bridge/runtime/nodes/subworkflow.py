"""``core.subWorkflow``: run another workflow as a child and wait for it.

Config: ``workflowId``; ``waitForCompletion`` (default true); ``onChildFailure``
(``fail-parent``, the default, or ``continue``); ``outputMapping`` (parent
variable ← child variable); ``inputMapping`` (child variable ← parent
variable); ``propagateCancellation`` (default true: cancelling the parent
cancels the child with ``reason: parent-cancelled``). A child that is cancelled
gives the parent a deterministic outcome: the node fails with
``child_cancelled`` (or, with ``continue``, completes with that status).
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core.errors import NodeError
from openwop_bridge.core.workflow import NodeSpec, thaw
from openwop_bridge.runtime.context import NodeContext


def check_subworkflow(node: NodeSpec) -> list[str]:
    """``workflowId`` is required; mappings must be string → string."""
    config = thaw(node.config)
    problems = []
    if not isinstance(config.get("workflowId"), str) or not config.get("workflowId"):
        problems.append("workflowId is required")
    for name in ("outputMapping", "inputMapping"):
        mapping = config.get(name)
        if mapping is not None and not (
            isinstance(mapping, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items())
        ):
            problems.append(f"{name} must map variable names to variable names")
    if config.get("onChildFailure", "fail-parent") not in ("fail-parent", "continue"):
        problems.append("onChildFailure must be 'fail-parent' or 'continue'")
    return problems


async def subworkflow(ctx: NodeContext) -> dict[str, Any]:
    """Starts the child run once, suspends until it ends, maps its variables back."""
    config = ctx.config
    child_inputs = dict(ctx.inputs.get("inputs") or {})
    for child_var, parent_var in (config.get("inputMapping") or {}).items():
        child_inputs[child_var] = ctx.variables.get(parent_var)
    if config.get("waitForCompletion", True) is False:
        child_id = await ctx.start_child(config["workflowId"], child_inputs)
        return {"childRunId": child_id, "status": "started"}
    status, summary = await ctx.run_child(config["workflowId"], child_inputs)
    child_id = str(summary.get("runId"))
    if status == "completed":
        variables = summary.get("variables", {})
        for parent_var, child_var in (config.get("outputMapping") or {}).items():
            ctx.set_variable(parent_var, variables.get(child_var))
        return {"childRunId": child_id, "status": status, "outputs": summary.get("outputs", {})}
    if config.get("onChildFailure", "fail-parent") == "continue":
        return {"childRunId": child_id, "status": status, "error": summary.get("error")}
    code = "child_cancelled" if status == "cancelled" else "child_failed"
    raise NodeError(
        f"child run {child_id} ended {status}",
        code=code,
        details={"childRunId": child_id, "childError": summary.get("error")},
    )
