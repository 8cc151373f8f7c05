"""``GET /openapi.json`` under v2: OpenAPI 3.1 for the v2 routes served at root paths.

Every operation lists its parameters (path, query, ``OpenWOP-Version``,
``Idempotency-Key``, ``Last-Event-ID``), its request body (the same pydantic
models the routes validate with) and the statuses the route really answers;
every error is the v2 error envelope, the vendored ``error-envelope.schema.json``
embedded as ``ErrorEnvelope``; the 200 bodies are real schemas (:mod:`.openapi_schemas`).
A run's events stream as ``text/event-stream``.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core import kinds
from openwop_bridge.core.events import ENGINE_VERSION
from openwop_bridge.host.http.body import CancelBody, ForkBody, ResolveBody
from openwop_bridge.host.http.deps import PAGE_LIMIT
from openwop_bridge.host.http.openapi_ops import (
    SEQUENCE,
    SSE,
    bounded,
    header_param,
    json_response,
    path_param,
    query_param,
    schema_ref,
)
from openwop_bridge.host.http.openapi_ops import request_body as body_of
from openwop_bridge.host.v2.batching import BUFFER_MS
from openwop_bridge.host.v2.bulk import MAX_RUN_IDS, BulkCancelBody
from openwop_bridge.host.v2.dedup import CreateRunBodyV2
from openwop_bridge.host.v2.openapi_schemas import component_schemas
from openwop_bridge.host.v2.openapi_webhooks import webhook_paths
from openwop_bridge.host.v2.routes import AFTER_SEQUENCE, POLL_TIMEOUT_S
from openwop_bridge.host.v2.webhooks import RegisterBody, RotateBody
from openwop_bridge.spec import v2 as spec_v2

_ERRORS = {
    400: "validation_error, idempotency_key_invalid, unsupported_stream_mode",
    401: "unauthenticated, interrupt_token_invalid",
    403: "forbidden",
    404: "not_found: no such run, workflow or interrupt visible to the caller",
    406: "protocol_version_unsupported: OpenWOP-Version names a major this host does not serve",
    409: "interrupt_already_resolved, run_state_conflict, run_terminal, idempotency_key_mismatch, "
    "idempotency_in_flight (Retry-After), run_already_active (OpenWOP-Dedup; Retry-After)",
    410: "interrupt_cancelled, interrupt_expired",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "an answer the interrupt refuses",
    429: "rate_limited: more streams or requests than a limit allows (Retry-After)",
    503: "runner_unavailable: the store is unreachable for now (Retry-After)",
}
#: Statuses every v2 operation may answer: a major this host does not serve, the store down.
_ALWAYS = (406, 503)


def _errors(*codes: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for code in sorted({*codes, *_ALWAYS}):
        out[str(code)] = json_response(schema_ref("ErrorEnvelope"), _ERRORS[code])
    if 401 in codes:
        out["401"]["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}}}
    for code in (409, 429, 503):
        if str(code) in out:
            out[str(code)]["headers"] = {"Retry-After": {"schema": {"type": "string"}, "description": "seconds"}}
    return out


_VERSION = header_param(
    "OpenWOP-Version",
    "The contract asked for. This document describes major 2; another major this host does not "
    "serve is 406 protocol_version_unsupported, and major 1 is served by the /v1 twin of the path.",
    {"type": "string", "pattern": "^2(\\.(0|[1-9][0-9]*))?$"},
)
_IDEMPOTENCY = header_param(
    "Idempotency-Key",
    "Retry safely (v2 idempotency rules): 22-128 of A-Z a-z 0-9 . _ ~ -; another spelling is 400 "
    "idempotency_key_invalid. A replay carries OpenWOP-Idempotent-Replay: true.",
    {"type": "string", "pattern": "^[A-Za-z0-9._~-]{22,128}$"},
)
_DEDUP = header_param(
    "OpenWOP-Dedup",
    "enforce: while a run created for the same tenantId and scopeId (required then) is not terminal, "
    "409 run_already_active with Retry-After, and no run is created.",
    {"type": "string", "enum": ["enforce"]},
)
_RUN = path_param("runId", "The tenant-bound run id projected to one segment (acme~2Fr-1), or a v1 run id")
#: A bare id (the opaque segment, or the v1 id) or a projected tenant-bound id (``openwop_bridge.host.v2.ids``).
_RUN["schema"] = {
    "type": "string",
    "pattern": "^(?:[A-Za-z0-9._-]{1,128}|(?:anon~3[Aa])?[A-Za-z0-9._-]{1,128}~2[Ff][A-Za-z0-9._-]{16,128})$",
}
_OBJECT: dict[str, Any] = {"type": "object"}
_INBOX_STATUSES = ["pending", "resolved", "expired", "cancelled"]
_LOCATION = {"Location": {"schema": {"type": "string"}, "description": "The new run's URL"}}
_CREATED = {
    "type": "object",
    "required": ["runId", "status", "eventsUrl", "statusUrl"],
    "properties": {
        "runId": {"type": "string"},
        "status": {"type": "string"},
        "eventsUrl": {"type": "string"},
        "statusUrl": {"type": "string"},
    },
}
_POLL = {
    "type": "object",
    "required": ["runId", "events", "lastSequence", "status", "isTerminal"],
    "properties": {
        "runId": {"type": "string"},
        "events": {"type": "array", "items": _OBJECT},
        "lastSequence": {"type": "integer"},
        "status": {"type": "string"},
        "isTerminal": {"type": "boolean"},
    },
}


def _op(
    op_id: str,
    summary: str,
    responses: dict[str, Any],
    params: list[dict[str, Any]] | None = None,
    body: dict[str, Any] | None = None,
    *,
    auth: bool = True,
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": op_id,
        "summary": summary,
        "parameters": [*(params or []), _VERSION],
        "responses": responses,
    }
    if body is not None:
        op["requestBody"] = body
    if not auth:
        op["security"] = []
    return op


def _run_paths() -> dict[str, Any]:
    return {
        "/runs": {
            "post": _op(
                "createRun",
                "Start a run (OpenWOP-Dedup: enforce keeps one active run per tenantId and scopeId)",
                {
                    "201": json_response(_CREATED, "Created", _LOCATION),
                    **_errors(400, 401, 403, 404, 409, 413, 415, 422),
                },
                [_IDEMPOTENCY, _DEDUP],
                body_of(CreateRunBodyV2),
            ),
            "get": _op(
                "listRuns",
                "The caller's runs, newest first",
                {"200": json_response(schema_ref("RunListResponse")), **_errors(400, 401, 403)},
                [
                    query_param("workflowId", "Filter"),
                    query_param("status", "Filter"),
                    query_param("limit", "Page size (default 50)", bounded(PAGE_LIMIT)),
                    query_param("cursor", "Next page (opaque, from nextCursor); a malformed cursor is 400"),
                ],
            ),
        },
        "/runs/{runId}": {
            "get": _op(
                "getRun",
                "Run snapshot",
                {"200": json_response(schema_ref("RunSnapshot")), **_errors(400, 401, 403, 404)},
                [_RUN],
            )
        },
        "/runs/{runId}/cancel": {
            "post": _op(
                "cancelRun",
                "Cancel a run; one that already ended is 409 run_terminal. The body is optional.",
                {"200": json_response(schema_ref("CancelResponse")), **_errors(400, 401, 403, 404, 409, 413, 415)},
                [_RUN, _IDEMPOTENCY],
                body_of(CancelBody, False),
            )
        },
        "/runs:bulk-cancel": {
            "post": _op(
                "bulkCancelRuns",
                f"Cancel up to {MAX_RUN_IDS} runs, each on its own: one result per id, in request order, even when "
                "every id failed (over the cap: 400 validation_error with details.maxRunIds)",
                {"200": json_response(schema_ref("BulkCancelResponse")), **_errors(400, 401, 403, 409, 413, 415)},
                [_IDEMPOTENCY],
                body_of(BulkCancelBody),
            )
        },
        "/runs/{runId}:fork": {
            "post": _op(
                "forkRun",
                "Fork a run in replay mode. The body is optional.",
                {"201": json_response(_CREATED, "Created", _LOCATION), **_errors(400, 401, 403, 404, 409, 413, 415)},
                [_RUN, _IDEMPOTENCY],
                body_of(ForkBody, False),
            )
        },
    }


def _event_paths() -> dict[str, Any]:
    last_event_id = header_param("Last-Event-ID", "Resume after this sequence number", SEQUENCE)
    return {
        "/runs/{runId}/events": {
            "get": _op(
                "streamRunEvents",
                "Run events as server-sent events, live until the run ends",
                {
                    "200": {"description": "Server-sent events", "content": {"text/event-stream": SSE}},
                    **_errors(400, 401, 403, 404, 429),
                },
                [
                    _RUN,
                    last_event_id,
                    query_param("lastEventId", "Same as Last-Event-ID (for EventSource)", SEQUENCE),
                    query_param(
                        "streamMode",
                        "updates, debug or both (another mode is 400 unsupported_stream_mode)",
                        {"enum": ["updates", "debug", "updates,debug", "debug,updates"]},
                    ),
                    query_param("bufferMs", "Gather events into batch frames for up to this long", bounded(BUFFER_MS)),
                ],
            )
        },
        "/runs/{runId}/events/poll": {
            "get": _op(
                "pollRunEvents",
                "Long-poll run events after a sequence number",
                {"200": json_response(_POLL), **_errors(400, 401, 403, 404)},
                [
                    _RUN,
                    query_param("afterSequence", "After this sequence number", bounded(AFTER_SEQUENCE)),
                    query_param("timeout", "Wait up to this many seconds (default 30)", bounded(POLL_TIMEOUT_S)),
                ],
            )
        },
    }


def _interrupt_paths() -> dict[str, Any]:
    token = path_param("token", "A signed link token (ow2.<alg>.<kid>.<payload>.<mac>, or a v1 token)")
    answered = {
        "200": json_response(schema_ref("ResolveResponse")),
        **_errors(400, 401, 403, 404, 409, 410, 413, 415, 422),
    }
    return {
        "/runs/{runId}/interrupts/{nodeId}": {
            "post": _op(
                "resolveInterruptByRun",
                "Answer a run's open interrupt by its address",
                answered,
                [_RUN, path_param("nodeId", "The interrupt's address"), _IDEMPOTENCY],
                body_of(ResolveBody),
            )
        },
        "/interrupts": {
            "get": _op(
                "listPendingInterrupts",
                "The caller's pending interrupts",
                {"200": json_response(_OBJECT), **_errors(400, 401, 403)},
                [
                    query_param("kind", "Filter (empty: every kind)", {"enum": ["", *kinds.KINDS]}),
                    query_param(
                        "status",
                        "Filter (empty: pending)",
                        {"enum": ["", "pending", "resolved", "expired", "cancelled"]},
                    ),
                    query_param("limit", "Page size (default 50)", bounded(PAGE_LIMIT)),
                    query_param("cursor", "Next page (opaque, from nextCursor)"),
                ],
            )
        },
        "/interrupts/{token}": {
            "get": _op(
                "inspectInterruptByToken",
                "The interrupt a signed link points at",
                {"200": json_response(schema_ref("InterruptInspection")), **_errors(401, 404, 410)},
                [token],
                auth=False,
            ),
            "post": _op(
                "resolveInterruptByToken",
                "Answer the interrupt a signed link points at",
                answered,
                [token, _IDEMPOTENCY],
                body_of(ResolveBody),
                auth=False,
            ),
        },
    }


def _error_envelope() -> dict[str, Any]:
    """The vendored v2 error envelope, its one reference pointed inside the document."""

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: rewrite(v) for k, v in node.items() if k not in ("$id", "$schema")}
            if node.get("$ref") == "ids.schema.json#/$defs/eventId":
                out["$ref"] = "#/components/schemas/EventId"
            return out
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        return node

    envelope: dict[str, Any] = rewrite(spec_v2.schema("error-envelope.schema.json"))
    return envelope


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the v2 surface this host serves."""
    schemas: dict[str, Any] = {"ErrorEnvelope": _error_envelope(), **component_schemas()}
    schemas["EventId"] = spec_v2.schema("ids.schema.json")["$defs"]["eventId"]
    for model in (CreateRunBodyV2, ResolveBody, CancelBody, BulkCancelBody, ForkBody, RegisterBody, RotateBody):
        body_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(body_schema.pop("$defs", {}))
        schemas[model.__name__] = body_schema
    meta = {"200": json_response(_OBJECT), **_errors()}
    paths: dict[str, Any] = {
        "/.well-known/openwop": {
            "get": _op("getCapabilities", "Discovery (OpenWOP-Version selects the representation)", meta, auth=False)
        },
        "/openapi.json": {"get": _op("getOpenApi", "This document", meta, auth=False)},
        **_run_paths(),
        **_event_paths(),
        **_interrupt_paths(),
        **webhook_paths(_op, _errors),
    }
    return {
        # No jsonSchemaDialect: the default (OpenAPI 3.1's base dialect, JSON Schema 2020-12 with the OpenAPI
        # vocabulary) reads these schemas alike, and Swagger UI at /docs/ flags any other value as unsupported.
        "openapi": "3.1.0",
        "info": {
            "title": "openwop-bridge (OpenWOP v2)",
            "version": ENGINE_VERSION.split("/")[1],
            "description": "OpenWOP 2.0 at root paths, beside the /v1 surface, over the same runs.",
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "API key"}},
        },
        "security": [{"bearer": []}],
    }
