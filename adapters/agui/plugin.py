"""``openwop-bridge serve`` plugin: mount the AG-UI routes unless ``--no-agui``."""

from __future__ import annotations

from adapters.agui import agui_routes
from adapters.agui.openapi import agui_openapi
from bridge.host import ServerBuild


def install(build: ServerBuild) -> None:
    """Add ``/agui/{workflowId}`` for every workflow the server loads, and document it."""
    if build.claim("no_agui"):
        return
    build.routes.extend(agui_routes(build.engine))
    build.openapi.append(agui_openapi())
