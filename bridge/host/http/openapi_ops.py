"""The pieces OpenAPI operations are built from: responses, parameters, bodies and error envelopes.

Shared by the route tables' declarations (:mod:`openwop_bridge.host.http.routing`), the web
fragment and adapters' fragments (``error_responses``), so every operation
describes errors, idempotency and the store's 503 the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def schema_ref(name: str) -> dict[str, str]:
    """A reference to a component schema."""
    return {"$ref": f"#/components/schemas/{name}"}


def json_response(
    schema: dict[str, Any], description: str = "OK", headers: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A JSON response with ``schema`` (and ``headers``)."""
    response: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": schema}}}
    if headers:
        response["headers"] = headers
    return response


_ERROR_TEXT = {
    400: "validation_error",
    401: "unauthenticated",
    403: "forbidden",
    404: "not found (run_not_found, workflow_not_found, interrupt_not_found, not_found)",
    409: "interrupt_already_resolved / conflict",
    410: "interrupt_expired / interrupt_gone",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "interrupt_cancelled / correlation_mismatch",
    429: "rate_limited: more streams or requests than a limit allows (Retry-After)",
    503: "store_unavailable: the database is unreachable for now (Retry-After)",
}


def error_responses(*codes: int, text: Mapping[int, str] | None = None) -> dict[str, Any]:
    """Error responses (OpenWOP error envelopes) for ``codes``; ``text`` overrides their descriptions."""
    described = {**_ERROR_TEXT, **(text or {})}
    out = {str(c): json_response(schema_ref("ErrorEnvelope"), described.get(c, "error")) for c in codes}
    if 401 in codes:
        out["401"]["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "Bearer"}}
    for waits in (429, 503):
        if waits in codes:
            out[str(waits)]["headers"] = {"Retry-After": {"schema": {"type": "string"}, "description": "seconds"}}
    return out


IDEMPOTENCY_409 = "idempotency_key_mismatch / idempotency_in_flight (Retry-After)"
ANSWER_409 = "interrupt_already_resolved / " + IDEMPOTENCY_409


def request_body(model: Any, required: bool = True) -> dict[str, Any]:
    """A JSON request body described by the pydantic ``model``'s component schema."""
    return {"required": required, "content": {"application/json": {"schema": schema_ref(model.__name__)}}}


def operation(
    summary: str,
    responses: dict[str, Any],
    *,
    body: dict[str, Any] | None = None,
    params: list[dict[str, Any]] | None = None,
    auth: bool = True,
    tag: str = "runs",
    store: bool = True,
) -> dict[str, Any]:
    """An operation; ``store``: it reads the store, so it may answer 503; ``auth=False``: open to anyone."""
    if store:
        responses = {**responses, **error_responses(503)}
    op: dict[str, Any] = {"summary": summary, "tags": [tag], "responses": responses}
    if body is not None:
        op["requestBody"] = body
    if params:
        op["parameters"] = params
    if not auth:
        op["security"] = []
    return op


def path_param(name: str, description: str) -> dict[str, Any]:
    """A path parameter."""
    return {"name": name, "in": "path", "required": True, "description": description, "schema": {"type": "string"}}


def query_param(name: str, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """An optional query parameter (a string unless ``schema`` says otherwise)."""
    return _optional_param("query", name, description, schema)


def header_param(name: str, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """An optional request header (a string unless ``schema`` says otherwise)."""
    return _optional_param("header", name, description, schema)


def _optional_param(where: str, name: str, description: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "name": name,
        "in": where,
        "required": False,
        "description": description,
        "schema": schema or {"type": "string"},
    }


def bounded(bounds: Mapping[str, int]) -> dict[str, Any]:
    """An integer schema within ``bounds`` (``low``, ``high``)."""
    return {"type": "integer", "minimum": bounds["low"], "maximum": bounds["high"]}


def passkey_assertion_header() -> dict[str, Any]:
    """The optional ``OpenWOP-Passkey-Assertion`` header (:mod:`openwop_bridge.host.passkeys`)."""
    return header_param(
        "OpenWOP-Passkey-Assertion",
        "A passkey's WebAuthn assertion confirming this very answer (base64url of its JSON), over a challenge from "
        'POST /ui/api/passkeys/challenge; required by a gate that says "assurance": "key-bound" (else 401 '
        "sender_constraint_missing).",
    )


def idempotency_key_header() -> dict[str, Any]:
    """The optional ``Idempotency-Key`` header."""
    return header_param(
        "Idempotency-Key",
        "Retry safely: the same key with the same request replays the first response (status, body "
        "and OpenWOP-Idempotent-Replay: true); the same key with another request is 409 idempotency_key_mismatch, "
        "and a retry while the first is still handled is 409 idempotency_in_flight. Keys belong to the caller and "
        "the endpoint.",
        {"type": "string", "pattern": "^[\\x21-\\x7e]{1,255}$"},
    )


#: ``Last-Event-ID`` (or ``?lastEventId=``): a sequence number; ``-1`` or empty means from the start.
SEQUENCE = {"type": "string", "pattern": "^(|-1|0|[1-9][0-9]{0,14})$"}

SSE = {"schema": {"type": "string"}}
