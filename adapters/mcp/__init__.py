"""MCP: every workflow is a tool, and a person's answer arrives through MCP elicitation.

Served with the official ``mcp`` SDK on its streamable HTTP transport at ``/mcp``
(see :mod:`openwop_bridge.mcp.server`; :mod:`openwop_bridge.mcp.mount` loads it on the first request).
"""

from __future__ import annotations

from openwop_bridge.mcp.mount import McpMount

__all__ = ["McpMount"]
