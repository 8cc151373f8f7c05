"""``GET /v1/openapi.json``: OpenAPI 3.1 for the whole surface.

Request bodies come from the same pydantic models that validate them; the
OpenWOP documents (RunSnapshot, RunEventDoc, InterruptPayload, ErrorEnvelope)
are the vendored official schemas, embedded under their ``$id``.
"""

from __future__ import annotations

import functools
from typing import Any

from bridge import spec
from bridge.events import ENGINE_VERSION
from bridge.http.body import CancelBody, CreateRunBody, ForkBody, LinkBody, ResolveBody

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


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    text = {
        400: "validation_error",
        401: "unauthenticated",
        403: "forbidden",
        404: "not found",
        409: "interrupt_already_resolved",
        410: "interrupt_expired / interrupt_gone",
        413: "payload_too_large",
        415: "unsupported_media_type",
        422: "interrupt_cancelled / correlation_mismatch",
    }
    return {str(c): _json(_ref("ErrorEnvelope"), text.get(c, "error")) for c in codes}


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
) -> dict[str, Any]:
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


def _query(name: str, description: str, kind: str = "string") -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description, "schema": {"type": kind}}


@functools.cache
def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document (cached)."""
    run_id = _path("runId", "The run id")
    node_id = _path("nodeId", "The interrupt's address (its nodeId)")
    token = _path("token", "A signed interrupt token")
    any_obj = {"type": "object"}
    schemas = _embedded_schemas()
    for model in (CreateRunBody, ResolveBody, CancelBody, ForkBody, LinkBody):
        schemas[model.__name__] = model.model_json_schema()
    paths: dict[str, Any] = {
        "/.well-known/openwop": {
            "get": _op(
                "Discovery: capabilities of this host",
                {"200": _json(_ref("Capabilities")), "304": {"description": "Not modified"}},
                auth=False,
                tag="discovery",
            )
        },
        "/v1/openapi.json": {"get": _op("This document", {"200": _json(any_obj)}, auth=False, tag="discovery")},
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
                {"201": _json(any_obj, "Created"), **_errors(400, 401, 403, 404, 413, 415)},
                body=_body(CreateRunBody),
            ),
            "get": _op(
                "List runs of the caller's tenant",
                {"200": _json(any_obj), **_errors(400, 401, 403)},
                params=[
                    _query("workflowId", "Filter"),
                    _query("status", "Filter"),
                    _query("limit", "Page size", "integer"),
                    _query("cursor", "Next page"),
                ],
            ),
        },
        "/v1/runs/{runId}": {
            "get": _op("Run snapshot", {"200": _json(_ref("RunSnapshot")), **_errors(401, 403, 404)}, params=[run_id])
        },
        "/v1/runs/{runId}/cancel": {
            "post": _op(
                "Cancel a run (idempotent on terminal runs)",
                {"200": _json(any_obj), **_errors(400, 401, 403, 404)},
                body=_body(CancelBody, False),
                params=[run_id],
            )
        },
        "/v1/runs/{runId}:fork": {
            "post": _op(
                "Fork a run in replay mode",
                {"201": _json(any_obj, "Created"), **_errors(400, 401, 403, 404)},
                body=_body(ForkBody, False),
                params=[run_id],
            )
        },
        "/v1/runs/{runId}/events": {
            "get": {
                **_op(
                    "Run events: SSE (text/event-stream) or {events} under Accept: application/json",
                    {
                        "200": {
                            "description": "Events",
                            "content": {
                                "text/event-stream": {"schema": {"type": "string"}},
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {"events": {"type": "array", "items": _ref("RunEventDoc")}},
                                    }
                                },
                            },
                        },
                        **_errors(401, 403, 404),
                    },
                    params=[
                        run_id,
                        {"name": "Last-Event-ID", "in": "header", "required": False, "schema": {"type": "string"}},
                    ],
                ),
            }
        },
        "/v1/runs/{runId}/events/poll": {
            "get": _op(
                "Long-poll run events",
                {"200": _json(any_obj), **_errors(400, 401, 403, 404)},
                params=[
                    run_id,
                    _query("lastSequence", "After", "integer"),
                    _query("timeout", "Wait up to (ms)", "integer"),
                ],
            )
        },
        "/v1/runs/{runId}/audit": {
            "get": _op("Audit entries of a run", {"200": _json(any_obj), **_errors(401, 403, 404)}, params=[run_id])
        },
        "/v1/runs/{runId}/interrupts/{nodeId}": {
            "post": _op(
                "Resolve an interrupt (scope approvals:respond)",
                {"200": _json(any_obj), **_errors(400, 401, 403, 404, 409, 410, 413, 415, 422)},
                body=_body(ResolveBody),
                params=[run_id, node_id],
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
                "Cancel one interrupt (approvals fail closed)",
                {"200": _json(any_obj), **_errors(401, 403, 404, 409)},
                params=[run_id, node_id],
                tag="interrupts",
            )
        },
        "/v1/runs/{runId}/interrupts/{nodeId}/links": {
            "post": _op(
                "Mint a signed link for an interrupt",
                {"201": _json(any_obj, "Created"), **_errors(400, 401, 403, 404, 409)},
                body=_body(LinkBody, False),
                params=[run_id, node_id],
                tag="interrupts",
            )
        },
        "/v1/runs/{runId}/approvals/{nodeId}": {
            "post": _op(
                "Legacy approval endpoint: bare {action} or {decision} body",
                {"200": _json(any_obj), **_errors(400, 401, 403, 404, 409, 422)},
                body={"required": True, "content": {"application/json": {"schema": any_obj}}},
                params=[run_id, node_id],
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
                    _query("limit", "Page size", "integer"),
                    _query("cursor", "Next page"),
                ],
                tag="interrupts",
            )
        },
        "/v1/interrupts/{token}": {
            "get": _op(
                "Inspect a signed link",
                {"200": _json(any_obj), **_errors(404, 409, 410)},
                params=[token],
                auth=False,
                tag="interrupts",
            ),
            "post": _op(
                "Resolve through a signed link",
                {"200": _json(any_obj), **_errors(400, 401, 403, 404, 409, 410, 413, 415, 422)},
                body=_body(ResolveBody),
                params=[token],
                auth=False,
                tag="interrupts",
            ),
        },
    }
    return {
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
