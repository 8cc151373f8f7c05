"""Writing workflows in Python.

>>> wf = Workflow("expense-approval")
>>> @wf.node("review")
... async def review(ctx):
...     answer = await ctx.interrupt(approval("Approve the expense?"))
...     return {"action": answer["action"]}
>>> @wf.node("pay", after="review")
... async def pay(ctx):
...     return {"paid": True}

``wf.register(engine)`` adds the node functions (as ``local.<workflow>.<node>``
types) and the workflow to an engine. ``wf.definition()`` is the plain OpenWOP
JSON document, valid under the official schema, for nodes that use existing
types (``type_id="core.approvalGate"``, …).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from openwop_bridge.core.workflow import WorkflowDefinition, load_workflow
from openwop_bridge.runtime.nodes.base import NodeFunction, NodeType

if TYPE_CHECKING:
    from openwop_bridge.runtime.engine import Engine


class Workflow:
    """A workflow assembled in Python; see the module docstring."""

    def __init__(
        self,
        workflow_id: str,
        name: str | None = None,
        *,
        description: str = "",
        variables: Sequence[Mapping[str, Any]] = (),
        channels: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        self.id = workflow_id
        self.name = name or workflow_id
        self.description = description
        self.variables = [dict(v) for v in variables]
        self.channels = dict(channels) if channels else None
        self.settings = dict(settings or {"timeout": 0})
        self._nodes: list[dict[str, Any]] = []
        self._edges: list[dict[str, Any]] = []
        self._functions: dict[str, NodeFunction] = {}
        self._conversational: set[str] = set()

    def node(
        self,
        node_id: str,
        fn: NodeFunction | None = None,
        *,
        type_id: str | None = None,
        name: str | None = None,
        config: Mapping[str, Any] | None = None,
        inputs: Mapping[str, Any] | None = None,
        after: str | Sequence[str] | None = None,
        trigger_rule: str = "all_success",
        agent: Mapping[str, Any] | None = None,
        conversation: bool = False,
    ) -> Any:
        """Add a node: a Python function (decorator form) or an existing ``type_id``.

        ``after`` adds edges from the named nodes with ``trigger_rule``. Set
        ``conversation=True`` on a function that calls ``ctx.conversation()``: a host
        without the conversation primitive then refuses the workflow at run creation
        (an undeclared one fails the run when it first opens a conversation).
        """

        def add(function: NodeFunction | None) -> NodeFunction | None:
            resolved_type = type_id or f"local.{self.id}.{node_id}"
            node: dict[str, Any] = {
                "id": node_id,
                "typeId": resolved_type,
                "name": name or node_id,
                "position": {"x": 200 * len(self._nodes), "y": 0},
                "config": dict(config or {}),
                "inputs": dict(inputs or {}),
            }
            if agent:
                node["agent"] = dict(agent)
            self._nodes.append(node)
            if function is not None:
                self._functions[resolved_type] = function
                if conversation:
                    self._conversational.add(resolved_type)
            for source in [after] if isinstance(after, str) else list(after or []):
                self.edge(source, node_id, trigger_rule=trigger_rule)
            return function

        if fn is not None or type_id is not None:
            add(fn)
            return fn

        def decorator(function: NodeFunction) -> NodeFunction:
            add(function)
            return function

        return decorator

    def edge(
        self, source: str, target: str, *, trigger_rule: str = "all_success", condition: Mapping[str, Any] | None = None
    ) -> None:
        """Connect two nodes."""
        edge: dict[str, Any] = {
            "id": f"{source}->{target}#{len(self._edges)}",
            "sourceNodeId": source,
            "targetNodeId": target,
            "triggerRule": trigger_rule,
        }
        if condition:
            edge["condition"] = dict(condition)
        self._edges.append(edge)

    def definition(self) -> dict[str, Any]:
        """The OpenWOP workflow document."""
        doc: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "version": "1.0",
            "description": self.description,
            "nodes": self._nodes,
            "edges": self._edges,
            "triggers": [{"id": "manual", "type": "manual", "enabled": True}],
            "variables": self.variables,
            "metadata": {"tags": ["python"]},
            "settings": self.settings,
        }
        if self.channels:
            doc["channels"] = self.channels
        return doc

    def node_types(self, *, uses_conversation: Callable[[str], bool] | None = None) -> list[NodeType]:
        """The Python node functions as node types (``uses_conversation`` adds to the declared ones)."""
        return [
            NodeType(
                type_id,
                fn,
                uses_conversation=type_id in self._conversational
                or bool(uses_conversation and uses_conversation(type_id)),
            )
            for type_id, fn in self._functions.items()
        ]

    def register(self, engine: Engine) -> WorkflowDefinition:
        """Add the node functions and the workflow to an engine."""
        for node_type in self.node_types():
            engine.node_types.add(node_type)
        loaded = load_workflow(self.definition())
        engine.add_workflow(loaded)
        return loaded
