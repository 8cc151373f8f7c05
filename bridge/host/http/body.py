"""Reading request bodies: size limit, media type, JSON, closed models."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError
from starlette.requests import Request
from starlette.types import Message, Receive

from openwop_bridge.core.errors import PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError

MAX_BODY = 1024 * 1024
MAX_JSON_DEPTH = 64
"""How deeply a request body may nest arrays and objects.

The store writes JSON with orjson, which refuses values nested deeper than 254
levels; what callers send is wrapped in a few more levels (events, snapshots,
sub-workflow inputs), so bodies stop well below that and are refused whole, as
a 400, before anything is stored.
"""

M = TypeVar("M", bound=BaseModel)


class ClosedModel(BaseModel):
    """A request body that refuses unknown fields."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class CreateRunBody(ClosedModel):
    """``POST /v1/runs``."""

    workflowId: str = Field(min_length=1, max_length=128)
    inputs: dict[str, Any] | None = None
    tenantId: str | None = None
    configurable: dict[str, Any] | None = None
    tags: list[Annotated[str, Field(max_length=256)]] | None = Field(default=None, max_length=100)
    metadata: dict[str, Any] | None = None


class ResolveBody(ClosedModel):
    """``POST …/interrupts/{nodeId}`` and ``POST /v1/interrupts/{token}``."""

    resumeValue: Any


class CancelBody(ClosedModel):
    """``POST /v1/runs/{runId}/cancel`` and ``POST …/interrupts/{nodeId}/cancel`` (optional body)."""

    reason: str | None = Field(default=None, max_length=1000)


class ForkBody(ClosedModel):
    """``POST /v1/runs/{runId}:fork``."""

    #: Only ``replay`` is offered (the document says so); another mode is refused with the modes offered.
    mode: str = Field(default="replay", json_schema_extra={"enum": ["replay"]})
    #: A replay re-runs the source from its start, so 0 is the only position offered.
    fromSeq: Literal[0] | None = None


class LinkBody(ClosedModel):
    """``POST …/interrupts/{nodeId}/links``: mint a signed link."""

    intent: str = Field(default="resolve", json_schema_extra={"enum": ["resolve", "inspect"]})
    subject: str | None = Field(default=None, min_length=1, max_length=256)
    ttlMs: int | None = Field(default=None, ge=1000, le=30 * 24 * 3600 * 1000)


async def read_bytes(request: Request, *, limit: int = MAX_BODY) -> bytes:
    """The request's body, read up to ``limit`` bytes: a larger one is 413 before more is read."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLargeError(f"the request body is larger than {limit} bytes", details={"limit": limit})
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLargeError(f"the request body is larger than {limit} bytes", details={"limit": limit})
        chunks.append(chunk)
    return b"".join(chunks)


def replaying(receive: Receive, raw: bytes) -> Receive:
    """``receive`` offering ``raw`` (a body already read) as the whole body, then the connection's own messages.

    For an ASGI app behind a route that read the body first (through :func:`read_bytes`, so
    bounded): the app reads the same body, and later learns of ``http.disconnect`` as usual.
    """
    pending = [{"type": "http.request", "body": raw, "more_body": False}]

    async def replay() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replay


async def read_json(request: Request, *, limit: int = MAX_BODY, required: bool = True, absent: Any = None) -> Any:
    """The request's JSON body, or 413/415/400 with a clear envelope.

    An empty body is a 400 when ``required``, else ``absent`` (so an optional body
    can tell "no body" from a JSON ``null``).
    """
    raw = await read_bytes(request, limit=limit)
    if not raw.strip():
        if required:
            raise ValidationError("a JSON request body is required")
        return absent
    media = request.headers.get("content-type", "application/json").split(";", 1)[0].strip().lower()
    if media and media != "application/json" and not media.endswith("+json"):
        raise UnsupportedMediaTypeError(f"the request body must be application/json, not {media}")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("depth limit exceeded"):
            raise _too_deep() from exc
        raise ValidationError(f"the request body is not valid JSON: {exc}") from exc
    if too_deep(data, MAX_JSON_DEPTH):
        raise _too_deep()
    return data


def too_deep(value: Any, limit: int) -> bool:
    """Whether ``value`` nests more than ``limit`` arrays and objects (a scalar is depth 0)."""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return False


def _too_deep() -> ValidationError:
    return ValidationError(
        f"the request body nests arrays and objects more than {MAX_JSON_DEPTH} levels deep",
        details={"maxDepth": MAX_JSON_DEPTH},
    )


def parse(model: type[M], data: Any) -> M:
    """Validate a body against a closed model; 400 lists every problem."""
    if not isinstance(data, dict):
        raise ValidationError("the request body must be a JSON object")
    try:
        return model.model_validate(data)
    except PydanticValidationError as exc:
        problems = [
            f"{'/'.join(str(p) for p in e['loc']) or '(body)'}: {e['msg']}" for e in exc.errors(include_url=False)
        ]
        raise ValidationError("the request body is not valid", details={"problems": problems}) from exc
