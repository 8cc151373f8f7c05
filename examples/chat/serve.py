"""Serve the chat example: the bridge host with its demo workflows, and the page at ``/chat/``.

    (cd examples/chat && npm ci && npm run build)     # once: bundles @ag-ui/client into dist/chat.js
    .venv/bin/python examples/chat/serve.py          # then open the printed URL, paste the dev key

Every ``openwop-bridge serve`` option works here too (``--port``, ``--db``,
``--api-key`` …); by default the host listens on 127.0.0.1:8000, keeps its state
in ``./openwop-bridge.db`` and prints a dev key with every scope.

The page is static. It is served with the same headers as the operator inbox (a
strict Content-Security-Policy: scripts, styles and connections to this host
only) and talks to ``/agui/{workflowId}`` with the key the person pastes in.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from openwop_bridge import BridgeError
from openwop_bridge.host import build_parser, build_server, configure_logging, page_headers

HERE = Path(__file__).resolve().parent
BUNDLE = HERE / "dist" / "chat.js"
BUILD_HINT = "build it first: cd examples/chat && npm ci && npm run build"

_ASSET_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}


def chat_routes(bundle: Path = BUNDLE) -> list[BaseRoute]:
    """``/chat/`` (the page), its stylesheet and script; nothing else from this folder is served."""
    if not bundle.is_file():
        raise FileNotFoundError(f"the chat page's script {bundle} is missing; {BUILD_HINT}")

    async def page(request: Request) -> Response:
        return FileResponse(HERE / "index.html", media_type="text/html; charset=utf-8", headers=page_headers())

    async def to_page(request: Request) -> Response:
        return RedirectResponse("chat/", status_code=308)  # relative: right behind a prefixing proxy too

    def asset(path: Path, media_type: str) -> Any:
        async def serve(request: Request) -> Response:
            return FileResponse(path, media_type=media_type, headers=_ASSET_HEADERS)

        return serve

    return [
        Route("/chat", to_page, methods=["GET"]),
        Route("/chat/", page, methods=["GET"]),
        Route("/chat/style.css", asset(HERE / "style.css", "text/css; charset=utf-8"), methods=["GET"]),
        Route("/chat/chat.js", asset(bundle, "text/javascript; charset=utf-8"), methods=["GET"]),
    ]


def build_app(argv: Sequence[str] = ()) -> tuple[Any, argparse.Namespace, str]:
    """The host as ``openwop-bridge serve`` builds it (``argv`` are its options), plus the
    chat page; returns the ASGI app, the parsed options and the page's URL."""
    args = build_parser().parse_args(["serve", *argv])
    app, _engine, _ring, _banner = build_server(args)
    app.router.routes.extend(chat_routes())
    url = f"{args.public_url or f'http://{args.host}:{args.port}'}".rstrip("/") + "/chat/"
    started = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(asgi: Any) -> AsyncIterator[Any]:
        async with started(asgi) as state:
            # After the host's own banner, which prints the dev key to paste.
            print(f"  chat     : {url}", flush=True)
            yield state

    app.router.lifespan_context = lifespan
    return app, args, url


def main(argv: Sequence[str] | None = None) -> int:
    """Run the host and the chat page under uvicorn until interrupted."""
    import uvicorn

    try:
        app, args, _url = build_app(sys.argv[1:] if argv is None else argv)
        # A database another server holds is refused in one line, before anything starts.
        app.state.engine.store.reserve()
    except (FileNotFoundError, BridgeError, RuntimeError) as exc:
        print(f"serve.py: {exc}", file=sys.stderr)
        return 1
    configure_logging(args.log_level, args.log_format)
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level.lower(),
        access_log=False,
        lifespan="on",
        log_config=None,
    )
    uvicorn.Server(config).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
