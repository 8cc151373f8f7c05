"""The words the v2 OpenAPI document describes operations with: errors, headers, path ids, bodies.

Every v2 operation's declaration (:mod:`.routes`, :mod:`.bulk`, :mod:`.webhooks`) builds its
responses and parameters from these, so each says alike what a v2 error is, what an
``Idempotency-Key`` may be and how a run id is spelled.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.host.http.openapi_ops import header_param, json_response, path_param, schema_ref

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


def errors(*codes: int) -> dict[str, Any]:
    """The v2 error responses for ``codes`` (and :data:`_ALWAYS`), each the v2 envelope."""
    out: dict[str, Any] = {}
    for code in sorted({*codes, *_ALWAYS}):
        out[str(code)] = json_response(schema_ref("ErrorEnvelope"), _ERRORS[code])
    if 401 in codes:
        out["401"]["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}}}
    for code in (409, 429, 503):
        if str(code) in out:
            out[str(code)]["headers"] = {"Retry-After": {"schema": {"type": "string"}, "description": "seconds"}}
    return out


#: Every v2 operation's last parameter.
VERSION = header_param(
    "OpenWOP-Version",
    "The contract asked for. This document describes major 2; another major this host does not "
    "serve is 406 protocol_version_unsupported, and major 1 is served by the /v1 twin of the path.",
    {"type": "string", "pattern": "^2(\\.(0|[1-9][0-9]*))?$"},
)
IDEMPOTENCY = header_param(
    "Idempotency-Key",
    "Retry safely (v2 idempotency rules): 22-128 of A-Z a-z 0-9 . _ ~ -; another spelling is 400 "
    "idempotency_key_invalid. A replay carries OpenWOP-Idempotent-Replay: true.",
    {"type": "string", "pattern": "^[A-Za-z0-9._~-]{22,128}$"},
)
#: A bare id (the opaque segment, or the v1 id) or a projected tenant-bound id (:mod:`.ids`).
BOUND_SEGMENT = {
    "type": "string",
    "pattern": "^(?:[A-Za-z0-9._-]{1,128}|(?:anon~3[Aa])?[A-Za-z0-9._-]{1,128}~2[Ff][A-Za-z0-9._-]{16,128})$",
}


def bound_param(name: str, description: str) -> dict[str, Any]:
    """A path parameter holding a tenant-bound id projected to one segment (:data:`BOUND_SEGMENT`)."""
    return {**path_param(name, description), "schema": dict(BOUND_SEGMENT)}


RUN = bound_param("runId", "The tenant-bound run id projected to one segment (acme~2Fr-1), or a v1 run id")
OBJECT: dict[str, Any] = {"type": "object"}
#: What a discovery or document operation answers.
META = {"200": json_response(OBJECT), **errors()}
