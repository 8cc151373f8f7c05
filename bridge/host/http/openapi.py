"""``GET /v1/openapi.json``: OpenAPI 3.1 for the whole surface.

Request bodies come from the same pydantic models that validate them; the
OpenWOP documents (RunSnapshot, RunEventDoc, InterruptPayload, ErrorEnvelope)
are the vendored official schemas, embedded under their ``$id``.

Routes served next to the REST surface (the web pages, adapters mounted by
plugins) describe themselves with *fragments*: ``{"paths": …, "components":
{"schemas": …}}`` merged into the document by :func:`openapi_document`, so the
document lists what the host actually serves and ``bridge`` never imports an
adapter.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from bridge import spec
from bridge.core.events import ENGINE_VERSION
from bridge.host.http.body import CancelBody, CreateRunBody, ForkBody, LinkBody, ResolveBody
from bridge.host.http.deps import EVENTS_LIMIT, LAST_SEQUENCE, PAGE_LIMIT, POLL_TIMEOUT_S

_EMBEDDED = {
    "ErrorEnvelope": "error-envelope.schema.json",
    "RunSnapshot": "run-snapshot.schema.json",
    "RunEventDoc": "run-event.schema.json",
    "InterruptPayload": "suspend-request.schema.json",
    "WorkflowDefinition": "workflow-definition.schema.json",
    "Capabilities": "capabilities.schema.json",
    "AgentRef": "agent-ref.schema.json",
    "PromptRef": "prompt-ref.schema.json",
}


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _embedded_schemas() -> dict[str, Any]:
    """The official schemas (and everything they reference) with every ``$ref`` rewritten
    to a pointer inside this document, so tools that ignore embedded ``$id`` resolve them."""
    names = {file: name for name, file in _EMBEDDED.items()}
    pending = list(names)
    while pending:
        for ref in _refs(spec.schema(pending.pop())):
            target = ref.split("#", 1)[0].rsplit("/", 1)[-1]
            if target.endswith(".json") and target not in names:
                names[target] = str(spec.schema(target).get("title", target)).replace(" ", "")
                pending.append(target)

    def rewrite(node: Any, file: str) -> Any:
        if isinstance(node, dict):
            out = {k: rewrite(v, file) for k, v in node.items() if k not in ("$id", "$schema")}
            ref = node.get("$ref")
            if isinstance(ref, str):
                target, _, fragment = ref.partition("#")
                target_file = target.rsplit("/", 1)[-1] if target else file
                out["$ref"] = f"#/components/schemas/{names[target_file]}{fragment}"
            return out
        if isinstance(node, list):
            return [rewrite(v, file) for v in node]
        return node

    return {name: rewrite(spec.schema(file), file) for file, name in names.items()}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str = "OK", headers: dict[str, Any] | None = None) -> dict[str, Any]:
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
    503: "store_unavailable: the database is unreachable for now (Retry-After)",
}


def error_responses(*codes: int, text: Mapping[int, str] | None = None) -> dict[str, Any]:
    """Error responses (OpenWOP error envelopes) for ``codes``; ``text`` overrides their descriptions."""
    described = {**_ERROR_TEXT, **(text or {})}
    out = {str(c): _json(_ref("ErrorEnvelope"), described.get(c, "error")) for c in codes}
    if 401 in codes:
        out["401"]["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "Bearer"}}
    if 503 in codes:
        out["503"]["headers"] = {"Retry-After": {"schema": {"type": "string"}, "description": "seconds"}}
    return out


_errors = error_responses

_IDEMPOTENCY_409 = "idempotency_key_mismatch / idempotency_in_flight (Retry-After)"
_ANSWER_409 = "interrupt_already_resolved / " + _IDEMPOTENCY_409


def _body(model: Any, required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": _ref(model.__name__)}}}


def _op(
    summary: str,
    responses: dict[str, Any],
    *,
    body: dict[str, Any] | None = None,
    params: list[dict[str, Any]] | None = None,
    auth: bool = True,
    tag: str = "runs",
    store: bool = True,
) -> dict[str, Any]:
    if store:
        responses = {**responses, **_errors(503)}
    op: dict[str, Any] = {"summary": summary, "tags": [tag], "responses": responses}
    if body is not None:
        op["requestBody"] = body
    if params:
        op["parameters"] = params
    if not auth:
        op["security"] = []
    return op


def _path(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "description": description, "schema": {"type": "string"}}


def _query(name: str, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema or {"type": "string"},
    }


def _bounded(bounds: Mapping[str, int]) -> dict[str, Any]:
    return {"type": "integer", "minimum": bounds["low"], "maximum": bounds["high"]}


def _idempotency_key() -> dict[str, Any]:
    return {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "description": "Retry safely: the same key with the same request replays the first response (status, body "
        "and OpenWOP-Idempotent-Replay: true); the same key with another request is 409 idempotency_key_mismatch, "
        "and a retry while the first is still handled is 409 idempotency_in_flight. Keys belong to the caller and "
        "the endpoint.",
        "schema": {"type": "string", "pattern": "^[\\x21-\\x7e]{1,255}$"},
    }


#: ``Last-Event-ID`` (or ``?lastEventId=``): a sequence number; ``-1`` or empty means from the start.
_SEQUENCE = {"type": "string", "pattern": "^(|-1|0|[1-9][0-9]{0,14})$"}

_SSE = {"schema": {"type": "string"}}


def openapi_document(fragments: Sequence[Mapping[str, Any]] = (), *, link_page: bool = False) -> dict[str, Any]:
    """The OpenAPI 3.1 document, with the ``fragments`` of the extra routes merged in.

    ``link_page``: ``GET /v1/interrupts/{token}`` also answers ``text/html`` (the
    signed-link page). A fragment that documents an operation or schema already
    documented differently is a programming error (``ValueError``).
    """
    run_id = _path("runId", "The run id")
    node_id = _path("nodeId", "The interrupt's address (its nodeId)")
    token = _path("token", "A signed interrupt token")
    any_obj = {"type": "object"}
    schemas = _embedded_schemas()
    for model in (CreateRunBody, ResolveBody, CancelBody, ForkBody, LinkBody):
        body_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(body_schema.pop("$defs", {}))
        schemas[model.__name__] = body_schema
    location = {"Location": {"schema": {"type": "string"}, "description": "The new run's URL"}}
    inspect_content: dict[str, Any] = {"application/json": {"schema": any_obj}}
    if link_page:
        inspect_content["text/html"] = {"schema": {"type": "string"}}
    # The link page shows an unusable link as a page with the status the JSON answer would have had.
    inspect_errors = _errors(404, 409, 410)
    if link_page:
        for response in inspect_errors.values():
            response["content"]["text/html"] = {"schema": {"type": "string"}}
    paths: dict[str, Any] = {
        "/.well-known/openwop": {
            "get": _op(
                "Discovery: capabilities of this host",
                {"200": _json(_ref("Capabilities")), "304": {"description": "Not modified"}},
                auth=False,
                tag="discovery",
                store=False,
            )
        },
        "/v1/openapi.json": {
            "get": _op("This document", {"200": _json(any_obj)}, auth=False, tag="discovery", store=False)
        },
        "/healthz": {
            "get": _op(
                "Liveness: 200 once the engine is serving",
                {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {"status": {"const": "ok"}, "instance": {"type": "string"}},
                            "required": ["status", "instance"],
                        }
                    )
                },
                auth=False,
                tag="discovery",
                store=False,
            )
        },
        "/v1/workflows": {
            "get": _op("List loaded workflows", {"200": _json(any_obj), **_errors(401, 403)}, tag="workflows")
        },
        "/v1/workflows/{workflowId}": {
            "get": _op(
                "One workflow definition",
                {"200": _json(_ref("WorkflowDefinition")), **_errors(401, 403, 404)},
                params=[_path("workflowId", "Workflow id")],
                tag="workflows",
            )
        },
        "/v1/runs": {
            "post": _op(
                "Start a run",
                {
                    "201": _json(any_obj, "Created", location),
                    **_errors(400, 401, 403, 404, 409, 413, 415, text={409: _IDEMPOTENCY_409}),
                },
                body=_body(CreateRunBody),
                params=[_idempotency_key()],
            ),
            "get": _op(
                "List runs of the caller's tenant",
                {"200": _json(any_obj), **_errors(400, 401, 403)},
                params=[
                    _query("workflowId", "Filter"),
                    _query("status", "Filter"),
                    _query("limit", "Page size (default 50)", _bounded(PAGE_LIMIT)),
                    _query("cursor", "Next page (opaque, from nextCursor); a malformed cursor is 400"),
                ],
            ),
        },
        "/v1/runs/{runId}": {
            "get": _op("Run snapshot", {"200": _json(_ref("RunSnapshot")), **_errors(401, 403, 404)}, params=[run_id])
        },
        "/v1/runs/{runId}/cancel": {
            "post": _op(
                "Cancel a run (idempotent on terminal runs). The body is optional; when present it is an object.",
                {"200": _json(any_obj), **_errors(400, 401, 403, 404, 413, 415)},
                body=_body(CancelBody, False),
                params=[run_id],
            )
        },
        "/v1/runs/{runId}:fork": {
            "post": _op(
                "Fork a run in replay mode. The body is optional; when present it is an object.",
                {"201": _json(any_obj, "Created", location), **_errors(400, 401, 403, 404, 409, 413, 415)},
                body=_body(ForkBody, False),
                params=[run_id],
            )
        },
        "/v1/runs/{runId}/events": {
            "get": _op(
                "Run events: SSE (text/event-stream), or {events} under Accept: application/json",
                {
                    "200": {
                        "description": "Events",
                        "content": {
                            "text/event-stream": _SSE,
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"events": {"type": "array", "items": _ref("RunEventDoc")}},
                                }
                            },
                        },
                    },
                    **_errors(400, 401, 403, 404),
                },
                params=[
                    run_id,
                    {
                        "name": "Last-Event-ID",
                        "in": "header",
                        "required": False,
                        "description": "Resume after this sequence number",
                        "schema": _SEQUENCE,
                    },
                    _query("lastEventId", "Same as the Last-Event-ID header (for EventSource)", _SEQUENCE),
                    _query("limit", "At most this many events (JSON only; default 10000)", _bounded(EVENTS_LIMIT)),
                ],
            ),
        },
        "/v1/runs/{runId}/events/poll": {
            "get": _op(
                "Long-poll run events",
                {"200": _json(any_obj), **_errors(400, 401, 403, 404)},
                params=[
                    run_id,
                    _query("lastSequence", "After this sequence number", _bounded(LAST_SEQUENCE)),
                    _query("timeout", "Wait up to this many seconds for a first event", _bounded(POLL_TIMEOUT_S)),
                ],
            )
        },
        "/v1/runs/{runId}/audit": {
            "get": _op("Audit entries of a run", {"200": _json(any_obj), **_errors(401, 403, 404)}, params=[run_id])
        },
        "/v1/runs/{runId}/interrupts/{nodeId}": {
            "post": _op(
                "Resolve an interrupt (scope approvals:respond)",
                {
                    "200": _json(any_obj),
                    **_errors(
                        400,
                        401,
                        403,
                        404,
                        409,
                        410,
                        413,
                        415,
                        422,
                        text={409: _ANSWER_409, 422: "interrupt_cancelled / correlation_mismatch"},
                    ),
                },
                body=_body(ResolveBody),
                params=[run_id, node_id, _idempotency_key()],
                tag="interrupts",
            ),
            "get": _op(
                "The latest interrupt at this address",
                {"200": _json(any_obj), **_errors(401, 403, 404)},
                params=[run_id, node_id],
                tag="interrupts",
            ),
        },
        "/v1/runs/{runId}/interrupts/{nodeId}/cancel": {
            "post": _op(
                "Cancel one interrupt (approvals fail closed). The body is optional; when present it is an object.",
                {"200": _json(any_obj), **_errors(400, 401, 403, 404, 409, 413, 415, 422)},
                body=_body(CancelBody, False),
                params=[run_id, node_id],
                tag="interrupts",
            )
        },
        "/v1/runs/{runId}/interrupts/{nodeId}/links": {
            "post": _op(
                "Mint a signed link for an interrupt. The body is optional; when present it is an object.",
                {"201": _json(any_obj, "Created"), **_errors(400, 401, 403, 404, 409, 413, 415)},
                body=_body(LinkBody, False),
                params=[run_id, node_id],
                tag="interrupts",
            )
        },
        "/v1/runs/{runId}/approvals/{nodeId}": {
            "post": _op(
                "Legacy approval endpoint: bare {action} or {decision} body",
                {
                    "200": _json(any_obj),
                    **_errors(
                        400,
                        401,
                        403,
                        404,
                        409,
                        410,
                        413,
                        415,
                        422,
                        text={
                            409: "interrupt_cancelled (the run was cancelled) / " + _ANSWER_409,
                            422: "correlation_mismatch",
                        },
                    ),
                },
                body={"required": True, "content": {"application/json": {"schema": any_obj}}},
                params=[run_id, node_id, _idempotency_key()],
                tag="interrupts",
            )
        },
        "/v1/interrupts": {
            "get": _op(
                "Pending-interrupts inbox",
                {"200": _json(any_obj), **_errors(400, 401, 403)},
                params=[
                    _query("kind", "Filter by kind"),
                    _query("status", "pending (default)"),
                    _query("limit", "Page size (default 50)", _bounded(PAGE_LIMIT)),
                    _query("cursor", "Next page (opaque, from nextCursor); a malformed cursor is 400"),
                ],
                tag="interrupts",
            )
        },
        "/v1/interrupts/{token}": {
            "get": _op(
                "Inspect a signed link" + (" (a page under Accept: text/html)" if link_page else ""),
                {"200": {"description": "OK", "content": inspect_content}, **inspect_errors},
                params=[token],
                auth=False,
                tag="interrupts",
            ),
            "post": _op(
                "Resolve through a signed link",
                {
                    "200": _json(any_obj),
                    **_errors(
                        400,
                        401,
                        403,
                        404,
                        409,
                        410,
                        413,
                        415,
                        422,
                        text={409: _ANSWER_409, 422: "interrupt_cancelled / correlation_mismatch"},
                    ),
                },
                body=_body(ResolveBody),
                params=[token, _idempotency_key()],
                auth=False,
                tag="interrupts",
            ),
        },
    }
    document = {
        "openapi": "3.1.0",
        "info": {
            "title": "openwop-bridge",
            "version": ENGINE_VERSION.split("/")[1],
            "description": "OpenWOP v1.1 host: runs, interrupts, signed links, events.",
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "API key"}},
        },
        "security": [{"bearer": []}],
    }
    for fragment in fragments:
        merge_fragment(document, fragment)
    return document


def merge_fragment(document: dict[str, Any], fragment: Mapping[str, Any]) -> None:
    """Add a fragment's paths and component schemas to ``document`` (``ValueError`` on a clash)."""
    for path, operations in fragment.get("paths", {}).items():
        target = document["paths"].setdefault(path, {})
        for method, operation in operations.items():
            if method in target:
                raise ValueError(f"{method.upper()} {path} is documented twice")
            target[method] = copy.deepcopy(operation)
    schemas = document["components"]["schemas"]
    for name, schema in fragment.get("components", {}).get("schemas", {}).items():
        if name in schemas and schemas[name] != schema:
            raise ValueError(f"schema {name!r} is documented twice, differently")
        schemas[name] = copy.deepcopy(schema)


def web_fragment() -> dict[str, Any]:
    """The operator inbox's routes (``bridge.host.web.web_routes``)."""
    html = {"text/html": {"schema": {"type": "string"}}}
    return {
        "paths": {
            "/ui": {
                "get": _op(
                    "Redirects to /ui/",
                    {"308": {"description": "To ui/", "headers": {"Location": {"schema": {"type": "string"}}}}},
                    auth=False,
                    tag="web",
                    store=False,
                )
            },
            "/ui/": {
                "get": _op(
                    "The operator inbox page (signs in from the browser)",
                    {"200": {"description": "The page", "content": html}},
                    auth=False,
                    tag="web",
                    store=False,
                )
            },
            "/ui/api/me": {
                "get": _op(
                    "The signed-in principal and what its key allows",
                    {"200": _json({"type": "object"}), **_errors(401)},
                    tag="web",
                    store=False,
                )
            },
            "/ui/api/inbox/events": {
                "get": _op(
                    "event: changed when the caller's inbox may have changed (SSE, ends after a while)",
                    {
                        "200": {"description": "Server-sent events", "content": {"text/event-stream": _SSE}},
                        **_errors(401, 403),
                    },
                    tag="web",
                )
            },
            "/ui/static/{path}": {
                "get": _op(
                    "The pages' scripts and styles",
                    {
                        "200": {"description": "The file", "content": {"*/*": {"schema": {"type": "string"}}}},
                        "304": {"description": "Not modified"},
                        **_errors(404),
                    },
                    params=[_path("path", "File name")],
                    auth=False,
                    tag="web",
                    store=False,
                )
            },
        }
    }
