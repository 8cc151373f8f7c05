"""The OpenWOP HTTP host (Starlette + uvicorn)."""

from __future__ import annotations

from openwop_bridge.host.http.app import create_app

__all__ = ["create_app"]
