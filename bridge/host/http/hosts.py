"""Which host names the app answers to: a refused ``Host`` is a 400 envelope, never a forged link.

:class:`HostNames` is the check the app's one layer (:class:`~openwop_bridge.host.layer.HostLayer`)
makes; :class:`TrustedHosts` makes it as a middleware of its own, for apps that embed the routes.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from starlette.datastructures import URL
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from openwop_bridge.host.http.headers import ALWAYS
from openwop_bridge.host.http.responses import JSONResponse, envelope


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
    checks in its one layer, :class:`~openwop_bridge.host.layer.HostLayer`.)
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
