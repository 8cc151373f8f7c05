"""The bridge as an A2A 1.0 agent: a workflow is a skill, a run is a task, an open interrupt is
``TASK_STATE_INPUT_REQUIRED`` and the next message on the task answers it.

The ``a2a-sdk`` serves the JSON-RPC binding (parsing, dispatch, error codes, SSE) and
its types are the task model; :class:`~openwop_bridge.a2a.handler.EngineRequestHandler`
implements the SDK's request handler over the engine. The routes import the SDK on
their first request; ``agent_card`` imports it when first named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openwop_bridge.a2a.routes import a2a_routes

if TYPE_CHECKING:
    from openwop_bridge.a2a.card import agent_card

__all__ = ["a2a_routes", "agent_card"]


def __getattr__(name: str) -> Any:
    """``agent_card``, imported (with the SDK) when first asked for."""
    if name == "agent_card":
        from openwop_bridge.a2a.card import agent_card

        return agent_card
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
