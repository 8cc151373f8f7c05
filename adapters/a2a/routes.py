"""The A2A routes: the public agent card and the JSON-RPC endpoint behind the bridge's API keys.

The ``a2a`` SDK (and ``protobuf``) is imported on the first request that needs it
(:mod:`openwop_bridge.a2a.rpc`), so a server that never answers A2A never loads it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from openwop_bridge import Engine, ValidationError
from openwop_bridge.a2a.discovery import CARD_PATH, RPC_PATH
from openwop_bridge.host import MAX_JSON_DEPTH, JSONResponse, base_url, guarded_stream, principal, read_bytes, too_deep

if TYPE_CHECKING:
    from openwop_bridge.a2a.rpc import A2AServer


def a2a_routes(engine: Engine, *, issuers: Sequence[str] = ()) -> list[BaseRoute]:
    """``GET /.well-known/agent-card.json`` (public) and ``POST /a2a`` (JSON-RPC, a key or a token of one of
    ``issuers``, the identity providers the card names, required)."""
    built: list[A2AServer] = []

    def server() -> A2AServer:
        if not built:
            from openwop_bridge.a2a.rpc import A2AServer

            built.append(A2AServer(engine, issuers))
        return built[0]

    async def jsonrpc(request: Request) -> Response:
        # The key is checked before the body is read: a request without one is 401 and starts nothing.
        who = request.state.principal = principal(request)
        raw = await read_bytes(request)
        if not raw.strip():
            raise ValidationError("a JSON-RPC request body is required")
        call: object = None
        with contextlib.suppress(orjson.JSONDecodeError):
            call = orjson.loads(raw)
            if too_deep(call, MAX_JSON_DEPTH):
                raise ValidationError(f"the request body nests more than {MAX_JSON_DEPTH} levels")
        streaming, task_id = _stream_of(call)
        if not streaming:
            # Anything else the SDK judges (a body that is not JSON is its -32700).
            return await server().dispatch(request, raw)
        # A streaming method holds a stream's place (429 beyond the limits) from before it starts.
        return await guarded_stream(request, who, task_id, lambda: server().dispatch(request, raw))

    async def card(request: Request) -> Response:
        return JSONResponse(server().card(base_url(request)))

    return [Route(CARD_PATH, card, methods=["GET"]), Route(RPC_PATH, jsonrpc, methods=["POST"])]


#: The JSON-RPC methods answered with a stream.
STREAMING_METHODS = frozenset({"SendStreamingMessage", "SubscribeToTask"})


def _stream_of(call: object) -> tuple[bool, str | None]:
    """Whether a JSON-RPC call asks for a stream, and the task it follows when it names one."""
    if not isinstance(call, dict) or call.get("method") not in STREAMING_METHODS:
        return False, None
    params = call.get("params")
    params = params if isinstance(params, dict) else {}
    if call["method"] == "SubscribeToTask":
        task = params.get("id")
    else:
        message = params.get("message")
        task = message.get("taskId") if isinstance(message, dict) else None
    return True, task if isinstance(task, str) and task else None
