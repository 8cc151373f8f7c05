"""What the v2 webhook operations (:mod:`.webhooks`) answer, as the OpenAPI document describes it."""

from __future__ import annotations

BOUND = {"type": "string", "pattern": "^(anon:)?[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}$"}
STAMP = {"type": "string", "format": "date-time"}
REGISTERED = {
    "type": "object",
    "required": ["webhookId"],
    "additionalProperties": False,
    "properties": {
        "webhookId": BOUND,
        "signatureAlgorithms": {"type": "array", "items": {"type": "string"}},
        "secret": {"type": "string", "description": "The secret this host made, shown this once (none was sent)"},
    },
}
ROTATED = {
    "type": "object",
    "required": ["webhookId", "rotatedAt", "previousSecretExpiresAt"],
    "additionalProperties": False,
    "properties": {"webhookId": BOUND, "rotatedAt": STAMP, "previousSecretExpiresAt": STAMP},
}
DEAD_LETTER = {
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
        "deliveryId": BOUND,
        "webhookId": BOUND,
        "runId": BOUND,
        "eventId": {"type": "string", "pattern": "^[A-Za-z0-9._~-]{16,128}$"},
        "eventType": {"type": "string", "minLength": 1},
        "attempts": {"type": "integer", "minimum": 1},
        "deadLetteredAt": STAMP,
        "expiresAt": STAMP,
        "reason": {"type": "string", "enum": ["retries_exhausted", "payload_unprojectable"]},
        "lastStatus": {"type": "integer", "description": "The HTTP status of the last attempt, when it had one"},
    },
}
PAGE = {
    "type": "object",
    "description": "RFC 0188 §A.1 (webhook-dead-letter-page.schema.json)",
    "required": ["deliveries"],
    "additionalProperties": False,
    "properties": {
        "deliveries": {"type": "array", "items": DEAD_LETTER},
        "nextCursor": {
            "type": "string",
            "minLength": 1,
            "maxLength": 2048,
            "description": "Absent on the last page; good for this subscription only",
        },
    },
}
REDRIVEN = {
    "type": "object",
    "required": ["redriven"],
    "additionalProperties": False,
    "properties": {"redriven": {"type": "array", "items": BOUND, "description": "The deliveries queued again"}},
}
