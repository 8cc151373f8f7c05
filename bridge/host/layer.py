"""The host's one ASGI layer over its app: what every request and every answer passes through.

It sits with the app, above both majors: it routes a request to v1 or v2 and speaks each one's errors.

One call per request and one ``send`` per message, instead of a middleware (and a wrapped
``send``) for each of:

- the host names served (:class:`~openwop_bridge.host.http.hosts.HostNames`, with ``allowed_hosts``): any
  other ``Host`` is refused with a 400 envelope;
- version negotiation (:func:`~openwop_bridge.host.v2.negotiation.negotiate`): a request is routed by its
  ``OpenWOP-Version``, and its answer names the version it was served in;
- the headers every answer carries (:data:`~openwop_bridge.host.http.headers.ALWAYS`);
- the budget of large answers waiting for their clients (:mod:`openwop_bridge.host.http.budget`).
"""

from __future__ import annotations

from typing import Protocol

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openwop_bridge.core.errors import RateLimitedError
from openwop_bridge.host.http.budget import COUNTED_FROM, RETRY_AFTER_S, Budget, content_length, in_pieces
from openwop_bridge.host.http.headers import with_always
from openwop_bridge.host.http.responses import JSONResponse, error_headers
from openwop_bridge.host.v2.api import Negotiated, is_v2_path, named, negotiate, v2_error_response


class HostCheck(Protocol):
    """Says which requests' ``Host`` is refused (see :class:`~openwop_bridge.host.http.hosts.HostNames`)."""

    def refusal(self, scope: Scope) -> Response | None:
        """The answer refusing the request, or None to serve it."""


class HostLayer:
    """The layer over the host's app (see the module): ``hosts`` None serves every host name."""

    def __init__(self, app: ASGIApp, budget: Budget, hosts: HostCheck | None = None) -> None:
        self.app = app
        self.budget = budget
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self.hosts.refusal(scope) if self.hosts is not None else None
        if refused is not None:
            await refused(scope, receive, send)
            return
        routed = negotiate(scope)
        if isinstance(routed, Response):
            await routed(scope, receive, _answering(send, None))
            return
        scope = routed.scope
        allowance = self.budget
        held = 0
        dropped = False

        async def sending(message: Message) -> None:
            nonlocal held, dropped
            if dropped:
                return
            if message["type"] == "http.response.start":
                message = {**message, "headers": with_always(named(list(message.get("headers", [])), routed))}
                size = content_length(message)
                if size >= COUNTED_FROM:
                    if not allowance.take(size):
                        dropped = True
                        await refusal(scope, receive, _answering(send, routed))
                        return
                    held = size
                await send(message)
                return
            if held and message["type"] == "http.response.body":
                await in_pieces(message, send)
                if not message.get("more_body", False):
                    allowance.give_back(held)
                    held = 0
                return
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            if held:
                allowance.give_back(held)


def _answering(send: Send, routed: Negotiated | None) -> Send:
    """``send`` for an answer of the layer's own: with the headers every answer carries (and the version)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            message = {**message, "headers": with_always(named(headers, routed) if routed else headers)}
        await send(message)

    return sending


async def refusal(scope: Scope, receive: Receive, send: Send) -> None:
    """Send the ``429 rate_limited`` (with ``Retry-After``) of an answer the budget cannot take, in the
    spelling of the request's surface (v2 at the root paths, else v1)."""
    error = RateLimitedError(
        "too many large answers are waiting for their clients on this instance; retry later", RETRY_AFTER_S
    )
    if is_v2_path(scope["path"]):
        await v2_error_response(error)(scope, receive, send)
        return
    response = JSONResponse(error.envelope(), status_code=error.status, headers=error_headers(error))
    await response(scope, receive, send)
