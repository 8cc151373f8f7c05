"""AG-UI adapter: every workflow the host loaded is an AG-UI 1.0 agent.

``agui_routes(engine)`` serves ``POST /agui/{workflowId}`` and
``GET /agui/{workflowId}/capabilities`` inside the OpenWOP host;
``mount_agui(app, engine, workflow_id, path=…)`` serves one workflow in any
Starlette app. Both use the host's API keys (or the ``authenticate`` callable
given), so answering an interrupt needs ``approvals:respond`` and the key's
principal is ``decidedBy``. The AG-UI models (``ag-ui-protocol``) load with the
first AG-UI request, or with the first use of a name below that needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from openwop_bridge.agui.routes import agui_routes, mount_agui

if TYPE_CHECKING:
    from openwop_bridge.agui.capabilities import agent_capabilities
    from openwop_bridge.agui.endpoint import AguiService
    from openwop_bridge.agui.mapping import interrupt_to_agui, normalize_request, resume_payload_to_value

__all__ = [
    "AguiService",
    "agent_capabilities",
    "agui_routes",
    "interrupt_to_agui",
    "mount_agui",
    "normalize_request",
    "resume_payload_to_value",
]

#: Where each name that needs the AG-UI models lives: imported on first use.
_HOMES = {
    "AguiService": "endpoint",
    "agent_capabilities": "capabilities",
    "interrupt_to_agui": "mapping",
    "normalize_request": "mapping",
    "resume_payload_to_value": "mapping",
}


def __getattr__(name: str) -> Any:
    """The names that need the AG-UI models, imported from their modules on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'openwop_bridge.agui' has no attribute {name!r}")
    return getattr(importlib.import_module(f"openwop_bridge.agui.{home}"), name)
