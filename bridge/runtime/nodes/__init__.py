"""Node types: the registry and the core types every host offers."""

from __future__ import annotations

from openwop_bridge.runtime.nodes import agents, conversation_gate, core, gates, subworkflow, tool_call
from openwop_bridge.runtime.nodes.base import NodeRegistry, NodeResult, NodeType


def default_registry() -> NodeRegistry:
    """A registry with every core node type this host implements."""
    return NodeRegistry(
        [
            NodeType("core.noop", core.noop, description="Does nothing; passes inputs through.", starts_at_once=True),
            NodeType("core.delay", core.delay, description="Waits delayMs milliseconds."),
            NodeType(
                "core.interrupt",
                core.interrupt,
                core.check_interrupt,
                description="Raises one interrupt.",
                starts_at_once=True,
            ),
            NodeType(
                "core.approvalGate",
                gates.approval_gate,
                gates.check_approval,
                description="Governed approval.",
                starts_at_once=True,
            ),
            NodeType(
                "core.openwop.governance.approvalGate",  # RFC 0051's name for the same gate
                gates.approval_gate,
                gates.check_approval,
                description="Governed approval (RFC 0051 name of core.approvalGate).",
                starts_at_once=True,
            ),
            NodeType(
                "core.clarificationGate",
                gates.clarification_gate,
                gates.check_clarification,
                description="Asks clarifying questions.",
                starts_at_once=True,
            ),
            NodeType(
                "core.conversationGate",
                conversation_gate.conversation_gate,
                conversation_gate.check_conversation_gate,
                uses_conversation=True,
                description="Holds a multi-turn conversation.",
                resumes_at_last_request=True,
                starts_at_once=True,
            ),
            NodeType(
                "core.subWorkflow",
                subworkflow.subworkflow,
                subworkflow.check_subworkflow,
                description="Runs a child workflow.",
            ),
            NodeType("core.conformance.mock-agent", agents.mock_agent, description="Scripted agent (conformance)."),
            NodeType("core.orchestrator.supervisor", agents.supervisor, description="Supervisor decisions."),
            NodeType("core.dispatch", agents.dispatch, description="Executes supervisor decisions."),
            NodeType(
                "vendor.openwop-bridge.toolCall",
                tool_call.tool_call,
                tool_call.check_tool_call,
                description="A stand-in tool call a person approves or edits first.",
            ),
        ]
    )


__all__ = ["NodeRegistry", "NodeResult", "NodeType", "default_registry"]
