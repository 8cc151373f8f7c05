"""Opaque pagination cursors shared by the stores."""

from __future__ import annotations

import base64
from typing import Any

import orjson

from openwop_bridge.core.errors import ValidationError


def encode_cursor(*parts: Any) -> str:
    """An opaque pagination cursor."""
    return base64.urlsafe_b64encode(orjson.dumps(list(parts))).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> list[Any]:
    """The parts of a cursor made by :func:`encode_cursor`."""
    try:
        parts = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, orjson.JSONDecodeError) as exc:
        raise ValidationError("malformed cursor") from exc
    if not isinstance(parts, list):
        raise ValidationError("malformed cursor")
    return parts


def page_cursor(cursor: str) -> tuple[int, str]:
    """``(milliseconds, id)`` from a page cursor; anything else is a malformed cursor."""
    parts = decode_cursor(cursor)
    if (
        len(parts) != 2
        or not isinstance(parts[0], int)
        or isinstance(parts[0], bool)
        or not -(2**63) <= parts[0] < 2**63
        or not isinstance(parts[1], str)
    ):
        raise ValidationError("malformed cursor")
    return parts[0], parts[1]
