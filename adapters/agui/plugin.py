"""``openwop-bridge serve`` plugin: mount the AG-UI routes unless ``--no-agui``."""

from __future__ import annotations

from typing import Any

from openwop_bridge.agui.routes import agui_routes
from openwop_bridge.host import ServerBuild


def _documented() -> dict[str, Any]:
    """The routes' OpenAPI fragment, built from the AG-UI models when the document is first asked for."""
    from openwop_bridge.agui.openapi import agui_openapi

    return agui_openapi()


def install(build: ServerBuild) -> None:
    """Add ``/agui/{workflowId}`` for every workflow the server loads, and document it."""
    if build.claim("no_agui"):
        return
    build.routes.extend(agui_routes(build.engine))
    build.openapi.append(_documented)
