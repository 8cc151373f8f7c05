"""``openwop-bridge serve`` plugin: mount the MCP server at ``POST /mcp`` (the SDK loads on the first call)."""

from __future__ import annotations

from openwop_bridge.host import ServerBuild
from openwop_bridge.mcp.mount import McpMount


def install(build: ServerBuild) -> None:
    """Serve every workflow the server loads as an MCP tool at ``/mcp``."""
    mount = McpMount(build.engine)
    build.routes.append(mount.route)
    build.shutdown.append(mount.stop)
