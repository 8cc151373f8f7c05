"""``GET /agui/{workflowId}/capabilities``: what the agent (a workflow) can do."""

from __future__ import annotations

from ag_ui.core import AgentCapabilities, HumanInTheLoopCapabilities, IdentityCapabilities
from ag_ui.core.capabilities import TransportCapabilities

from bridge.engine import Engine
from bridge.workflow import WorkflowDefinition

_APPROVAL_TYPES = {"core.approvalGate"}
_CORE_WITHOUT_APPROVALS = {
    "core.noop",
    "core.delay",
    "core.clarificationGate",
    "core.conversationGate",
    "core.subWorkflow",
    "core.conformance.mock-agent",
    "core.orchestrator.supervisor",
    "core.dispatch",
}


def _approval_actions(workflow: WorkflowDefinition) -> tuple[bool, bool]:
    """(approvals possible, edits possible): true only where a node can raise them.

    Nodes written in Python (or served from a graph) may raise any interrupt, so
    they count as both; the core types are read from their config.
    """
    approvals = edits = False
    for node in workflow.nodes.values():
        if node.type_id in _APPROVAL_TYPES or (
            node.type_id == "core.interrupt" and node.config.get("kind") == "approval"
        ):
            actions = (
                node.config.get("actions") or (node.config.get("data") or {}).get("actions") or ["accept", "reject"]
            )
            approvals = True
            edits = edits or any(a in ("edit-accept", "edit") for a in actions)
        elif node.type_id == "vendor.openwop-bridge.toolCall":
            approvals = True
            edits = edits or node.config.get("allowEdit", True) is not False
        elif node.type_id not in _CORE_WITHOUT_APPROVALS and node.type_id != "core.interrupt":
            approvals = edits = True
    return approvals, edits


def agent_capabilities(engine: Engine, workflow: WorkflowDefinition) -> AgentCapabilities:
    """The AG-UI ``AgentCapabilities`` of a workflow served by this host."""
    approvals, edits = _approval_actions(workflow)
    return AgentCapabilities(
        identity=IdentityCapabilities(
            name=workflow.name,
            type="openwop-workflow",
            description=str(workflow.raw.get("description", "")) or None,
            version=workflow.version,
            provider="openwop-bridge",
        ),
        transport=TransportCapabilities(streaming=True, resumable=True),
        human_in_the_loop=HumanInTheLoopCapabilities(
            supported=True, interrupts=True, approvals=approvals, approve_with_edits=edits
        ),
        custom={"openwop": {"workflowId": workflow.id, "conversation": engine.uses_conversation(workflow)}},
    )
