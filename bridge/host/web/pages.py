"""Routes of the operator inbox: the page, its assets and two small endpoints.

The page itself is static. It signs in with an API key the person pastes (kept
in the tab's ``sessionStorage``, sent only as ``Authorization: Bearer``, never in
a URL), or through the identity provider (:mod:`openwop_bridge.host.web.signin`:
an ``HttpOnly`` session cookie), and calls the OpenWOP endpoints directly, so it
can do nothing the credential could not do with curl. ``/ui/api/me`` tells it whose key it holds;
``/ui/api/inbox/count`` how many requests wait over all pages; ``/ui/api/inbox/for`` which of the
listed approvals the person may answer in someone else's place (a delegation); ``/ui/api/inbox/events``
tells it when to re-read the inbox.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from openwop_bridge.core.auth import SCOPES
from openwop_bridge.core.clock import iso_ms
from openwop_bridge.host.http.deps import engine, principal
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.streams import guarded
from openwop_bridge.host.web.feed import LIFETIME_S, inbox_changes
from openwop_bridge.host.web.passkeys import passkey_routes

STATIC_DIR = Path(__file__).resolve().parent / "static"

#: Pages load scripts, styles and data only from this host, run no inline code
#: and cannot be framed; forms never navigate (they submit through fetch).
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)


def page_headers() -> dict[str, str]:
    """Headers for every HTML page the host serves to people."""
    return {
        "Content-Security-Policy": CONTENT_SECURITY_POLICY,
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }


class Assets(StaticFiles):
    """The pages' scripts and styles, revalidated on every load (their ETag makes that
    cheap) so a browser never mixes the scripts of an older host with a newer one."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers["Cache-Control"] = "no-cache"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


def _inbox_html() -> bytes:
    return (STATIC_DIR / "index.html").read_bytes()


async def inbox_page(request: Request) -> Response:
    """``GET /ui/``: the operator inbox (static; it signs in from the browser)."""
    return Response(_inbox_html(), media_type="text/html; charset=utf-8", headers=page_headers())


async def to_inbox(request: Request) -> Response:
    """``GET /ui``: the inbox lives at ``/ui/`` so its relative asset URLs resolve."""
    # Relative, so it stays right behind a proxy that mounts the host under a prefix.
    return RedirectResponse("ui/", status_code=308)


async def whoami(request: Request) -> Response:
    """``GET /ui/api/me``: the signed-in principal and what its key allows."""
    who = principal(request)
    subject = who.subject
    return JSONResponse(
        {
            "principal": who.id,
            # Who the person is at their identity provider (a token or an inbox session), for display.
            "name": subject.name if subject is not None else None,
            "email": subject.email if subject is not None else None,
            "lane": subject.lane if subject is not None else "api-key",
            "tenant": who.tenant,
            "roles": sorted(who.roles),
            "scopes": [s for s in SCOPES if who.has_scope(s)],
            "canReadInbox": who.has_scope("interrupts:read"),
            "canReadRuns": who.has_scope("runs:read"),
            "canAnswer": who.has_scope("approvals:respond"),
        },
        headers={"Cache-Control": "no-store"},
    )


async def inbox_count(request: Request) -> Response:
    """``GET /ui/api/inbox/count?kind=``: how many requests wait in the caller's inbox, over all its pages."""
    pending = await engine(request).inbox_count(principal(request), kind=request.query_params.get("kind") or None)
    return JSONResponse({"pending": pending}, headers={"Cache-Control": "no-store"})


async def inbox_for(request: Request) -> Response:
    """``GET /ui/api/inbox/for?id=…&id=…``: of the listed approvals, those the caller may answer now in someone
    else's place through a delegation: ``{"items": {interruptId: {"own": whether they may also vote in their
    own slot, "for": [{"delegator", "delegationId", "until"}]}}}`` (an approval they may not, absent)."""
    who = principal(request)
    who.require("interrupts:read")
    found = await engine(request).stand_ins(who, request.query_params.getlist("id"))
    items = {
        record.interrupt_id: {
            "own": await engine(request).may_answer(who, record),
            "for": [
                {"delegator": d.delegator, "delegationId": d.delegation_id, "until": iso_ms(d.until_ms)} for d in made
            ],
        }
        for record, made in found
    }
    return JSONResponse({"items": items}, headers={"Cache-Control": "no-store"})


async def inbox_events(request: Request) -> Response:
    """``GET /ui/api/inbox/events``: ``event: changed`` when the caller's inbox may have changed."""
    who = principal(request)
    who.require("interrupts:read")
    keepalive = min(float(request.app.state.keepalive_s), 15.0)
    stream = StreamingResponse(
        inbox_changes(engine(request), who.tenant, keepalive_s=keepalive, lifetime_s=LIFETIME_S),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
    return guarded(request, who, None, stream)


def web_routes() -> list[BaseRoute]:
    """The inbox page, its assets and its endpoints, to pass as ``create_app(extra_routes=…)``."""
    return [
        Route("/ui", to_inbox, methods=["GET"]),
        Route("/ui/", inbox_page, methods=["GET"]),
        Route("/ui/api/me", whoami, methods=["GET"]),
        Route("/ui/api/inbox/count", inbox_count, methods=["GET"]),
        Route("/ui/api/inbox/for", inbox_for, methods=["GET"]),
        Route("/ui/api/inbox/events", inbox_events, methods=["GET"]),
        *passkey_routes(),
        Mount("/ui/static", app=Assets(directory=STATIC_DIR), name="ui-static"),
    ]
