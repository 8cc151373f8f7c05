"""``openwop-bridge serve`` plugin: mount the LangGraph API at ``/langgraph``."""

from __future__ import annotations

from openwop_bridge.host import ServerBuild
from openwop_bridge.langgraph_api import langgraph_routes
from openwop_bridge.langgraph_api.openapi import langgraph_openapi


def install(build: ServerBuild) -> None:
    """Add the LangGraph thread/run API under ``/langgraph``, and document it."""
    build.routes.extend(langgraph_routes(build.engine))
    build.openapi.append(langgraph_openapi())
