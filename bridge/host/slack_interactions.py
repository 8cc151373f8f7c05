"""``POST /notify/slack/interactions``: the route of a click on a Slack message's button
(:mod:`openwop_bridge.notify.slack_clicks` takes it: signature, person, answer, the message rewritten)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from openwop_bridge.host.http.body import read_bytes
from openwop_bridge.host.http.openapi_ops import error_responses, operation
from openwop_bridge.notify.slack_clicks import MAX_BODY, SlackClicks

__all__ = ["PATH", "openapi_fragment", "route"]

PATH = "/notify/slack/interactions"


def route(clicks: SlackClicks) -> Route:
    """The Starlette route: the body read (at most :data:`MAX_BODY`), then the click taken; ``200`` with an empty
    body is Slack's acknowledgement."""

    async def handle(request: Request) -> Response:
        body = await read_bytes(request, limit=MAX_BODY)
        headers = request.headers
        await clicks.click(body, headers.get("X-Slack-Request-Timestamp"), headers.get("X-Slack-Signature"))
        return Response(status_code=200)

    return Route(PATH, handle, methods=["POST"])


def openapi_fragment() -> dict[str, Any]:
    """The route's OpenAPI document."""
    form = {
        "application/x-www-form-urlencoded": {
            "schema": {"type": "object", "required": ["payload"], "properties": {"payload": {"type": "string"}}}
        }
    }
    return {
        "paths": {
            PATH: {
                "post": operation(
                    "A Slack interaction (a button click), signed by Slack",
                    {"200": {"description": "Acknowledged"}, **error_responses(400, 401, 403, 404, 409, 413)},
                    body={"required": True, "content": form},
                    auth=False,
                    tag="notify",
                )
            }
        }
    }
