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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openwop_bridge.langgraph.helpers import (
        ApprovalResult,
        GraphConversation,
        approval,
        clarify,
        conversation,
        escalate_if_low_confidence,
    )
    from openwop_bridge.langgraph.payloads import map_interrupt, resume_for_graph
    from openwop_bridge.langgraph.workflows import GraphWorkflows

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

#: Where each public name lives: imported on first use, so that a server without ``--graph`` never loads
#: LangGraph (nor langchain_core, which it imports).
_HOMES = {
    "ApprovalResult": "helpers",
    "GraphConversation": "helpers",
    "approval": "helpers",
    "clarify": "helpers",
    "conversation": "helpers",
    "escalate_if_low_confidence": "helpers",
    "map_interrupt": "payloads",
    "resume_for_graph": "payloads",
    "GraphWorkflows": "workflows",
}


def __getattr__(name: str) -> Any:
    """The package's public names, imported from their modules on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'openwop_bridge.langgraph' has no attribute {name!r}")
    return getattr(importlib.import_module(f"openwop_bridge.langgraph.{home}"), name)
