"""Serving compiled graphs as OpenWOP workflows: the Python API behind ``--graph``."""

from __future__ import annotations

from typing import Any

from openwop_bridge import Engine, NodeType, WorkflowDefinition, load_workflow
from openwop_bridge.langgraph import payloads
from openwop_bridge.langgraph.chat import ChatNode
from openwop_bridge.langgraph.checkpoints import Checkpoints, saver_location
from openwop_bridge.langgraph.runner import GraphNode, InputMapper, default_input


def _store_location(engine: Engine) -> str:
    location = engine.store_location
    if location == ":memory:":
        raise ValueError("give GraphWorkflows a db location or a checkpointer for an in-memory store")
    return location


class GraphWorkflows:
    """Compiled graphs served by an engine, with one checkpointer the adapter owns.

    ``checkpointer`` defaults to a SQLite saver beside the host's SQLite file, or a
    PostgreSQL saver on the host's PostgreSQL database.
    """

    def __init__(self, engine: Engine, *, db: str | None = None, checkpointer: Any = None) -> None:
        self.engine = engine
        # Tool-call reviews are answered in HITL decisions; the engine checks them before accepting.
        engine.answer_checks[payloads.ANSWER_CHECK] = payloads.check_tool_review
        location = None if checkpointer is not None else saver_location(db or _store_location(engine))
        self.checkpoints = Checkpoints(location, checkpointer)

    def _register(
        self, workflow_id: str, run: Any, *, name: str | None, description: str, conversation: bool
    ) -> WorkflowDefinition:
        type_id = f"langgraph.{workflow_id}"
        self.engine.node_types.add(
            NodeType(type_id, run, uses_conversation=conversation, description=description, replayable=False)
        )
        document = {
            "id": workflow_id,
            "name": name or workflow_id,
            "version": "1.0",
            "description": description,
            "nodes": [
                {
                    "id": "graph",
                    "typeId": type_id,
                    "name": name or workflow_id,
                    "position": {"x": 0, "y": 0},
                    "config": {},
                    "inputs": {},
                }
            ],
            "edges": [],
            "triggers": [{"id": "manual", "type": "manual", "enabled": True}],
            "variables": [],
            "metadata": {"tags": ["langgraph"]},
            "settings": {"timeout": 0},
        }
        workflow = load_workflow(document)
        self.engine.add_workflow(workflow)
        return workflow

    def add(
        self,
        workflow_id: str,
        graph: Any,
        *,
        name: str | None = None,
        description: str = "",
        input_mapper: InputMapper = default_input,
    ) -> WorkflowDefinition:
        """Serve a compiled graph (``StateGraph(...).compile()``, ``create_agent(...)``) as a workflow.

        The run's inputs become the graph's input (``messages`` in LangChain form).
        """
        node = GraphNode(graph, self.checkpoints, input_mapper)
        return self._register(
            workflow_id, node, name=name, description=description or "A LangGraph graph", conversation=True
        )

    def add_chat(
        self,
        workflow_id: str,
        agent: Any,
        *,
        greeting: str = "Hello! How can I help?",
        title: str | None = None,
        close_marker: str = "[done]",
        max_turns: int | None = None,
        name: str | None = None,
        description: str = "",
    ) -> WorkflowDefinition:
        """Serve a chat agent graph as a conversation with a person (see :mod:`openwop_bridge.langgraph.chat`)."""
        node = ChatNode(agent, self.checkpoints, greeting, title, close_marker, max_turns)
        return self._register(
            workflow_id,
            node,
            name=name,
            description=description or "A conversation with a chat agent",
            conversation=True,
        )

    async def close(self) -> None:
        """Close the checkpointer (when this object opened it)."""
        await self.checkpoints.close()

    async def __aenter__(self) -> GraphWorkflows:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()
