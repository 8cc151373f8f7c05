"""``openwop-bridge serve`` plugin: serve every workflow as an A2A skill when ``a2a-sdk`` is installed.

The SDK loads on the first request to the A2A routes; discovery and the OpenAPI document need none of it.
"""

from __future__ import annotations

from openwop_bridge.a2a.discovery import a2a_facet
from openwop_bridge.a2a.openapi import a2a_openapi
from openwop_bridge.a2a.routes import a2a_routes
from openwop_bridge.host import ServerBuild


def install(build: ServerBuild) -> None:
    """Add the agent card (naming the identity file's providers) and the JSON-RPC endpoint, document them, and
    add the ``a2a`` block of discovery."""
    build.routes.extend(a2a_routes(build.engine, issuers=build.identity_issuers))
    build.discovery.append(a2a_facet)
    build.openapi.append(a2a_openapi())
