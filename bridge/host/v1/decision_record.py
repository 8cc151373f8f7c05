"""The decision record over HTTP: its pages and JSON Lines export, its public keys, one decision's receipt.

- ``GET /v1/audit/decisions`` (scope ``audit:read``, the caller's tenant): a page of records as JSON
  (``limit`` up to 1,000, ``cursor`` for the next), or with ``Accept: application/x-ndjson`` (or
  ``format=jsonl``) every record after ``cursor`` as JSON Lines, streamed a page at a time; each line
  is what ``openwop-bridge audit verify`` checks.
- ``GET /v1/audit/keys``: the JWK set of every key that signed a record (no key needed).
- ``GET /v1/runs/{runId}/interrupts/{nodeId}/receipt``: the records of the decisions on that interrupt.

The record itself is :mod:`openwop_bridge.core.decision_record`'s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from openwop_bridge.core.errors import ValidationError
from openwop_bridge.host.http.deps import engine, int_param, principal
from openwop_bridge.host.http.openapi_ops import error_responses, json_response, path_param, query_param
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.routing import Operation
from openwop_bridge.runtime.decision_records import StoredRecord, after_cursor, cursor_after

#: The JSON Lines media type of an export.
JSON_LINES = "application/x-ndjson"


def _lines(rows: list[StoredRecord]) -> list[Any]:
    return [orjson.loads(row.line()) for row in rows]


def _after(request: Request) -> tuple[str, int] | None:
    """The ``cursor`` query parameter as ``(tenant, seq)``, None when absent; else 400."""
    raw = request.query_params.get("cursor")
    return None if raw is None else after_cursor(raw)


def _wants_lines(request: Request) -> bool:
    form = request.query_params.get("format")
    if form is not None and form not in ("json", "jsonl"):
        raise ValidationError("'format' must be json or jsonl", details={"allowed": ["json", "jsonl"]})
    accept = request.headers.get("accept", "")
    return form == "jsonl" or (form is None and (JSON_LINES in accept or "application/jsonl" in accept))


async def decisions(request: Request) -> Response:
    """``GET /v1/audit/decisions`` (see the module docstring)."""
    who = principal(request)
    eng = engine(request)
    after = _after(request)
    if _wants_lines(request):  # the operation's scope was checked before: the stream cannot be refused midway
        lines: AsyncIterator[bytes] = eng.decision_record_lines(who, after)
        return StreamingResponse(lines, media_type=JSON_LINES, headers={"Cache-Control": "no-store"})
    limit = int_param(request, "limit", 100, low=1, high=1_000)
    rows = await eng.decision_records(who, limit, after)
    cursor = cursor_after(rows[-1]) if len(rows) == limit else None
    return JSONResponse({"records": _lines(rows), "nextCursor": cursor}, headers={"Cache-Control": "no-store"})


async def keys(request: Request) -> Response:
    """``GET /v1/audit/keys``: the public keys that verify the record's signatures."""
    return JSONResponse(await engine(request).decision_record_keys(), headers={"Cache-Control": "max-age=300"})


async def receipt(request: Request) -> Response:
    """``GET /v1/runs/{runId}/interrupts/{nodeId}/receipt``: the records of the decisions on that interrupt."""
    run_id, node_id = request.path_params["run_id"], request.path_params["node_id"]
    rows = await engine(request).decision_receipt(run_id, node_id, principal(request))
    body = {"runId": run_id, "nodeId": node_id, "records": _lines(rows), "keys": "/v1/audit/keys"}
    return JSONResponse(body, headers={"Cache-Control": "no-store"})


_LINE: dict[str, Any] = {
    "type": "object",
    "description": "One record: its content (its JCS form, RFC 8785, is hashed and signed), its hash, the id of "
    "the key that signed it and the signature (Ed25519, base64url)",
    "properties": {
        "record": {
            "type": "object",
            "properties": {
                "v": {"type": "integer"},
                "id": {"type": "string"},
                "seq": {"type": "integer"},
                "at": {"type": "string", "format": "date-time"},
                "tenant": {"type": "string"},
                "runId": {"type": ["string", "null"]},
                "interruptId": {"type": ["string", "null"]},
                "nodeId": {"type": ["string", "null"]},
                "kind": {"type": ["string", "null"]},
                "decision": {"type": "string"},
                "action": {"type": ["string", "null"]},
                "by": {"type": "string"},
                "subject": {"type": ["object", "null"]},
                "assurance": {"type": ["string", "null"]},
                "delegation": {"type": ["string", "null"]},
                "shownHash": {"type": ["string", "null"]},
                "valueHash": {"type": ["string", "null"]},
                "reason": {"type": ["string", "null"]},
                "prev": {"type": "string"},
            },
            "required": ["v", "id", "seq", "at", "tenant", "decision", "by", "prev"],
        },
        "hash": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
        "kid": {"type": "string"},
        "signature": {"type": "string"},
    },
    "required": ["record", "hash", "kid", "signature"],
}
_PAGE: dict[str, Any] = {
    "type": "object",
    "properties": {"records": {"type": "array", "items": _LINE}, "nextCursor": {"type": ["string", "null"]}},
    "required": ["records", "nextCursor"],
}
_JWKS: dict[str, Any] = {
    "type": "object",
    "properties": {"keys": {"type": "array", "items": {"type": "object"}}},
    "required": ["keys"],
}
_RECEIPT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "runId": {"type": "string"},
        "nodeId": {"type": "string"},
        "records": {"type": "array", "items": _LINE},
        "keys": {"type": "string", "description": "Where the public keys are"},
    },
    "required": ["runId", "nodeId", "records", "keys"],
}
_PAGE_OK = json_response(_PAGE, "A page of records, or with Accept: application/x-ndjson every record as JSON Lines")
_PAGE_OK["content"][JSON_LINES] = {"schema": {"type": "string"}}

#: The decision record's operations.
OPERATIONS = (
    Operation(
        "GET",
        "/v1/audit/decisions",
        decisions,
        "The decision record of the caller's tenant: a page of signed, hash-chained records, or all of them as "
        "JSON Lines (scope audit:read)",
        {"200": _PAGE_OK, **error_responses(400, 401, 403, 503)},
        scope="audit:read",
        params=(
            query_param("cursor", "The nextCursor of the previous page (opaque; a malformed cursor is 400)"),
            query_param("limit", "Records per page (default 100)", {"type": "integer", "minimum": 1, "maximum": 1000}),
            query_param(
                "format",
                "jsonl: every record as JSON Lines (as Accept: application/x-ndjson)",
                {"type": "string", "enum": ["json", "jsonl"]},
            ),
        ),
        tags=("audit",),
    ),
    Operation(
        "GET",
        "/v1/audit/keys",
        keys,
        "The public keys (JWK set) that verify the decision record's signatures",
        {"200": json_response(_JWKS), **error_responses(503)},
        auth=False,
        tags=("audit",),
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/interrupts/{nodeId}/receipt",
        receipt,
        "The decision record's entries for the latest interrupt at this address",
        {"200": json_response(_RECEIPT), **error_responses(401, 403, 404, 503)},
        scope=("runs:read", "interrupts:read"),
        params=(path_param("runId", "The run"), path_param("nodeId", "The interrupt's node")),
        tags=("audit",),
    ),
)
