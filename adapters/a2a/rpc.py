"""The SDK's side of the A2A routes: its JSON-RPC dispatch over the engine, and the card as JSON.

Imported by :mod:`openwop_bridge.a2a.routes` on the first request that needs it, so
that serving starts without the ``a2a`` SDK and ``protobuf``.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Message

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.routes.common import DefaultServerCallContextBuilder
from openwop_bridge import Engine
from openwop_bridge.a2a.card import agent_card
from openwop_bridge.a2a.discovery import RPC_PATH
from openwop_bridge.a2a.handler import EngineRequestHandler


def _version() -> str:
    try:
        return version("openwop-bridge")
    except PackageNotFoundError:
        return "0.0.0"


class CallerContext(DefaultServerCallContextBuilder):
    """The SDK's call context, carrying the caller the endpoint authenticated."""

    def build(self, request: Request) -> ServerCallContext:
        """The default context plus ``state["principal"]``."""
        context = super().build(request)
        context.state["principal"] = request.state.principal
        return context


def _replaying(request: Request, raw: bytes) -> Request:
    """``request`` with its body, already read, offered again to the SDK."""

    async def receive() -> Message:
        return {"type": "http.request", "body": raw, "more_body": False}

    return Request(request.scope, receive)


class A2AServer:
    """The SDK's JSON-RPC endpoint over one engine, and the agent card it serves."""

    def __init__(self, engine: Engine, issuers: Sequence[str] = ()) -> None:
        self.engine = engine
        self.issuers = tuple(issuers)
        rpc = create_jsonrpc_routes(EngineRequestHandler(engine), RPC_PATH, context_builder=CallerContext())[0]
        assert isinstance(rpc, Route)
        self._dispatch = rpc.endpoint
        self.version = _version()

    async def dispatch(self, request: Request, raw: bytes) -> Response:
        """Hand a request whose body was already read (``raw``) to the SDK."""
        response: Response = await self._dispatch(_replaying(request, raw))
        return response

    def card(self, base_url: str) -> dict[str, Any]:
        """The agent card of the bridge at ``base_url``, as JSON."""
        return agent_card_to_dict(agent_card(self.engine, base_url, self.version, self.issuers))
