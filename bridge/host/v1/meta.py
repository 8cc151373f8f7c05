"""The operations about the host itself: discovery, the ``/v1`` OpenAPI document, liveness and metrics.

``GET /.well-known/openwop`` is one resource with a representation per major: ``OpenWOP-Version: 2``
selects the document the app puts in ``app.state.discovery_v2`` (the v2 table documents that
representation; this one serves both).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from openwop_bridge.host.discovery import discovery_document
from openwop_bridge.host.http.deps import base_url, engine
from openwop_bridge.host.http.openapi_ops import error_responses, json_response, schema_ref
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.routing import Operation
from openwop_bridge.runtime.metrics import content_type


async def discovery(request: Request) -> Response:
    """``GET /.well-known/openwop``: cacheable, with an ETag honoured by If-None-Match.

    ``OpenWOP-Version: 2`` selects the v2 document. Plugins add their facets (A2A's agent card, …)
    to the v1 document.
    """
    major = getattr(request.state, "openwop_major", 1)
    if major == 2:
        doc = request.app.state.discovery_v2(engine(request), lanes=request.app.state.auth_lanes)
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
    """``GET /v1/openapi.json``: the document built on the first request (see ``create_app``)."""
    body: bytes = request.app.state.openapi()
    return Response(body, media_type="application/json", headers={"Cache-Control": "public, max-age=300"})


async def healthz(request: Request) -> Response:
    """Liveness: 200 once the engine is serving."""
    return JSONResponse({"status": "ok", "instance": engine(request).instance_id})


async def metrics(request: Request) -> Response:
    """``GET /metrics``: the Prometheus text (``openwop_*`` series; see :mod:`openwop_bridge.runtime.metrics`)."""
    body = await engine(request).metrics.scrape()
    return Response(body, media_type=content_type(), headers={"Cache-Control": "no-store"})


_TAGS = ("discovery",)
_HEALTH: dict[str, Any] = {
    "type": "object",
    "properties": {"status": {"const": "ok"}, "instance": {"type": "string"}},
    "required": ["status", "instance"],
}
_TEXT = {"description": "Prometheus text exposition", "content": {"text/plain": {"schema": {"type": "string"}}}}

#: Discovery, this document and liveness are open to anyone; the metrics need ``metrics:read``.
OPERATIONS = (
    Operation(
        "GET",
        "/.well-known/openwop",
        discovery,
        "Discovery: capabilities of this host",
        {"200": json_response(schema_ref("Capabilities")), "304": {"description": "Not modified"}},
        auth=False,
        tags=_TAGS,
    ),
    Operation(
        "GET",
        "/v1/openapi.json",
        openapi_json,
        "This document",
        {"200": json_response({"type": "object"})},
        auth=False,
        tags=_TAGS,
    ),
    Operation(
        "GET",
        "/healthz",
        healthz,
        "Liveness: 200 once the engine is serving",
        {"200": json_response(_HEALTH)},
        auth=False,
        tags=_TAGS,
    ),
    Operation(
        "GET",
        "/metrics",
        metrics,
        "Prometheus metrics (openwop_* series); needs the metrics:read scope",
        {"200": _TEXT, **error_responses(401, 403, 503)},
        scope="metrics:read",
        tags=_TAGS,
    ),
)
