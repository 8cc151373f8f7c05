"""``GET /agui/{workflowId}/capabilities``: what the agent (a workflow) can do."""

from __future__ import annotations

from ag_ui.core import AgentCapabilities, HumanInTheLoopCapabilities, IdentityCapabilities
from ag_ui.core.capabilities import TransportCapabilities

from openwop_bridge import Engine, WorkflowDefinition, WorkflowNotFoundError, kinds

_APPROVAL_TYPES = {"core.approvalGate", "core.openwop.governance.approvalGate"}
_CORE_WITHOUT_APPROVALS = {
    "core.noop",
    "core.delay",
    "core.clarificationGate",
    "core.conversationGate",
    "core.conformance.mock-agent",
    "core.orchestrator.supervisor",
}
_INTERRUPTING_CORE = {"core.clarificationGate", "core.conversationGate", "core.orchestrator.supervisor"}


def _hitl(engine: Engine, workflow: WorkflowDefinition, seen: frozenset[str] = frozenset()) -> tuple[bool, bool, bool]:
    """(interrupts possible, approvals possible, edits possible): true only where a node can raise them.

    Nodes written in Python (or served from a graph) may raise any interrupt, so
    they count as all three; the core types are read from their config, and a
    sub-workflow counts as what its child can raise (its interrupts end this
    agent's run too). A dispatch runs workers a model names, so it may raise anything.
    """
    interrupts = approvals = edits = False
    for node in workflow.nodes.values():
        if node.type_id == "core.subWorkflow":
            try:
                child = engine.workflow(str(node.config.get("workflowId")))
            except WorkflowNotFoundError:
                found = (True, True, True)  # loaded later, or elsewhere: it may raise anything
            else:
                found = (False, False, False) if child.id in seen else _hitl(engine, child, seen | {workflow.id})
            interrupts, approvals, edits = interrupts or found[0], approvals or found[1], edits or found[2]
            continue
        if node.type_id in _INTERRUPTING_CORE or node.type_id == "core.interrupt":
            interrupts = True
        if node.type_id in _APPROVAL_TYPES or (
            node.type_id == "core.interrupt" and node.config.get("kind") == kinds.APPROVAL.name
        ):
            actions = (
                node.config.get("actions") or (node.config.get("data") or {}).get("actions") or ["accept", "reject"]
            )
            interrupts = approvals = True
            edits = edits or any(a in ("edit-accept", "edit") for a in actions)
        elif node.type_id == "vendor.openwop-bridge.toolCall":
            interrupts = approvals = True
            edits = edits or node.config.get("allowEdit", True) is not False
        elif node.type_id not in _CORE_WITHOUT_APPROVALS and node.type_id != "core.interrupt":
            interrupts = approvals = edits = True
    return interrupts, approvals, edits


def agent_capabilities(engine: Engine, workflow: WorkflowDefinition) -> AgentCapabilities:
    """The AG-UI ``AgentCapabilities`` of a workflow served by this host."""
    interrupts, approvals, edits = _hitl(engine, workflow)
    return AgentCapabilities(
        identity=IdentityCapabilities(
            name=workflow.name,
            type="openwop-workflow",
            description=str(workflow.raw.get("description", "")) or None,
            version=workflow.version,
            provider="openwop-bridge",
        ),
        # Not resumable in AG-UI's sense (no sequence numbers); a reconnect re-emits instead.
        transport=TransportCapabilities(streaming=True, resumable=False),
        human_in_the_loop=HumanInTheLoopCapabilities(
            supported=interrupts, interrupts=interrupts, approvals=approvals, approve_with_edits=edits
        ),
        custom={"openwop": {"workflowId": workflow.id, "conversation": engine.uses_conversation(workflow)}},
    )
