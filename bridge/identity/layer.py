"""Bearer tokens on every surface: verified before the route, resolved by the key ring, challenged on refusal.

:class:`BearerTokens` is an ASGI layer around the host's app. A request whose
``Authorization: Bearer`` carries a JWT has it verified (asynchronously: the issuer's keys
may need fetching) before any route runs; the outcome is kept for the request, and the key
ring's token resolver (:meth:`Identity.resolve`, given to
:meth:`~openwop_bridge.core.auth.KeyRing.use_tokens`) hands it to whichever surface
authenticates, so v1, v2 and every adapter take a token exactly as they take an API key, and
a route that does not authenticate never sees it. An API key stays valid beside tokens.

On the way out the layer adds the challenges of identity.md §2.5 (RFC 9728, RFC 6750): every
``401`` carries ``WWW-Authenticate: Bearer resource_metadata="…"`` (with ``error="invalid_token"``
when a credential was presented), and a ``403`` for a scope a bearer token lacks carries
``error="insufficient_scope", scope="…"``. Other statuses (a ``404`` for another tenant's run
above all) carry none. :func:`metadata_routes` serves the RFC 9728 documents.
"""

from __future__ import annotations

import contextvars
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openwop_bridge.core.auth import SCOPES, SESSION_ISSUER, Principal
from openwop_bridge.core.errors import BridgeError
from openwop_bridge.identity.config import IdentityConfig
from openwop_bridge.identity.errors import IdentityUnverifiedError
from openwop_bridge.identity.verifier import TokenVerifier, Verified, looks_like_jwt

__all__ = ["METADATA_PATH", "BearerTokens", "Identity", "auth_lanes", "metadata_routes"]

#: RFC 9728's well-known path of protected-resource metadata.
METADATA_PATH = "/.well-known/oauth-protected-resource"
#: The surfaces served under a path of their own, each with its own metadata (MCP clients look there).
_SUB_RESOURCES = ("/mcp",)

#: The token presented on the current request and its verification (or refusal).
_PRESENTED: contextvars.ContextVar[tuple[str, Verified | BridgeError] | None] = contextvars.ContextVar(
    "openwop_bridge_bearer", default=None
)


@dataclass(frozen=True, slots=True)
class Identity:
    """The identity providers of a host: their configuration, the verifier, the public base URL."""

    config: IdentityConfig
    verifier: TokenVerifier
    public_url: str | None = None

    def resolve(self, token: str) -> Principal | None:
        """The principal of a bearer token verified on this request; None when ``token`` is not a JWT."""
        presented = _PRESENTED.get()
        if presented is not None and presented[0] == token:
            outcome = presented[1]
            if isinstance(outcome, BridgeError):
                raise type(outcome)(outcome.message, details=outcome.details)
            return outcome.principal
        cached = self.verifier.cached(token)
        if cached is not None:
            return cached.principal
        if looks_like_jwt(token):
            raise IdentityUnverifiedError("the bearer token was not verified on this request")
        return None


def presented_verified() -> Verified | None:
    """The verified token of the current request, if one was presented and verified."""
    found = _PRESENTED.get()
    return found[1] if found is not None and isinstance(found[1], Verified) else None


def _resource(base: str, path: str = "") -> tuple[str, str]:
    """The resource identifier and the URL of its metadata (the well-known path inserted before any path)."""
    parts = urlsplit(base.rstrip("/") + path)
    origin = f"{parts.scheme}://{parts.netloc}"
    return origin + parts.path, origin + METADATA_PATH + parts.path


def _base(request_or_scope: Request | Scope, public_url: str | None) -> str:
    if public_url:
        return public_url.rstrip("/")
    request = request_or_scope if isinstance(request_or_scope, Request) else Request(request_or_scope)
    return str(request.base_url).rstrip("/")


def metadata_routes(identity: Identity) -> list[Route]:
    """``GET /.well-known/oauth-protected-resource`` (and ``…/mcp``): RFC 9728 metadata, unauthenticated."""

    def endpoint(path: str) -> Any:
        async def metadata(request: Request) -> Response:
            resource, _ = _resource(_base(request, identity.public_url), path)
            document = {
                "resource": resource,
                "authorization_servers": [i.issuer for i in identity.config.issuers],
                "scopes_supported": list(SCOPES),
                "bearer_methods_supported": ["header"],
                "resource_name": "openwop-bridge",
            }
            return JSONResponse(document, headers={"Cache-Control": "public, max-age=300"})

        return metadata

    return [Route(METADATA_PATH + path, endpoint(path), methods=["GET"]) for path in ("", *_SUB_RESOURCES)]


def auth_lanes(config: IdentityConfig, *, sessions: bool = False) -> list[dict[str, Any]]:
    """The ``auth.lanes[]`` members of the configured issuers (``auth.schema.json``), one per lane; with
    ``sessions`` (the inbox's sign-in is served) the ``session`` lane too, its sessions revoked at once."""
    lanes: list[dict[str, Any]] = []
    for issuer in config.issuers:
        lane = next(
            (
                found
                for found in lanes
                if found["lane"] == issuer.lane
                and found["revocation"] == issuer.revocation
                and found["revocationWindowSeconds"] == issuer.revocation_window_seconds
            ),
            None,
        )
        if lane is None:
            lane = {
                "lane": issuer.lane,
                "issuers": [],
                "revocation": issuer.revocation,
                "revocationWindowSeconds": issuer.revocation_window_seconds,
                "minimumAssurance": "bearer",
            }
            lanes.append(lane)
        lane["issuers"].append(issuer.issuer)
    if sessions and config.inbox is not None:
        lanes.append(
            {
                "lane": "session",
                "issuers": [SESSION_ISSUER],
                "revocation": "next-request",
                "minimumAssurance": "bearer",
            }
        )
    return lanes


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class BearerTokens:
    """The ASGI layer verifying bearer JWTs and adding challenges (see the module's docstring)."""

    def __init__(self, app: ASGIApp, identity: Identity) -> None:
        self.app = app
        self.identity = identity

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        authorization = _header(scope, b"authorization")
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        reset = None
        if scheme.lower() == "bearer" and looks_like_jwt(token):
            outcome: Verified | BridgeError
            try:
                outcome = await self.identity.verifier.verify(token)
            except BridgeError as exc:
                outcome = exc
            reset = _PRESENTED.set((token, outcome))
        try:
            await self.app(scope, receive, self._challenging(scope, send, presented=bool(authorization)))
        finally:
            if reset is not None:
                _PRESENTED.reset(reset)

    def _challenging(self, scope: Scope, send: Send, *, presented: bool) -> Send:
        path = next((p for p in _SUB_RESOURCES if scope["path"] == p or scope["path"].startswith(p + "/")), "")
        bearer = presented_verified()
        held: list[Message] = []

        def challenge(**params: str) -> tuple[bytes, bytes]:
            _, url = _resource(_base(scope, self.identity.public_url), path)
            fields = [f"resource_metadata={_quoted(url)}"] + [f"{k}={_quoted(v)}" for k, v in params.items()]
            return b"www-authenticate", ("Bearer " + ", ".join(fields)).encode("latin-1")

        def with_header(message: Message, header: tuple[bytes, bytes]) -> Message:
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"www-authenticate"]
            return {**message, "headers": [*headers, header]}

        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                message = with_header(message, challenge(error="invalid_token") if presented else challenge())
            elif message["type"] == "http.response.start" and message["status"] == 403 and bearer is not None:
                held.append(message)  # the scope is in the body: wait for it
                return
            elif held and message["type"] == "http.response.body":
                start = held.pop()
                scope_needed = _required_scope(message.get("body", b""))
                if scope_needed is not None:
                    start = with_header(start, challenge(error="insufficient_scope", scope=scope_needed))
                await send(start)
            await send(message)

        return wrapped


def _required_scope(body: bytes) -> str | None:
    """The scope a ``403`` envelope says is missing (``details.requiredScope``), if it says so."""
    try:
        found = json.loads(body)
    except ValueError:
        return None
    details = found.get("details") if isinstance(found, dict) else None
    scope = details.get("requiredScope") if isinstance(details, dict) else None
    return scope if isinstance(scope, str) else None
