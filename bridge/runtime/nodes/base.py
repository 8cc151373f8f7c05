"""Node types: what a ``typeId`` does when the executor runs it.

A node type is an async function of a :class:`~openwop_bridge.runtime.context.NodeContext`
returning its outputs (a dict), ``None`` or a :class:`NodeResult` that also
restricts which outgoing edges fire. ``check`` validates a node's config when a
workflow is registered, so mistakes surface before any run starts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openwop_bridge.core.workflow import NodeSpec
    from openwop_bridge.runtime.context import NodeContext

NodeFunction = Callable[["NodeContext"], Awaitable[Any]]
ConfigCheck = Callable[["NodeSpec"], list[str]]


@dataclass(frozen=True, slots=True)
class NodeResult:
    """Outputs plus, optionally, the only outgoing edges (ids or target node ids) to fire."""

    outputs: Mapping[str, Any] = field(default_factory=dict)
    route: Iterable[str] | None = None


@dataclass(frozen=True, slots=True)
class NodeType:
    """A registered node type."""

    type_id: str
    run: NodeFunction
    check: ConfigCheck | None = None
    uses_conversation: bool = False
    description: str = ""
    #: False when re-running the node cannot reproduce its history (it calls out to a
    #: model or a graph of its own): a replay fork of its workflow is refused.
    replayable: bool = True
    #: True when the node's code, run again after an answer, goes on from its last request
    #: (``ctx.skip_requests``) rather than making every earlier one again: its earlier
    #: interrupts are then not loaded before it runs, but read when it asks for them.
    resumes_at_last_request: bool = False
    #: True when the node's code may start in the executor's own turn of the event loop
    #: (:func:`openwop_bridge.runtime.eager.start_eagerly`): until it first waits, it neither takes the
    #: current task (``asyncio.timeout``) nor commits (``ctx.checkpoint``, ``ctx.sleep``, children).
    starts_at_once: bool = False


class NodeRegistry:
    """typeId → :class:`NodeType`."""

    def __init__(self, types: Iterable[NodeType] = ()) -> None:
        self._types: dict[str, NodeType] = {}
        for t in types:
            self.add(t)

    def add(self, node_type: NodeType) -> None:
        """Register (or replace) a node type."""
        self._types[node_type.type_id] = node_type

    def register(
        self,
        type_id: str,
        *,
        check: ConfigCheck | None = None,
        uses_conversation: bool = False,
        description: str = "",
    ) -> Callable[[NodeFunction], NodeFunction]:
        """Decorator: ``@registry.register("vendor.acme.review")``."""

        def wrap(fn: NodeFunction) -> NodeFunction:
            self.add(NodeType(type_id, fn, check, uses_conversation, description or (fn.__doc__ or "").strip()))
            return fn

        return wrap

    def get(self, type_id: str) -> NodeType | None:
        """The type, or None when unknown."""
        return self._types.get(type_id)

    def __contains__(self, type_id: object) -> bool:
        return type_id in self._types

    def type_ids(self) -> list[str]:
        """Every registered typeId."""
        return sorted(self._types)

    def copy(self) -> NodeRegistry:
        """An independent registry with the same types."""
        return NodeRegistry(self._types.values())
