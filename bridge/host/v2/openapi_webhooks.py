"""The webhook operations of the v2 ``GET /openapi.json`` (:mod:`.webhooks`): bodies, answers and errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openwop_bridge.host.http.openapi_ops import json_response, path_param, query_param
from openwop_bridge.host.http.openapi_ops import request_body as body_of
from openwop_bridge.host.v2.webhooks import DEAD_LETTER_PAGE, RegisterBody, RotateBody

_BOUND = {"type": "string", "pattern": "^(anon:)?[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}$"}
_STAMP = {"type": "string", "format": "date-time"}
_REGISTERED = {
    "type": "object",
    "required": ["webhookId"],
    "additionalProperties": False,
    "properties": {
        "webhookId": _BOUND,
        "signatureAlgorithms": {"type": "array", "items": {"type": "string"}},
        "secret": {"type": "string", "description": "The secret this host made, shown this once (none was sent)"},
    },
}
_ROTATED = {
    "type": "object",
    "required": ["webhookId", "rotatedAt", "previousSecretExpiresAt"],
    "additionalProperties": False,
    "properties": {"webhookId": _BOUND, "rotatedAt": _STAMP, "previousSecretExpiresAt": _STAMP},
}
_DEAD_LETTER = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "deliveryId",
        "webhookId",
        "runId",
        "eventId",
        "eventType",
        "attempts",
        "deadLetteredAt",
        "expiresAt",
        "reason",
    ],
    "properties": {
        "deliveryId": _BOUND,
        "webhookId": _BOUND,
        "runId": _BOUND,
        "eventId": {"type": "string", "pattern": "^[A-Za-z0-9._~-]{16,128}$"},
        "eventType": {"type": "string", "minLength": 1},
        "attempts": {"type": "integer", "minimum": 1},
        "deadLetteredAt": _STAMP,
        "expiresAt": _STAMP,
        "reason": {"type": "string", "enum": ["retries_exhausted", "payload_unprojectable"]},
        "lastStatus": {"type": "integer", "description": "The HTTP status of the last attempt, when it had one"},
    },
}
_PAGE = {
    "type": "object",
    "description": "RFC 0188 §A.1 (webhook-dead-letter-page.schema.json)",
    "required": ["deliveries"],
    "additionalProperties": False,
    "properties": {
        "deliveries": {"type": "array", "items": _DEAD_LETTER},
        "nextCursor": {
            "type": "string",
            "minLength": 1,
            "maxLength": 2048,
            "description": "Absent on the last page; good for this subscription only",
        },
    },
}
_REDRIVEN = {
    "type": "object",
    "required": ["redriven"],
    "additionalProperties": False,
    "properties": {"redriven": {"type": "array", "items": _BOUND, "description": "The deliveries queued again"}},
}


def webhook_paths(op: Callable[..., dict[str, Any]], errors: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """The webhook operations, built with the document's own ``op`` and ``errors``."""
    webhook = path_param("webhookId", "The tenant-bound subscription id, projected to one segment (acme~2Fwhk-…)")
    webhook["schema"] = {
        "type": "string",
        "pattern": "^(?:[A-Za-z0-9._-]{1,128}|(?:anon~3[Aa])?[A-Za-z0-9._-]{1,128}~2[Ff][A-Za-z0-9._-]{16,128})$",
    }
    delivery = path_param("deliveryId", "The tenant-bound delivery id from a dead-letter page (acme~2Fntc-…)")
    delivery["schema"] = dict(webhook["schema"])
    return {
        "/webhooks": {
            "post": op(
                "registerWebhook",
                "Subscribe a URL to run events of the caller's tenant (scope webhooks:manage)",
                {
                    "201": json_response(_REGISTERED),
                    **errors(400, 401, 403, 413, 415, 429),
                },
                [],
                body_of(RegisterBody),
            )
        },
        "/webhooks/{webhookId}": {
            "delete": op(
                "unregisterWebhook",
                "Stop deliveries to a subscription",
                {"204": {"description": "Unsubscribed"}, **errors(400, 401, 403, 404)},
                [webhook],
            )
        },
        "/webhooks/{webhookId}/rotate-secret": {
            "post": op(
                "rotateWebhookSecret",
                "Sign with a new secret, the previous one beside it for the overlap (standard-webhooks-1)",
                {"200": json_response(_ROTATED), **errors(400, 401, 403, 404, 413, 415)},
                [webhook],
                body_of(RotateBody),
            )
        },
        "/webhooks/{webhookId}/dead-letters": {
            "get": op(
                "listWebhookDeadLetters",
                "Deliveries given up on, content-free, newest first",
                {"200": json_response(_PAGE), **errors(400, 401, 403, 404)},
                [
                    webhook,
                    query_param(
                        "limit",
                        f"Page size (default 50, at most {DEAD_LETTER_PAGE})",
                        {"type": "integer", "minimum": 1, "maximum": DEAD_LETTER_PAGE},
                    ),
                    query_param("cursor", "Next page (opaque, from nextCursor)"),
                ],
            )
        },
        "/webhooks/{webhookId}/dead-letters/redrive": {
            "post": op(
                "redriveWebhookDeadLetters",
                "Queue the subscription's dead letters again, the oldest hundred, each with its id and body "
                "(this host's operation, not OpenWOP's)",
                {"202": json_response(_REDRIVEN), **errors(400, 401, 403, 404)},
                [webhook],
            )
        },
        "/webhooks/{webhookId}/dead-letters/{deliveryId}/redrive": {
            "post": op(
                "redriveWebhookDeadLetter",
                "Queue one dead letter again, with its id and body (this host's operation, not OpenWOP's); "
                "404 when it is not a dead letter of this subscription",
                {"202": json_response(_REDRIVEN), **errors(400, 401, 403, 404)},
                [webhook, delivery],
            )
        },
    }
