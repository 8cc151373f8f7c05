"""LangGraph adapter: graphs that call ``interrupt()`` pause through OpenWOP.

``GraphWorkflows(engine).add("review", graph)`` (or ``serve --graph
review=module:graph``) serves a compiled graph as an OpenWOP workflow — over the
REST surface and, through the engine, as an AG-UI agent. Each LangGraph
interrupt becomes a typed OpenWOP interrupt; answers go back as
``Command(resume={interrupt_id: value})`` under strict resume. The helpers
(``approval``, ``clarify``, ``escalate_if_low_confidence``, ``conversation``)
give graph authors typed kinds that also run under plain LangGraph.
"""

from __future__ import annotations

from adapters.langgraph.helpers import (
    ApprovalResult,
    GraphConversation,
    approval,
    clarify,
    conversation,
    escalate_if_low_confidence,
)
from adapters.langgraph.payloads import map_interrupt, resume_for_graph
from adapters.langgraph.workflows import GraphWorkflows

__all__ = [
    "ApprovalResult",
    "GraphConversation",
    "GraphWorkflows",
    "approval",
    "clarify",
    "conversation",
    "escalate_if_low_confidence",
    "map_interrupt",
    "resume_for_graph",
]
