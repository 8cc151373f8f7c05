"""Real LangGraph graphs used by the tests (also loadable with ``serve --graph ID=tests.graphs:NAME``)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Send, interrupt
from pydantic import BaseModel

from openwop_bridge.langgraph import approval, clarify, conversation, escalate_if_low_confidence
from openwop_bridge.langgraph.scripted import ScriptedChatModel


class Doc(TypedDict, total=False):
    text: str
    decision: str
    decided_by: str
    answers: dict[str, Any]


def _one_node(state: Any, name: str, node: Any) -> Any:
    """A compiled graph of one node: START → ``name`` → END."""
    g = StateGraph(state)
    g.add_node(name, node)
    g.add_edge(START, name)
    g.add_edge(name, END)
    return g.compile()


def approve_graph(*, separation_of_duties: bool | None = None) -> Any:
    """draft → review (helper approval) → publish."""

    def review(state: Doc) -> Doc:
        result = approval(
            "Publish the post?",
            actions=["accept", "reject", "edit-accept"],
            artifact={"text": state.get("text", "")},
            separation_of_duties=separation_of_duties,
        )
        text = result.edited["text"] if result.action == "edit-accept" else state.get("text", "")
        return {"decision": result.action, "decided_by": result.decided_by or "", "text": text}

    return _one_node(Doc, "review", review)


class Fan(TypedDict, total=False):
    topics: list[str]
    answers: Annotated[list[Any], operator.add]


def fan_out_graph() -> Any:
    """One ``interrupt()`` per topic via ``Send``; a JSON-Schema ``response_schema`` on each."""

    def fan(state: Fan) -> list[Send]:
        return [Send("ask", {"topic": t}) for t in state.get("topics", ["legal", "finance"])]

    def ask(state: dict[str, Any]) -> Fan:
        value = interrupt(
            {"question": f"Sign off {state['topic']}?"},
            response_schema={"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}},
        )
        return {"answers": [{"topic": state["topic"], "ok": value["ok"]}]}

    g = StateGraph(Fan)
    g.add_node("ask", ask)
    g.add_conditional_edges(START, fan, ["ask"])
    g.add_edge("ask", END)
    return g.compile()


def subgraph_graph() -> Any:
    """A parent whose subgraph asks a clarification (it bubbles to the root)."""

    def inner(state: Doc) -> Doc:
        return {"answers": clarify(["Which region?"])}

    return _one_node(Doc, "child", _one_node(Doc, "inner", inner))


class Routing(TypedDict, total=False):
    decision: Any
    confidence: float


def supervisor_graph() -> Any:
    """Routes with a stated confidence; low confidence goes to a person first."""

    def route(state: Routing) -> Routing:
        decision = escalate_if_low_confidence("host:router", {"route": "billing"}, state.get("confidence", 0.4))
        return {"decision": decision}

    return _one_node(Routing, "route", route)


class Chat(TypedDict, total=False):
    replies: list[Any]
    outcome: Any


def conversation_graph() -> Any:
    """Three turns held with the conversation helper, then closed with an outcome."""

    def intake(state: Chat) -> Chat:
        conv = conversation("Trip intake", initial_prompt="Three quick questions.")
        replies = []
        for prompt in ("Where to?", "When?", "How many?"):
            reply = conv.exchange(prompt)
            if conv.closed:
                return {"replies": replies, "outcome": conv.outcome}
            replies.append(reply)
        conv.close({"replies": replies}, reason="goal-reached", message="Thanks, all set.")
        return {"replies": replies, "outcome": {"replies": replies}}

    return _one_node(Chat, "intake", intake)


@tool
def send_email(to: str, subject: str) -> str:
    """Send an e-mail."""
    return f"sent '{subject}' to {to}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def hitl_agent(mode: str = "per_call", *, edits: bool = True) -> Any:
    """``create_agent`` with ``HumanInTheLoopMiddleware`` gating both tools; a scripted model calls them.

    ``send_email`` allows every decision, ``delete_file`` approve and reject; without ``edits``, both only those two.
    """
    model = ScriptedChatModel(
        replies=[
            AIMessage(
                content="Sending it now.",
                tool_calls=[
                    {"id": "call_mail", "name": "send_email", "args": {"to": "all@acme.test", "subject": "Launch"}},
                    {"id": "call_rm", "name": "delete_file", "args": {"path": "/tmp/draft.txt"}},
                ],
            ),
            "All done.",
        ]
    )
    return create_agent(
        model,
        tools=[send_email, delete_file],
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={
                    "send_email": True if edits else {"allowed_decisions": ["approve", "reject"]},
                    "delete_file": {"allowed_decisions": ["approve", "reject"]},
                },
                interrupt_mode=mode,
            )
        ],
    )


def hitl_per_call() -> Any:
    return hitl_agent("per_call")


def hitl_batched() -> Any:
    return hitl_agent("batched")


def chat_agent() -> Any:
    """A chat agent graph: replies from a script, ends with the close marker on the third reply."""
    model = ScriptedChatModel(
        replies=[
            lambda msgs: f"Lisbon it is. When do you leave? (you said: {msgs[-1].content})",
            "How many travellers?",
            "Booked! Have a good trip. [done]",
        ]
    )

    def respond(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    return _one_node(MessagesState, "respond", respond)


def single_question_graph() -> Any:
    """The fan-out graph with one topic: one interrupt with a response_schema."""

    def ask(state: Fan) -> Fan:
        value = interrupt(
            {"question": "Sign off?"},
            response_schema={"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}},
        )
        return {"answers": [{"topic": "only", "ok": value["ok"]}]}

    return _one_node(Fan, "ask", ask)


class Choice(BaseModel):
    """An interrupt value that is not plain JSON."""

    question: str
    options: list[str]


def odd_value_graph() -> Any:
    """One ``interrupt()`` whose value is a pydantic model."""

    def ask(state: Doc) -> Doc:
        return {"text": interrupt(Choice(question="Which plan?", options=["basic", "pro"]))}

    return _one_node(Doc, "ask", ask)


def chat_agent_with_a_gated_tool() -> Any:
    """A chat agent whose first reply calls a tool a person must approve."""
    model = ScriptedChatModel(
        replies=[
            AIMessage(
                content="",
                tool_calls=[
                    {"id": "call_send", "name": "send_email", "args": {"to": "ops@acme.test", "subject": "Hi"}}
                ],
            ),
            "Sent it. Anything else?",
            "Bye! [done]",
        ]
    )
    return create_agent(
        model, tools=[send_email], middleware=[HumanInTheLoopMiddleware(interrupt_on={"send_email": True})]
    )
