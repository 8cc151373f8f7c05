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
from urllib.parse import unquote

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bridge.host.http.responses import JSONResponse

V1 = "1.1"
V2 = "2.0"
PROTOCOL_VERSIONS = [V1, V2]
PREFERRED = V1
DISCOVERY = "/.well-known/openwop"
V2_ROOTS = ("/runs", "/interrupts", "/webhooks", "/openapi.json", DISCOVERY)
_HEADER = re.compile(r"\s*(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*))?\s*")


def requested_major(scope: Scope) -> int | None:
    """The major named by the request's ``OpenWOP-Version`` (None when absent, -1 when malformed)."""
    for name, value in scope.get("headers", []):
        if name == b"openwop-version":
            m = _HEADER.fullmatch(value.decode("latin-1"))
            return int(m.group(1)) if m else -1
    return None


def _is_v2(path: str) -> bool:
    return any(path == root or path.startswith((root + "/", root + ":")) for root in V2_ROOTS)


class VersionNegotiation:
    """Route by ``OpenWOP-Version`` and name the contract used on every protocol response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        major = requested_major(scope)
        if path.startswith("/v1/"):
            if major is not None and major != 1:
                body = {"error": "protocol_version_mismatch", "message": "a /v1/ path serves OpenWOP-Version 1 only"}
                await JSONResponse(body, status_code=400, headers={"OpenWOP-Version": V1})(scope, receive, send)
                return
            await self.app(scope, receive, _with_version(send, V1))
            return
        if not _is_v2(path):
            await self.app(scope, receive, _with_version(send, V2) if major == 2 else send)
            return
        if major is not None and major not in (1, 2):
            unsupported: dict[str, object] = {
                "error": "protocol_version_unsupported",
                "message": "this host serves OpenWOP 1.1 and 2.0",
                "details": {"protocolVersions": PROTOCOL_VERSIONS},
            }
            await JSONResponse(unsupported, status_code=406, headers={"OpenWOP-Version": V2})(scope, receive, send)
            return
        if path == DISCOVERY:
            served = V2 if major == 2 else V1
            scope = {**scope, "state": {**scope.get("state", {}), "openwop_major": int(served[0])}}
            await self.app(scope, receive, _with_version(send, served, vary=True))
            return
        if major == 1:
            scope = {**scope, "path": "/v1" + path, "raw_path": b"/v1" + scope.get("raw_path", path.encode())}
            await self.app(scope, receive, _with_version(send, V1))
            return
        raw = scope.get("raw_path") or b""
        if b"%2f" in raw.lower():
            spelled = re.sub(rb"%2[fF]", b"~2F", raw).decode("latin-1")
            scope = {**scope, "path": unquote(spelled)}
        await self.app(scope, receive, _with_version(send, V2))


def _with_version(send: Send, version: str, *, vary: bool = False) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"openwop-version"]
            headers.append((b"openwop-version", version.encode()))
            if vary:
                headers.append((b"vary", b"Accept, OpenWOP-Version"))
            message = {**message, "headers": headers}
        await send(message)

    return sending
