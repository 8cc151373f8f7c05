"""The HTTP host: a Starlette app over an :class:`~openwop_bridge.runtime.engine.Engine`.

``create_app(engine, keyring)`` returns an ASGI app serving the OpenWOP REST
surface: the route tables of v1 (:mod:`openwop_bridge.host.v1.api`) and v2
(:mod:`openwop_bridge.host.v2.api`) side by side, over the shared HTTP layer
(:mod:`openwop_bridge.host.http`). Extra routes (the AG-UI adapter, the web pages)
are mounted with ``extra_routes`` and documented by the OpenAPI fragments passed as
``openapi``. The app starts and stops the engine in its lifespan.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from openwop_bridge.core.auth import KeyRing
from openwop_bridge.host.http import budget
from openwop_bridge.host.http.hosts import HostNames
from openwop_bridge.host.http.openapi import Fragment
from openwop_bridge.host.http.responses import EXCEPTION_HANDLERS, store_unavailable
from openwop_bridge.host.http.routing import one_route_per_path
from openwop_bridge.host.http.routing import routes as routes_of
from openwop_bridge.host.http.streams import StreamLimits, StreamSlots
from openwop_bridge.host.layer import HostLayer
from openwop_bridge.host.v1 import api as v1
from openwop_bridge.host.v2 import api as v2
from openwop_bridge.host.v2.api import Webhooks, WebhookSettings, WebhookWire
from openwop_bridge.runtime.engine import Engine


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
    layers: Sequence[Middleware] = (),
    auth_lanes: Sequence[Mapping[str, Any]] = (),
) -> Starlette:
    """The OpenWOP host as an ASGI app.

    ``openapi``: OpenAPI fragments (``{"paths": …, "components": …}``) documenting
    ``extra_routes`` in ``GET /v1/openapi.json`` (a fragment may be a function, called when the
    document is first asked for; ``app.state.openapi()`` and ``app.state.openapi_v2()`` build each
    document's bytes once, on first use). With ``allowed_hosts``, requests for
    any other ``Host`` are refused (see :class:`~openwop_bridge.host.http.hosts.HostNames`); without, every host is
    served (an embedding app's choice). ``facets``: functions of the absolute base URL
    returning members to add to ``/.well-known/openwop`` (the facets of plugins).
    ``stream_limits``: how many event streams a key and a run may hold, and how much each
    buffers (see :mod:`openwop_bridge.host.http.streams`; the defaults without). ``pending_response_bytes``:
    the most that large answers may hold while their clients take them (:mod:`openwop_bridge.host.http.budget`).
    ``webhooks``: the v2 webhook knobs (``--webhook-*``); the surface is served whatever they are.
    ``layers``: ASGI middleware inside the host's own layer (the identity providers' bearer tokens);
    ``auth_lanes``: the ``auth.lanes[]`` they add to the v2 discovery document beside the API-key lane.
    """
    hooks = webhook_surface(engine, webhooks or WebhookSettings())
    lifespan = _lifespan(engine, manage_engine, [*on_startup, hooks.start], [hooks.stop, *on_shutdown])
    routes: list[BaseRoute] = [*routes_of(v1.OPERATIONS), *routes_of(v2.OPERATIONS, v2.v2_route), *extra_routes]
    handlers = dict(EXCEPTION_HANDLERS)
    for transient in engine.transient_errors:
        handlers[transient] = store_unavailable
    names = HostNames(list(allowed_hosts)) if allowed_hosts is not None else None
    middleware = [Middleware(HostLayer, budget=budget.Budget(pending_response_bytes), hosts=names), *layers]
    app = Starlette(
        routes=one_route_per_path(routes), exception_handlers=handlers, lifespan=lifespan, middleware=middleware
    )
    # A path with an empty id (``/v1/runs/``) is not found, not a redirect to the collection, which
    # ``curl -f`` would follow into an empty body; ``/ui`` and ``/docs`` redirect on their own routes.
    app.router.redirect_slashes = False
    fragments, with_page = list(openapi), link_page is not None
    app.state.openapi = functools.cache(lambda: orjson.dumps(v1.openapi_document(fragments, link_page=with_page)))
    app.state.openapi_v2 = functools.cache(lambda: orjson.dumps(v2.openapi_document()))
    app.state.discovery_v2 = v2.discovery_document
    app.state.engine = engine
    app.state.keyring = keyring
    app.state.public_url = public_url
    app.state.keepalive_s = keepalive_s
    app.state.link_page = link_page
    app.state.facets = list(facets)
    app.state.auth_lanes = list(auth_lanes)
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
