"""The ``/mcp`` route: the API key first, then the SDK's transport, built on the first request it lets through.

Nothing here imports the ``mcp`` SDK: a server that never receives an MCP call
never loads it (tens of MiB and most of a second at start-up). The first
authenticated request imports :mod:`openwop_bridge.mcp.server` and starts the SDK's
session manager in a task of its own, which lives until :meth:`McpMount.stop`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from openwop_bridge import BridgeError, Engine
from openwop_bridge.host import JSONResponse, error_headers, guarded_app, read_bytes, replaying

if TYPE_CHECKING:
    from openwop_bridge.mcp.server import McpTransport


class McpMount:
    """The route, with start and stop hooks for the host; the SDK's server is built when first needed."""

    def __init__(self, engine: Engine, *, path: str = "/mcp") -> None:
        self.engine = engine
        self.route = Route(path, self, methods=["GET", "POST", "DELETE"])
        self.transport: McpTransport | None = None
        self._lock = asyncio.Lock()
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Nothing to start before the first request (kept so hosts can wire the hook either way)."""

    async def stop(self) -> None:
        """Close every session and stop the session manager, when it was started."""
        self._stopping.set()
        if self._task is not None:
            await self._task

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The endpoint: the 401 envelope for a missing or wrong key, 413 for a body over the host's limit,
        else the SDK's transport."""
        request = Request(scope, receive)
        try:
            principal = request.app.state.keyring.authenticate(request.headers.get("authorization"))
            if request.method == "POST":
                # The host's limit, not the SDK's (4 MiB): the body is read bounded, then handed on.
                receive = replaying(receive, await read_bytes(request))
        except BridgeError as exc:
            await _refused(exc, scope, receive, send)
            return
        scope["openwop_principal"] = principal
        app = await self._app()
        if request.method != "GET":
            await app(scope, receive, send)
            return
        # ``GET``: the session's stream from server to client, open as long as the client keeps it;
        # it holds one of the key's stream slots meanwhile (429 beyond), like every stream of the host.
        try:
            await guarded_app(app, principal, None, scope, receive, send)
        except BridgeError as exc:
            await _refused(exc, scope, receive, send)

    async def _app(self) -> ASGIApp:
        """The SDK's ASGI app, importing the SDK and starting its session manager the first time."""
        async with self._lock:
            if self.transport is None:
                from openwop_bridge.mcp.server import McpTransport

                transport = McpTransport(self.engine)
                ready = asyncio.Event()
                task = asyncio.create_task(transport.run(ready, self._stopping))
                waiting = asyncio.create_task(ready.wait())
                await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
                if not ready.is_set():
                    waiting.cancel()
                    task.result()  # the start failed: raise its error; the next request tries again
                self.transport, self._task = transport, task
            return self.transport.app


async def _refused(exc: BridgeError, scope: Scope, receive: Receive, send: Send) -> None:
    """The error envelope of ``exc``, with its headers (``Retry-After`` on 429)."""
    await JSONResponse(exc.envelope(), status_code=exc.status, headers=error_headers(exc))(scope, receive, send)
