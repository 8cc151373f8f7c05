"""What every route needs from the request: the engine, the caller, the base URL."""

from __future__ import annotations

from starlette.requests import Request

from openwop_bridge.core.auth import KeyRing, Principal
from openwop_bridge.core.errors import ValidationError
from openwop_bridge.runtime.engine import Engine


def engine(request: Request) -> Engine:
    """The app's engine."""
    found: Engine = request.app.state.engine
    return found


def principal(request: Request) -> Principal:
    """The authenticated caller, or 401."""
    ring: KeyRing = request.app.state.keyring
    return ring.authenticate(request.headers.get("authorization"))


def optional_principal(request: Request) -> Principal | None:
    """The caller when an Authorization header is present (401 if it is wrong), else None."""
    if not request.headers.get("authorization"):
        return None
    return principal(request)


def base_url(request: Request) -> str:
    """Absolute base URL for links (honours the configured public URL)."""
    configured: str | None = request.app.state.public_url
    return (configured or str(request.base_url)).rstrip("/")


def int_param(request: Request, name: str, default: int, *, low: int, high: int) -> int:
    """An integer query parameter within bounds, or 400."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValidationError(f"query parameter {name!r} must be an integer") from exc
    if not low <= value <= high:
        raise ValidationError(f"query parameter {name!r} must be between {low} and {high}")
    return value


#: Bounds of the integer query parameters, shared by the routes and the OpenAPI document.
PAGE_LIMIT = {"low": 1, "high": 500}
#: Where a page of a message channel starts (``GET /v1/runs/{runId}/channels/{name}``).
CHANNEL_OFFSET = {"low": 0, "high": 2**31}
EVENTS_LIMIT = {"low": 1, "high": 100_000}
LAST_SEQUENCE = {"low": -1, "high": 2**62}
#: ``timeout`` of a long poll, in seconds (the OpenWOP SDKs send seconds; v2 states it).
POLL_TIMEOUT_S = {"low": 0, "high": 60}
