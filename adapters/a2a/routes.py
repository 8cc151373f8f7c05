"""The A2A routes: the public agent card and the JSON-RPC endpoint behind the bridge's API keys."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.routes.common import DefaultServerCallContextBuilder
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from adapters.a2a.card import CARD_PATH, RPC_PATH, agent_card
from adapters.a2a.handler import EngineRequestHandler
from bridge import Engine
from bridge.host import JSONResponse, base_url, principal


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


def a2a_routes(engine: Engine) -> list[BaseRoute]:
    """``GET /.well-known/agent-card.json`` (public) and ``POST /a2a`` (JSON-RPC, a key required)."""
    rpc = create_jsonrpc_routes(EngineRequestHandler(engine), RPC_PATH, context_builder=CallerContext())[0]
    assert isinstance(rpc, Route)
    dispatch = rpc.endpoint
    served_version = _version()

    async def jsonrpc(request: Request) -> Response:
        # The key is checked before the body is read: a request without one is 401 and starts nothing.
        request.state.principal = principal(request)
        response: Response = await dispatch(request)
        return response

    async def card(request: Request) -> Response:
        return JSONResponse(agent_card_to_dict(agent_card(engine, base_url(request), served_version)))

    return [Route(CARD_PATH, card, methods=["GET"]), Route(RPC_PATH, jsonrpc, methods=["POST"])]
