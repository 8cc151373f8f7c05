"""The LangGraph peer graph: one node that calls ``interrupt()``, then ends with the answer.

The same graph serves ``engine_roundtrip`` (compiled with ``SqliteSaver``, driven
in process) and ``agui_roundtrip`` (compiled with ``AsyncSqliteSaver``, served
by ``ag-ui-langgraph``). LangGraph is an optional dependency: import this
module only when the peer runs.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

#: What the node asks: the same approval the bridge's benchmark workflow asks.
APPROVAL_VALUE = {"title": "Approve expense EXP-1", "actions": ["accept", "reject"]}


class ReviewState(TypedDict, total=False):
    """The graph's state: the decision, once made.

    ``typing_extensions.TypedDict``, because ``ag-ui-langgraph`` derives JSON
    Schemas from the state with pydantic, which refuses ``typing.TypedDict``
    before Python 3.12.
    """

    decision: dict[str, Any]


def review(state: ReviewState) -> ReviewState:
    """Pause for the decision; on resume, store it."""
    return {"decision": interrupt(APPROVAL_VALUE)}


def build_graph(checkpointer: Any) -> Any:
    """The compiled one-interrupt graph."""
    builder = StateGraph(ReviewState)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=checkpointer)


#: The graph ``langgraph dev`` serves (``langgraph_client_roundtrip``): compiled without a
#: checkpointer, since the server attaches its own.
graph = build_graph(None)
