r"""A support supervisor that routes tickets and asks a person when it is unsure.

    ./scripts/serve --port 8001 --db ./openwop-bridge-graphs.db --graph support=examples.supervisor_graph:build
    .venv/bin/python examples/agui_terminal.py --url http://127.0.0.1:8001 --key owb_dev_... \
        --workflow support --message "My order is late"

The supervisor asks a (scripted, offline) chat model where a ticket should go
and how sure it is. Below the run's threshold (0.7 unless the run sets
``configurable.escalationThreshold``) the decision waits for a person, who
sees the proposed route and the confidence, and ratifies it or sends a corrected
one — from the AG-UI client, the inbox, or
``POST /v1/runs/{runId}/interrupts/{nodeId}``. The same graph also runs under
plain LangGraph.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from openwop_bridge.langgraph import escalate_if_low_confidence
from openwop_bridge.langgraph.scripted import ScriptedChatModel


def _classify(messages: list[BaseMessage]) -> str:
    """What the scripted model 'thinks': keywords decide, anything else is a guess."""
    text = str(messages[-1].content).lower() if messages else ""
    if "refund" in text or "invoice" in text:
        return json.dumps({"route": "billing", "confidence": 0.93})
    if "error" in text or "crash" in text:
        return json.dumps({"route": "tech", "confidence": 0.88})
    return json.dumps({"route": "billing", "confidence": 0.45})


ROUTES = ("billing", "tech")

# What a person may answer when asked to ratify: the decision itself, with a known route.
# Anything else is refused (400) and the question stays open.
DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Ratified decision",
    "required": ["route"],
    "properties": {"route": {"enum": list(ROUTES), "title": "Route"}},
    "additionalProperties": False,
}


class Ticket(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]
    route: str
    confidence: float


def build() -> Any:
    """The compiled supervisor graph."""
    model = ScriptedChatModel(replies=[_classify] * 1000)

    def supervisor(state: Ticket) -> Ticket:
        guess = json.loads(str(model.invoke(state.get("messages") or []).content))
        decision = escalate_if_low_confidence(
            "host:support-supervisor", {"route": guess["route"]}, guess["confidence"], resume_schema=DECISION_SCHEMA
        )
        return {"route": decision["route"], "confidence": guess["confidence"]}

    def billing(state: Ticket) -> Ticket:
        return {"messages": [AIMessage(content="Billing here: I have opened a refund review for you.")]}

    def tech(state: Ticket) -> Ticket:
        return {"messages": [AIMessage(content="Support engineering here: we are looking at the error.")]}

    graph = StateGraph(Ticket)
    graph.add_node("supervisor", supervisor)
    graph.add_node("billing", billing)
    graph.add_node("tech", tech)
    graph.add_edge(START, "supervisor")
    graph.add_conditional_edges("supervisor", lambda s: s["route"], {route: route for route in ROUTES})
    graph.add_edge("billing", END)
    graph.add_edge("tech", END)
    return graph.compile()
