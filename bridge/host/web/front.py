"""The host's front door: ``GET /`` (a landing page for people, a JSON index for clients) and
``GET /docs/`` (an interactive page for the OpenAPI documents the host serves).

The API page is Swagger UI, whose files come with the ``openapi-ui-bundles`` package and are
served from this host: nothing loads from elsewhere, and the pages keep the inbox's
Content-Security-Policy (scripts and styles from this host only, no inline code). It takes the
API key through Swagger UI's own *Authorize* button; the key stays in the tab.
"""

from __future__ import annotations

import html
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from openwop_bridge.core.events import ENGINE_VERSION
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.web.pages import CONTENT_SECURITY_POLICY, STATIC_DIR, Assets, page_headers

#: Where each part of the host lives, for the JSON index and the landing page.
INDEX_LINKS: dict[str, str] = {
    "inbox": "/ui/",
    "apiDocs": "/docs/",
    "discovery": "/.well-known/openwop",
    "openapiV1": "/v1/openapi.json",
    "openapiV2": "/openapi.json",
    "health": "/healthz",
}

_LANDING = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>openwop-bridge</title>
<link rel="stylesheet" href="/ui/static/style.css">
</head>
<body class="front">
<main>
<h1>openwop-bridge <small>{version}</small></h1>
<p>Workflows and agents that wait for people, over OpenWOP, AG-UI, LangGraph, MCP and A2A.</p>
<ul>
{items}
</ul>
</main>
</body>
</html>
"""

_LABELS: dict[str, str] = {
    "inbox": "Inbox: the interrupts waiting on you",
    "apiDocs": "API: try the OpenWOP v1 and v2 operations",
    "discovery": "Discovery document (/.well-known/openwop)",
    "openapiV1": "OpenAPI document, v1",
    "openapiV2": "OpenAPI document, v2",
    "health": "Health",
}


#: The API page's policy: the pages' own, plus the one stylesheet Swagger UI writes into the
#: page itself (allowed by its hash, nothing else inline). A newer Swagger UI with another
#: stylesheet shows up as a refused style in ``tests/browser/test_front_pages.py``.
SWAGGER_UI_STYLE = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='"
DOCS_CONTENT_SECURITY_POLICY = CONTENT_SECURITY_POLICY.replace(
    "style-src 'self'", f"style-src 'self'; style-src-elem 'self' {SWAGGER_UI_STYLE}"
)


def _version() -> str:
    return ENGINE_VERSION.split("/", 1)[-1]


def _wants_html(request: Request) -> bool:
    """A browser asks for HTML first; a client asking for JSON, or for anything, gets the index."""
    accept = request.headers.get("accept", "")
    return "text/html" in accept and "application/json" not in accept.split(",", 1)[0]


def front_routes(*, pages: bool) -> list[BaseRoute]:
    """``GET /`` always; with ``pages`` (the inbox served), the landing page and ``/docs/`` too."""
    links = {k: v for k, v in INDEX_LINKS.items() if pages or k not in ("apiDocs", "inbox")}

    async def index(request: Request) -> Response:
        if pages and _wants_html(request):
            items = "\n".join(
                f'<li><a href="{html.escape(href)}">{html.escape(_LABELS[name])}</a></li>'
                for name, href in links.items()
            )
            body = _LANDING.format(version=html.escape(_version()), items=items)
            return Response(body, media_type="text/html; charset=utf-8", headers=page_headers())
        return JSONResponse(
            {"name": "openwop-bridge", "version": _version(), "links": links},
            headers={"Cache-Control": "no-cache", "Vary": "Accept"},
        )

    routes: list[BaseRoute] = [Route("/", index, methods=["GET"])]
    if pages:
        routes += _docs_routes()
    return routes


def _docs_routes() -> list[BaseRoute]:
    from openapi_ui_bundles import swagger_ui

    async def to_docs(request: Request) -> Response:
        return RedirectResponse("docs/", status_code=308)  # relative: right behind a prefixing proxy too

    async def docs(request: Request) -> Response:
        headers = {**page_headers(), "Content-Security-Policy": DOCS_CONTENT_SECURITY_POLICY}
        return FileResponse(STATIC_DIR / "docs.html", media_type="text/html; charset=utf-8", headers=headers)

    assets: Any = Assets(directory=str(swagger_ui.static_path))
    return [
        Route("/docs", to_docs, methods=["GET"]),
        Route("/docs/", docs, methods=["GET"]),
        Mount("/docs/assets", app=assets, name="docs-assets"),
    ]
