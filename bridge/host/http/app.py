"""The HTTP host: a Starlette app over an :class:`~openwop_bridge.runtime.engine.Engine`.

``create_app(engine, keyring)`` returns an ASGI app serving the OpenWOP REST
surface. Extra routes (the AG-UI adapter, the web pages) are mounted with
``extra_routes`` and documented by the OpenAPI fragments passed as ``openapi``.
The app starts and stops the engine in its lifespan.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.datastructures import URL
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from openwop_bridge.core.auth import KeyRing
from openwop_bridge.host.discovery import discovery_document
from openwop_bridge.host.http import budget, interrupts, metrics, runs
from openwop_bridge.host.http.deps import base_url, engine
from openwop_bridge.host.http.headers import ALWAYS
from openwop_bridge.host.http.layer import HostLayer
from openwop_bridge.host.http.openapi import Fragment, openapi_document
from openwop_bridge.host.http.responses import EXCEPTION_HANDLERS, JSONResponse, envelope, store_unavailable
from openwop_bridge.host.http.streams import StreamLimits, StreamSlots
from openwop_bridge.host.v2 import discovery as v2_discovery
from openwop_bridge.host.v2 import openapi as v2_openapi
from openwop_bridge.host.v2 import routes as v2_routes
from openwop_bridge.host.v2 import webhooks as v2_webhooks
from openwop_bridge.host.v2.documents import WebhookWire
from openwop_bridge.notify.webhook.channel import Webhooks, WebhookSettings
from openwop_bridge.runtime.engine import Engine


async def discovery(request: Request) -> Response:
    """``GET /.well-known/openwop``: cacheable, with an ETag honoured by If-None-Match.

    One resource, two representations: ``OpenWOP-Version: 2`` selects the v2 document. Plugins
    add their facets (A2A's agent card, …) to the v1 document.
    """
    major = getattr(request.state, "openwop_major", 1)
    if major == 2:
        doc = v2_discovery.discovery_document(engine(request))
    else:
        doc = discovery_document(engine(request))
        base = base_url(request)
        for fragment in request.app.state.facets:
            doc.update(fragment(base))
    body = orjson.dumps(doc)
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {"Cache-Control": "public, max-age=60", "ETag": etag}
    match = request.headers.get("if-none-match", "")
    if etag in [t.strip() for t in match.split(",")] or match.strip() == "*":
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


async def openapi_json(request: Request) -> Response:
    """``GET /v1/openapi.json``: the document built on the first request (see :func:`create_app`)."""
    body: bytes = request.app.state.openapi()
    return Response(body, media_type="application/json", headers={"Cache-Control": "public, max-age=300"})


async def healthz(request: Request) -> Response:
    """Liveness: 200 once the engine is serving."""
    return JSONResponse({"status": "ok", "instance": engine(request).instance_id})


def one_route_per_path(routes: Sequence[BaseRoute]) -> list[BaseRoute]:
    """Merge the plain function routes that share a path into one route dispatching on the method.

    Starlette answers a wrong method with the first route whose path matches, so
    separate ``GET`` and ``POST`` routes for one path would send ``405`` with an
    ``Allow`` header naming only one of them.
    """
    groups: dict[str, list[Route]] = {}
    for route in routes:
        if type(route) is Route and inspect.iscoroutinefunction(route.endpoint) and route.methods:
            groups.setdefault(route.path, []).append(route)
    merged: list[BaseRoute] = []
    for route in routes:
        group = groups.get(route.path, []) if isinstance(route, Route) else []
        if len(group) < 2 or not any(r is route for r in group):
            merged.append(route)
        elif route is group[0]:
            merged.append(_dispatching_route(group))
    return merged


def _dispatching_route(group: Sequence[Route]) -> Route:
    """One route for ``group`` (same path), calling the endpoint of the request's method."""
    handlers: dict[str, Callable[[Request], Awaitable[Response]]] = {
        method: r.endpoint for r in group for method in r.methods or ()
    }

    async def dispatch(request: Request) -> Response:
        return await handlers[request.method](request)

    return Route(group[0].path, dispatch, methods=sorted(handlers), name=group[0].name)


class HostNames:
    """The host names requests may be for (see :class:`TrustedHosts`)."""

    def __init__(self, allowed: Sequence[str]) -> None:
        self.exact = {h.lower() for h in allowed if not h.startswith("*.")}
        self.suffixes = tuple(h[1:].lower() for h in allowed if h.startswith("*."))

    def allows(self, host: str) -> bool:
        """Whether requests for ``host`` (a bare name or address) are served."""
        return host in self.exact or (bool(self.suffixes) and host.endswith(self.suffixes))

    def refusal(self, scope: Scope) -> Response | None:
        """The 400 envelope for an HTTP request whose ``Host`` is not allowed (None: serve it)."""
        if scope["path"] == "/healthz":
            return None
        host = host_name(scope)
        if self.allows(host):
            return None
        refusal = envelope("validation_error", f"this server does not answer to the host name {host!r}", {"host": host})
        return JSONResponse(refusal, status_code=400, headers=dict(ALWAYS_HEADERS))


#: :data:`~openwop_bridge.host.http.headers.ALWAYS` as response headers.
ALWAYS_HEADERS = {name.decode(): value.decode() for name, value in ALWAYS}


class TrustedHosts:
    """Refuse requests whose ``Host`` is not one of ``allowed`` (400 envelope), so links never carry a forged host.

    Names match exactly (case-insensitive, port ignored); ``*.example.com`` matches
    its subdomains. ``/healthz`` answers to any host: it carries no links, and load
    balancers probe it by address. Starlette's ``TrustedHostMiddleware`` does the same
    check but answers in plain text, outside the OpenWOP error envelope. (The host's own app
    checks in its one layer, :class:`~openwop_bridge.host.http.layer.HostLayer`.)
    """

    def __init__(self, app: ASGIApp, allowed: Sequence[str]) -> None:
        self.app = app
        self.names = HostNames(allowed)

    def allows(self, host: str) -> bool:
        """Whether requests for ``host`` (a bare name or address) are served."""
        return self.names.allows(host)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.names.refusal(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def host_name(scope: Scope) -> str:
    """The host name a request is for, lower-cased, as Starlette's ``URL`` reads it (``Host``, else the server).

    Requests name the same few hosts over and over: the name is parsed once per
    ``Host`` value (the last :data:`HOST_NAMES_KEPT` of them, each at most 255 bytes).
    """
    raw = next((value for name, value in scope["headers"] if name == b"host"), None)
    server = scope.get("server")
    where = tuple(server) if server else None
    if raw is not None and len(raw) > 255:
        return _parse_host_name(raw, where)
    return _known_host_name(raw, where)


#: How many ``Host`` values :func:`host_name` remembers.
HOST_NAMES_KEPT = 64


def _parse_host_name(raw: bytes | None, server: tuple[str, int | None] | None) -> str:
    scope: Scope = {"type": "http", "path": "/", "headers": [] if raw is None else [(b"host", raw)], "server": server}
    return (URL(scope=scope).hostname or "").lower()


_known_host_name = functools.lru_cache(maxsize=HOST_NAMES_KEPT)(_parse_host_name)


def _lifespan(
    engine: Engine,
    manage_engine: bool,
    on_startup: Sequence[Callable[[], Awaitable[Any]]],
    on_shutdown: Sequence[Callable[[], Awaitable[Any]]],
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    """Start (and at the end stop) the engine when ``manage_engine``, around the startup and shutdown hooks."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if manage_engine:
            await engine.start()
        for hook in on_startup:
            await hook()
        try:
            yield
        finally:
            for hook in on_shutdown:
                await hook()
            if manage_engine:
                await engine.stop()

    return lifespan


def create_app(
    engine: Engine,
    keyring: KeyRing,
    *,
    extra_routes: Sequence[BaseRoute] = (),
    public_url: str | None = None,
    keepalive_s: float = 15.0,
    manage_engine: bool = True,
    link_page: Callable[[Request], Awaitable[Response]] | None = None,
    on_startup: Sequence[Callable[[], Awaitable[Any]]] = (),
    on_shutdown: Sequence[Callable[[], Awaitable[Any]]] = (),
    openapi: Sequence[Fragment] = (),
    allowed_hosts: Sequence[str] | None = None,
    facets: Sequence[Callable[[str], Mapping[str, Any]]] = (),
    stream_limits: StreamLimits | None = None,
    pending_response_bytes: int = budget.DEFAULT_BYTES,
    webhooks: WebhookSettings | None = None,
) -> Starlette:
    """The OpenWOP host as an ASGI app.

    ``openapi``: OpenAPI fragments (``{"paths": …, "components": …}``) documenting
    ``extra_routes`` in ``GET /v1/openapi.json`` (a fragment may be a function, called when the
    document is first asked for; ``app.state.openapi()`` and ``app.state.openapi_v2()`` build each
    document's bytes once, on first use). With ``allowed_hosts``, requests for
    any other ``Host`` are refused (see :class:`TrustedHosts`); without, every host is
    served (an embedding app's choice). ``facets``: functions of the absolute base URL
    returning members to add to ``/.well-known/openwop`` (the facets of plugins).
    ``stream_limits``: how many event streams a key and a run may hold, and how much each
    buffers (see :mod:`openwop_bridge.host.http.streams`; the defaults without). ``pending_response_bytes``:
    the most that large answers may hold while their clients take them (:mod:`openwop_bridge.host.http.budget`).
    ``webhooks``: the v2 webhook knobs (``--webhook-*``); the surface is served whatever they are.
    """
    hooks = webhook_surface(engine, webhooks or WebhookSettings())
    lifespan = _lifespan(engine, manage_engine, [*on_startup, hooks.start], [hooks.stop, *on_shutdown])
    routes: list[BaseRoute] = [
        Route("/.well-known/openwop", discovery, methods=["GET"]),
        Route("/v1/openapi.json", openapi_json, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        *runs.routes,
        *interrupts.routes,
        *metrics.routes,
        *v2_routes,
        *v2_webhooks.routes,
        *extra_routes,
    ]
    handlers = dict(EXCEPTION_HANDLERS)
    for transient in engine.transient_errors:
        handlers[transient] = store_unavailable
    names = HostNames(list(allowed_hosts)) if allowed_hosts is not None else None
    middleware = [Middleware(HostLayer, budget=budget.Budget(pending_response_bytes), hosts=names)]
    app = Starlette(
        routes=one_route_per_path(routes), exception_handlers=handlers, lifespan=lifespan, middleware=middleware
    )
    # A path with an empty id (``/v1/runs/``) is not found, not a redirect to the collection, which
    # ``curl -f`` would follow into an empty body; ``/ui`` and ``/docs`` redirect on their own routes.
    app.router.redirect_slashes = False
    fragments, with_page = list(openapi), link_page is not None
    app.state.openapi = functools.cache(lambda: orjson.dumps(openapi_document(fragments, link_page=with_page)))
    app.state.openapi_v2 = functools.cache(lambda: orjson.dumps(v2_openapi.openapi_document()))
    app.state.engine = engine
    app.state.keyring = keyring
    app.state.public_url = public_url
    app.state.keepalive_s = keepalive_s
    app.state.link_page = link_page
    app.state.facets = list(facets)
    app.state.streams = StreamSlots(stream_limits or StreamLimits())
    app.state.webhooks = hooks
    return app


def webhook_surface(engine: Engine, settings: WebhookSettings) -> Webhooks:
    """The engine's webhook deliveries (installed on its outbox once, whatever the number of apps over it)."""
    found = engine.notify.channels.get("webhook")
    if isinstance(found, Webhooks):
        return found
    hooks = Webhooks(engine, settings, WebhookWire())
    hooks.install()
    return hooks
