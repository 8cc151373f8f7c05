"""``openwop-bridge serve`` plugin: mount the LangGraph API at ``/langgraph``."""

from __future__ import annotations

from adapters.langgraph_api import langgraph_routes
from adapters.langgraph_api.openapi import langgraph_openapi
from bridge.host import ServerBuild


def install(build: ServerBuild) -> None:
    """Add the LangGraph thread/run API under ``/langgraph``, and document it."""
    build.routes.extend(langgraph_routes(build.engine))
    build.openapi.append(langgraph_openapi())
