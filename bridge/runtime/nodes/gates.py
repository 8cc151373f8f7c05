"""``core.approvalGate`` (with the RFC 0051/0093 governance config) and ``core.clarificationGate``.

A gate that is not accepted fails with ``approval_rejected`` (``details.action``
says whether it was ``reject``, ``refine`` or ``timeout``): with no edge for a
failure the run fails, and an ``any_failed`` edge routes it (to a revise step
that can loop back, which then raises a new interrupt with a new key). A
timeout never approves, whatever ``onTimeout`` says.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core import approvals, kinds
from openwop_bridge.core.errors import ApprovalRejectedError, InterruptTimeoutError, ValidationError
from openwop_bridge.core.workflow import NodeSpec, thaw
from openwop_bridge.runtime.context import NodeContext

_GOVERNANCE = (
    "requiredRole",
    "requiredScope",
    "override",
    "overrideBypassesQuorum",
    "profile",
    "separationOfDuties",
    "assurance",
)


def approval_payload(node: NodeSpec, config: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """The ``approval`` InterruptPayload for a gate node."""
    actions = [approvals.canonical_action(a) for a in config.get("actions", ["accept", "reject"])]
    data: dict[str, Any] = {
        "artifactId": str(config.get("artifactId") or node.id),
        "artifactType": str(config.get("artifactType") or "approval-gate"),
        "title": str(config.get("title") or node.name),
        "actions": actions,
        "gateId": node.id,
    }
    if config.get("description"):
        data["description"] = str(config["description"])
    artifact = config.get("artifactData", inputs.get("artifact", inputs.get("artifactData")))
    if artifact is not None:
        data["artifactData"] = artifact
    required = config.get("requiredApprovals", config.get("quorum"))
    if required is not None:
        data["requiredApprovals"] = required
    for name in ("approversList", "rejectionPolicy", *_GOVERNANCE):
        if name in config:
            data[name] = config[name]
    payload = kinds.APPROVAL.payload(data)
    timeout = config.get("timeoutMs")
    if timeout is None and config.get("timeoutSec") is not None:
        seconds = config["timeoutSec"]
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
            raise ValidationError("'timeoutSec' must be a positive number of seconds", details={"timeoutSec": seconds})
        timeout = int(seconds * 1000)
    if timeout:
        payload["timeoutMs"] = int(timeout)
    schema = config.get("resumeSchema")
    if isinstance(schema, dict) and ("type" in schema or "properties" in schema or "$schema" in schema):
        payload["resumeSchema"] = schema
    return payload


def check_approval(node: NodeSpec) -> list[str]:
    """The gate's config must produce a valid approval payload."""
    config = thaw(node.config)
    problems = []
    try:
        kinds.normalize_payload(approval_payload(node, config, {}), "check")
    except ValidationError as exc:
        problems += [str(p) for p in (exc.details or {}).get("problems", [exc.message])]
    override = config.get("override")
    if override is not None and not (isinstance(override, dict) and override.get("requiredRole")):
        problems.append("override needs a requiredRole")
    return problems


async def approval_gate(ctx: NodeContext) -> dict[str, Any]:
    """Waits for an approval (quorum, roles and override per config); fails when not accepted."""
    payload = approval_payload(ctx.node, ctx.config, ctx.inputs)
    try:
        value = await ctx.interrupt(payload)
    except InterruptTimeoutError as exc:
        raise ApprovalRejectedError(
            "the approval timed out and was rejected (a timeout never approves)",
            details={"action": "timeout", "decision": "rejected", "reason": "timeout"},
        ) from exc
    action = value.get("action")
    if action in ("accept", "edit-accept"):
        outputs: dict[str, Any] = {
            "approved": True,
            "action": action,
            "decidedBy": value.get("decidedBy"),
            "decidedAt": value.get("decidedAt"),
            "artifactData": value.get("editedArtifactData", payload["data"].get("artifactData")),
        }
        for name in ("feedback", "votes", "quorum"):
            if name in value:
                outputs[name] = value[name]
        return outputs
    details: dict[str, Any] = {"action": action, "decidedBy": value.get("decidedBy")}
    for name in ("feedback", "refineFeedback", "reason", "votes"):
        if name in value:
            details[name] = value[name]
    verb = "sent back for changes" if action == "refine" else "rejected"
    raise ApprovalRejectedError(f"the approval was {verb} by {value.get('decidedBy')}", details=details)


def clarification_payload(config: dict[str, Any]) -> dict[str, Any]:
    """The ``clarification`` InterruptPayload for a gate node."""
    questions = config.get("questions")
    if not questions and config.get("question"):
        questions = [{"id": "q1", "question": config["question"]}]
    data: dict[str, Any] = {"questions": questions or []}
    if config.get("contextType"):
        data["contextType"] = config["contextType"]
    payload = kinds.CLARIFICATION.payload(data)
    if config.get("timeoutMs"):
        payload["timeoutMs"] = int(config["timeoutMs"])
    return payload


def check_clarification(node: NodeSpec) -> list[str]:
    """The gate needs at least one well-formed question."""
    try:
        kinds.normalize_payload(clarification_payload(thaw(node.config)), "check")
    except ValidationError as exc:
        return [str(p) for p in (exc.details or {}).get("problems", [exc.message])]
    return []


async def clarification_gate(ctx: NodeContext) -> dict[str, Any]:
    """Asks its questions; outputs ``{answers: {questionId: answer}}``."""
    value = await ctx.interrupt(clarification_payload(ctx.config))
    return {"answers": {a["id"]: a["answer"] for a in value["answers"]}}
