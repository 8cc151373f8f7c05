"""``GET /metrics``: the engine's Prometheus series as text, for keys with ``metrics:read``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from openwop_bridge.host.http.deps import engine, principal
from openwop_bridge.runtime.metrics import content_type


async def metrics(request: Request) -> Response:
    """The Prometheus text exposition (``openwop_*`` series; see :mod:`openwop_bridge.runtime.metrics`)."""
    principal(request).require("metrics:read")
    body = await engine(request).metrics.scrape()
    return Response(body, media_type=content_type(), headers={"Cache-Control": "no-store"})


routes = [Route("/metrics", metrics, methods=["GET"])]
