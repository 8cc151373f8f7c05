"""A real webhook receiver on loopback for the tests, and the bridge served with webhooks admitted to loopback."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from openwop_bridge import Engine
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.host.app import create_app
from openwop_bridge.notify.webhook.channel import WebhookSettings
from tests.conftest import KEYS
from tests.server import uvicorn_server


@dataclass
class Received:
    """One request the receiver took."""

    path: str
    headers: dict[str, str]
    body: bytes
    #: The status the receiver answered (0 while it holds the request).
    answered: int = 0

    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass
class Receiver:
    """Records every request; answers each path from its script (status codes, in order), then 200.

    A path under ``/echo`` answers a verification challenge; ``/redirect`` answers ``307`` to ``/target``.
    """

    url: str = ""
    got: list[Received] = field(default_factory=list)
    script: dict[str, list[int]] = field(default_factory=dict)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    #: Paths whose requests are held unanswered until :meth:`release`.
    hold: set[str] = field(default_factory=set)
    released: asyncio.Event = field(default_factory=asyncio.Event)

    def release(self) -> None:
        """Answer the held requests (503) and hold no more."""
        self.hold.clear()
        self.released.set()

    def at(self, path: str) -> list[Received]:
        return [r for r in self.got if r.path == path]

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        path = request.url.path
        got = Received(path, {k.lower(): v for k, v in request.headers.items()}, body)
        self.got.append(got)
        self.arrived.set()
        response = await self._answer(path, body)
        got.answered = response.status_code
        return response

    async def _answer(self, path: str, body: bytes) -> Response:
        if path in self.hold:
            await self.released.wait()
            return Response(status_code=503)
        if path.startswith("/echo"):
            return JSONResponse({"challenge": orjson.loads(body).get("challenge")})
        if path.startswith("/redirect"):
            return Response(status_code=307, headers={"Location": f"{self.url}/target"})
        steps = self.script.get(path, [])
        return Response(status_code=steps.pop(0) if steps else 200)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self.handle, methods=["POST", "GET"])])

    async def wait(self, predicate: Any, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self.arrived.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.arrived.wait(), 0.05)


@contextlib.asynccontextmanager
async def receiver(**options: Any) -> AsyncIterator[Receiver]:
    """A receiver served by uvicorn on 127.0.0.1 (``options`` go to uvicorn's Config: TLS files, say)."""
    rec = Receiver()
    async with uvicorn_server(rec.app(), **options) as url:
        rec.url = url
        yield rec


@contextlib.asynccontextmanager
async def bridge(engine: Engine, settings: WebhookSettings) -> AsyncIterator[httpx.AsyncClient]:
    """The bridge over ``engine`` (started here) on uvicorn, with ``settings``; a client for it."""
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=True, keepalive_s=0.2, webhooks=settings)
    async with uvicorn_server(app) as url, httpx.AsyncClient(base_url=url, timeout=15) as http:
        yield http
