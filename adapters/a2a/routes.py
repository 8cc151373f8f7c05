"""The A2A routes: the public agent card and the JSON-RPC endpoint behind the bridge's API keys."""

from __future__ import annotations

import contextlib
from importlib.metadata import PackageNotFoundError, version

import orjson
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.routes.common import DefaultServerCallContextBuilder
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Message

from adapters.a2a.card import CARD_PATH, RPC_PATH, agent_card
from adapters.a2a.handler import EngineRequestHandler
from bridge import Engine, ValidationError
from bridge.host import MAX_JSON_DEPTH, JSONResponse, base_url, principal, read_bytes, too_deep


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


def a2a_routes(engine: Engine) -> list[BaseRoute]:
    """``GET /.well-known/agent-card.json`` (public) and ``POST /a2a`` (JSON-RPC, a key required)."""
    rpc = create_jsonrpc_routes(EngineRequestHandler(engine), RPC_PATH, context_builder=CallerContext())[0]
    assert isinstance(rpc, Route)
    dispatch = rpc.endpoint
    served_version = _version()

    async def jsonrpc(request: Request) -> Response:
        # The key is checked before the body is read: a request without one is 401 and starts nothing.
        request.state.principal = principal(request)
        raw = await read_bytes(request)
        if not raw.strip():
            raise ValidationError("a JSON-RPC request body is required")
        with contextlib.suppress(orjson.JSONDecodeError):
            if too_deep(orjson.loads(raw), MAX_JSON_DEPTH):
                raise ValidationError(f"the request body nests more than {MAX_JSON_DEPTH} levels")
        # Anything else the SDK judges (a body that is not JSON is its -32700).
        response: Response = await dispatch(_replaying(request, raw))
        return response

    async def card(request: Request) -> Response:
        return JSONResponse(agent_card_to_dict(agent_card(engine, base_url(request), served_version)))

    return [Route(CARD_PATH, card, methods=["GET"]), Route(RPC_PATH, jsonrpc, methods=["POST"])]
