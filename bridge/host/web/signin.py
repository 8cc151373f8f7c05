"""Signing in to the inbox through the identity provider: the routes, the cookie, and the ASGI layer reading it.

With an ``inbox`` section in the identity file, ``GET /ui/auth/login`` sends the person to the
provider (:class:`~openwop_bridge.identity.signin.InboxSignIn`), ``GET /ui/auth/callback`` (the
redirect URI registered there) opens a session (:class:`~openwop_bridge.host.web.sessions.InboxSessions`)
and sets its cookie, ``POST /ui/auth/logout`` signs it out.

Cookies are ``HttpOnly``, ``SameSite=Lax`` and ``Path=/``; when the host is served over https (its
public URL, or the request) they are also ``Secure`` and named with the ``__Host-`` prefix. The
sign-in in progress (state, nonce, PKCE verifier) is a sealed cookie of its own that lives ten
minutes, so starting sign-ins stores nothing on the host.

:class:`SessionCookies` is the ASGI layer: on the inbox's endpoints (``/v1/…`` and ``/ui/api/…``)
a request carrying the session cookie and no ``Authorization`` header has its session looked up
before the route runs, and the key ring (:meth:`~openwop_bridge.core.auth.KeyRing.use_sessions`)
hands the principal to the route when it authenticates, so every rule a key or token is held to
applies unchanged. An ``Authorization`` header, when present, wins. A state-changing request
(not GET, HEAD or OPTIONS) authenticated by the cookie is refused with ``403`` unless its
``Origin`` (else its ``Referer``) is the host's own origin and it carries
``X-Requested-With: openwop-inbox``, which only the inbox's own scripts send: a cookie alone
never authorises a cross-site request.
"""

from __future__ import annotations

import contextvars
import html
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from openwop_bridge.core.auth import KeyRing, Principal
from openwop_bridge.core.errors import BridgeError, ForbiddenError
from openwop_bridge.host.http.deps import base_url
from openwop_bridge.host.http.openapi_ops import error_responses, json_response, operation
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.web.pages import page_headers
from openwop_bridge.host.web.sessions import InboxSessions
from openwop_bridge.identity.layer import Identity
from openwop_bridge.identity.signin import LOGIN_TTL_S, InboxSignIn, PendingLogin, SignInError
from openwop_bridge.runtime.engine import Engine

__all__ = [
    "CALLBACK_PATH",
    "CSRF_HEADER",
    "CSRF_VALUE",
    "CrossSiteRequestError",
    "SessionCookies",
    "SignIn",
    "install_sign_in",
    "session_principal",
    "signin_fragment",
    "signin_routes",
]

CALLBACK_PATH = "/ui/auth/callback"
#: The header (and its value) every state-changing request of the inbox sends beside its cookie.
CSRF_HEADER = "x-requested-with"
CSRF_VALUE = "openwop-inbox"
#: The surfaces the session cookie authenticates: what the inbox calls.
_COOKIE_PATHS = ("/v1/", "/ui/api/")
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class CrossSiteRequestError(ForbiddenError):
    """A state-changing request authenticated by the inbox's cookie that does not come from the inbox."""


@dataclass(frozen=True, slots=True)
class SignIn:
    """The inbox's sign-in of one host: the provider's flow, the sessions, the public URL."""

    flow: InboxSignIn
    sessions: InboxSessions
    public_url: str | None = None

    def https(self, request_scheme: str) -> bool:
        """Whether the host is served over https (its cookies are then ``Secure`` and ``__Host-``)."""
        if self.public_url:
            return urlsplit(self.public_url).scheme == "https"
        return request_scheme == "https"

    def cookie(self, name: str, request_scheme: str) -> str:
        """The name of the cookie ``name`` (``__Host-`` prefixed over https)."""
        return f"__Host-{name}" if self.https(request_scheme) else name


#: The session cookie's outcome on the current request: the principal or the refusal, and whether the
#: request may change state with it (None: no session cookie on this request, or an Authorization header).
_SESSION: contextvars.ContextVar[tuple[Principal | BridgeError, bool] | None] = contextvars.ContextVar(
    "openwop_bridge_session", default=None
)


def session_principal() -> Principal | None:
    """The principal of the current request's session cookie (for ``KeyRing.use_sessions``); None without one."""
    found = _SESSION.get()
    if found is None:
        return None
    outcome, allowed = found
    if not allowed:
        raise CrossSiteRequestError(
            "a request that changes something must come from the inbox page itself (its Origin and "
            f"an '{CSRF_HEADER}: {CSRF_VALUE}' header) when it is signed in by the session cookie"
        )
    if isinstance(outcome, BridgeError):
        raise type(outcome)(outcome.message, details=outcome.details)
    return outcome


def _origin(url: str) -> str | None:
    parts = urlsplit(url)
    if not parts.scheme or not parts.hostname:
        return None
    port = parts.port
    default = {"http": 80, "https": 443}.get(parts.scheme)
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    return f"{parts.scheme}://{host}" + ("" if port is None or port == default else f":{port}")


def same_origin(request: Request, public_url: str | None) -> bool:
    """Whether a state-changing request comes from the host's own pages (Origin, else Referer, and the header)."""
    if request.headers.get(CSRF_HEADER) != CSRF_VALUE:
        return False
    claimed = request.headers.get("origin") or request.headers.get("referer")
    if not claimed or claimed == "null":
        return False
    own = _origin(public_url or str(request.base_url))
    return own is not None and _origin(claimed) == own


class SessionCookies:
    """The ASGI layer resolving the session cookie on the inbox's endpoints (see the module's docstring)."""

    def __init__(self, app: ASGIApp, sign_in: SignIn) -> None:
        self.app = app
        self.sign_in = sign_in

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(_COOKIE_PATHS):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        session_id = request.cookies.get(self.sign_in.cookie("owb_session", request.url.scheme))
        if session_id is None or "authorization" in request.headers:
            await self.app(scope, receive, send)
            return
        allowed = request.method in _SAFE_METHODS or same_origin(request, self.sign_in.public_url)
        outcome: Principal | BridgeError
        try:
            outcome = await self.sign_in.sessions.principal(session_id)
        except BridgeError as exc:
            outcome = exc
        reset = _SESSION.set((outcome, allowed))
        try:
            await self.app(scope, receive, send)
        finally:
            _SESSION.reset(reset)


def _set_cookie(response: Response, name: str, value: str, *, max_age: int, secure: bool) -> None:
    response.set_cookie(name, value, max_age=max_age, path="/", secure=secure, httponly=True, samesite="lax")


def _clear_cookie(response: Response, name: str, *, secure: bool) -> None:
    response.delete_cookie(name, path="/", secure=secure, httponly=True, samesite="lax")


def _no_store(response: Response) -> Response:
    response.headers["Cache-Control"] = "no-store"
    return response


_REFUSED_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign-in refused</title>
<link rel="stylesheet" href="../static/style.css">
</head>
<body>
<main class="card sign-in">
<h1>Sign-in refused</h1>
<p class="error">{message}</p>
<p class="muted">{code}</p>
<p><a class="button" href="../">Back to the inbox</a></p>
</main>
</body>
</html>
"""


def _wants_page(request: Request) -> bool:
    """A browser navigating here (HTML first in its Accept) rather than a client asking for JSON."""
    accept = request.headers.get("accept", "")
    return accept.split(",", 1)[0].strip().startswith("text/html")


def _refused(request: Request, exc: BridgeError) -> Response:
    """A refused sign-in: a page saying why to a browser, the OpenWOP envelope to anything else."""
    if not _wants_page(request):
        raise exc
    page = _REFUSED_PAGE.format(message=html.escape(exc.message), code=html.escape(exc.code))
    return HTMLResponse(page, status_code=exc.status, headers=page_headers())


def signin_routes(sign_in: SignIn) -> list[BaseRoute]:
    """``GET /ui/auth/login``, ``GET /ui/auth/callback`` and ``POST /ui/auth/logout``, and
    ``GET /ui/auth/provider`` (the provider's issuer and the name the page shows)."""

    def redirect_uri(request: Request) -> str:
        return base_url(request) + CALLBACK_PATH

    async def login(request: Request) -> Response:
        try:
            url, pending = await sign_in.flow.begin(redirect_uri(request))
        except BridgeError as exc:
            return _refused(request, exc)
        secure = sign_in.https(request.url.scheme)
        response = RedirectResponse(url, status_code=303)
        sealed = pending.seal(await sign_in.sessions.secret())
        _set_cookie(
            response, sign_in.cookie("owb_login", request.url.scheme), sealed, max_age=LOGIN_TTL_S, secure=secure
        )
        return _no_store(response)

    async def callback(request: Request) -> Response:
        name = sign_in.cookie("owb_login", request.url.scheme)
        sealed = request.cookies.get(name)
        try:
            if not sealed:
                raise SignInError("no sign-in is in progress in this browser: start it again")
            pending = PendingLogin.open(sealed, await sign_in.sessions.secret(), time.time())
            principal = await sign_in.flow.finish(pending, dict(request.query_params), redirect_uri(request))
            session_id = await sign_in.sessions.open(principal)
        except BridgeError as exc:
            return _refused(request, exc)
        secure = sign_in.https(request.url.scheme)
        response = RedirectResponse("../", status_code=303)  # /ui/, relative: right behind a prefixing proxy too
        _clear_cookie(response, name, secure=secure)
        max_age = sign_in.sessions.absolute_ms // 1000
        _set_cookie(
            response, sign_in.cookie("owb_session", request.url.scheme), session_id, max_age=max_age, secure=secure
        )
        return _no_store(response)

    async def logout(request: Request) -> Response:
        name = sign_in.cookie("owb_session", request.url.scheme)
        session_id = request.cookies.get(name)
        if session_id is not None:
            if not same_origin(request, sign_in.public_url):
                raise CrossSiteRequestError(
                    f"signing out must come from the inbox page itself (its Origin and '{CSRF_HEADER}: {CSRF_VALUE}')"
                )
            await sign_in.sessions.revoke(session_id)
        response = Response(status_code=204)
        _clear_cookie(response, name, secure=sign_in.https(request.url.scheme))
        return _no_store(response)

    async def provider(request: Request) -> Response:
        """What the inbox page shows on its sign-in button."""
        name = sign_in.flow.inbox.name or urlsplit(sign_in.flow.issuer).hostname or sign_in.flow.issuer
        return JSONResponse({"issuer": sign_in.flow.issuer, "name": name}, headers={"Cache-Control": "no-cache"})

    return [
        Route("/ui/auth/provider", provider, methods=["GET"]),
        Route("/ui/auth/login", login, methods=["GET"]),
        Route(CALLBACK_PATH, callback, methods=["GET"]),
        Route("/ui/auth/logout", logout, methods=["POST"]),
    ]


def signin_fragment() -> dict[str, Any]:
    """The OpenAPI fragment of :func:`signin_routes`."""
    location = {"Location": {"schema": {"type": "string"}}, "Set-Cookie": {"schema": {"type": "string"}}}
    provider = {
        "type": "object",
        "required": ["issuer", "name"],
        "properties": {"issuer": {"type": "string"}, "name": {"type": "string"}},
    }
    return {
        "paths": {
            "/ui/auth/provider": {
                "get": operation(
                    "The identity provider the inbox signs people in at",
                    {"200": json_response(provider)},
                    auth=False,
                    tag="web",
                    store=False,
                )
            },
            "/ui/auth/login": {
                "get": operation(
                    "Starts signing in: redirects to the identity provider (authorization code flow with PKCE)",
                    {"303": {"description": "To the provider", "headers": location}},
                    auth=False,
                    tag="web",
                )
            },
            CALLBACK_PATH: {
                "get": operation(
                    "The redirect URI: checks the provider's answer, opens a session, redirects to the inbox",
                    {"303": {"description": "To the inbox", "headers": location}, **error_responses(401, 429)},
                    auth=False,
                    tag="web",
                )
            },
            "/ui/auth/logout": {
                "post": operation(
                    "Signs the session out (revoked on every instance)",
                    {"204": {"description": "Signed out", "headers": location}, **error_responses(403)},
                    auth=False,
                    tag="web",
                )
            },
        }
    }


def install_sign_in(
    engine: Engine, identity: Identity, ring: KeyRing, routes: list[BaseRoute], fragments: list[Any]
) -> SignIn:
    """The inbox's sign-in of a host whose identity file has an ``inbox`` section: its sessions in ``engine``'s
    store, the key ring taking their cookie, its routes and their OpenAPI fragment added to ``routes`` and
    ``fragments`` (the ASGI layer, :class:`SessionCookies`, is the caller's to add)."""
    config = identity.config
    sessions = InboxSessions(engine, idle_ms=config.sessions.idle_ms, absolute_ms=config.sessions.absolute_ms)
    ring.use_sessions(session_principal)
    sign_in = SignIn(InboxSignIn(config, identity.verifier), sessions, identity.public_url)
    routes += signin_routes(sign_in)
    fragments.append(signin_fragment())
    return sign_in
