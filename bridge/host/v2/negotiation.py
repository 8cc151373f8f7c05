"""Version negotiation (versioning.md §1.3, §1.4) as ASGI middleware.

- ``/v1/…`` paths: an ``OpenWOP-Version`` naming another major than 1 is ``400
  protocol_version_mismatch``; responses carry ``OpenWOP-Version: 1.1``.
- Root paths (v2): a header naming a major this host does not serve is ``406
  protocol_version_unsupported`` with ``details.protocolVersions``; major 1 on a
  root path is served by the ``/v1`` twin; responses carry ``OpenWOP-Version``.
- Any other path asked for major 2 (a surface this host does not serve over v2) answers as
  the host does, naming ``OpenWOP-Version: 2.0``.
- ``/.well-known/openwop`` is one resource: the header selects its
  representation (absent selects ``preferredVersion``, 1.1, through the overlap).
- A tenant-bound id sent percent-encoded (``acme%2Fr-…``) is routed like its
  projected spelling (``acme~2Fr-…``): one path segment either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openwop_bridge.host.http.responses import JSONResponse

V1 = "1.1"
V2 = "2.0"
PROTOCOL_VERSIONS = [V1, V2]
PREFERRED = V1
DISCOVERY = "/.well-known/openwop"
V2_ROOTS = ("/runs", "/interrupts", "/webhooks", "/delegations", "/openapi.json", DISCOVERY)
_HEADER = re.compile(r"\s*(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*))?\s*")


def requested_major(scope: Scope) -> int | None:
    """The major named by the request's ``OpenWOP-Version`` (None when absent, -1 when malformed)."""
    for name, value in scope.get("headers", []):
        if name == b"openwop-version":
            m = _HEADER.fullmatch(value.decode("latin-1"))
            return int(m.group(1)) if m else -1
    return None


def is_v2_path(path: str) -> bool:
    """Whether ``path`` is one of the v2 resources served at the root (``/runs``, ``/interrupts``, …)."""
    return _is_v2(path)


def _is_v2(path: str) -> bool:
    return any(path == root or path.startswith((root + "/", root + ":")) for root in V2_ROOTS)


@dataclass(frozen=True, slots=True)
class Negotiated:
    """A request as :func:`negotiate` routes it, and the ``OpenWOP-Version`` its answer names."""

    scope: Scope
    #: The version the answer names (None: the answer's own headers stand).
    version: bytes | None
    #: Whether the answer varies by ``OpenWOP-Version`` (and says so in ``Vary``).
    vary: bool = False


#: The ``Vary`` an answer chosen by ``OpenWOP-Version`` carries.
VARY = (b"vary", b"Accept, OpenWOP-Version")
_V1, _V2 = V1.encode(), V2.encode()


def negotiate(scope: Scope) -> Negotiated | Response:
    """An HTTP request routed by its ``OpenWOP-Version`` (see the module), or the refusal to send instead."""
    path: str = scope["path"]
    major = requested_major(scope)
    if path.startswith("/v1/"):
        if major is not None and major != 1:
            body = {"error": "protocol_version_mismatch", "message": "a /v1/ path serves OpenWOP-Version 1 only"}
            return JSONResponse(body, status_code=400, headers={"OpenWOP-Version": V1})
        return Negotiated(scope, _V1)
    if not _is_v2(path):
        return Negotiated(scope, _V2 if major == 2 else None)
    if major is not None and major not in (1, 2):
        unsupported: dict[str, object] = {
            "error": "protocol_version_unsupported",
            "message": "this host serves OpenWOP 1.1 and 2.0",
            "details": {"protocolVersions": PROTOCOL_VERSIONS},
        }
        return JSONResponse(unsupported, status_code=406, headers={"OpenWOP-Version": V2})
    if path == DISCOVERY:
        served = V2 if major == 2 else V1
        scope = {**scope, "state": {**scope.get("state", {}), "openwop_major": int(served[0])}}
        return Negotiated(scope, served.encode(), vary=True)
    if major == 1:
        scope = {**scope, "path": "/v1" + path, "raw_path": b"/v1" + scope.get("raw_path", path.encode())}
        return Negotiated(scope, _V1)
    raw = scope.get("raw_path") or b""
    if b"%2f" in raw.lower():
        spelled = re.sub(rb"%2[fF]", b"~2F", raw).decode("latin-1")
        scope = {**scope, "path": unquote(spelled)}
    return Negotiated(scope, _V2)


def named(headers: list[tuple[bytes, bytes]], routed: Negotiated) -> list[tuple[bytes, bytes]]:
    """An answer's ``headers`` naming the version ``routed`` says (unchanged when it names none)."""
    if routed.version is None:
        return headers
    named = [(k, v) for k, v in headers if k.lower() != b"openwop-version"]
    named.append((b"openwop-version", routed.version))
    if routed.vary:
        named.append(VARY)
    return named


class VersionNegotiation:
    """Route by ``OpenWOP-Version`` and name the contract used on every protocol response (as ASGI middleware;
    the host's own app does the same in its one layer, :class:`openwop_bridge.host.layer.HostLayer`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        routed = negotiate(scope)
        if isinstance(routed, Response):
            await routed(scope, receive, send)
            return
        if routed.version is None:
            await self.app(routed.scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": named(list(message.get("headers", [])), routed)}
            await send(message)

        await self.app(routed.scope, receive, sending)
