"""The OpenWOP v1 paths of the OpenAPI document, one builder per group of routes."""

from __future__ import annotations

from typing import Any

from openwop_bridge.host.http.body import CancelBody, CreateRunBody, ForkBody, LinkBody, ResolveBody
from openwop_bridge.host.http.deps import CHANNEL_OFFSET, EVENTS_LIMIT, LAST_SEQUENCE, PAGE_LIMIT, POLL_TIMEOUT_S
from openwop_bridge.host.http.openapi_ops import (
    ANSWER_409,
    IDEMPOTENCY_409,
    SEQUENCE,
    SSE,
    bounded,
    error_responses,
    header_param,
    idempotency_key_header,
    json_response,
    operation,
    path_param,
    query_param,
    request_body,
    schema_ref,
)


def discovery_paths() -> dict[str, Any]:
    """Discovery, this document and liveness: open to anyone."""
    any_obj = {"type": "object"}
    return {
        "/.well-known/openwop": {
            "get": operation(
                "Discovery: capabilities of this host",
                {"200": json_response(schema_ref("Capabilities")), "304": {"description": "Not modified"}},
                auth=False,
                tag="discovery",
                store=False,
            )
        },
        "/v1/openapi.json": {
            "get": operation("This document", {"200": json_response(any_obj)}, auth=False, tag="discovery", store=False)
        },
        "/metrics": {
            "get": operation(
                "Prometheus metrics (openwop_* series); needs the metrics:read scope",
                {
                    "200": {
                        "description": "Prometheus text exposition",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                    **error_responses(401, 403),
                },
                tag="discovery",
            )
        },
        "/healthz": {
            "get": operation(
                "Liveness: 200 once the engine is serving",
                {
                    "200": json_response(
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
    }


def workflow_paths() -> dict[str, Any]:
    """The loaded workflows."""
    any_obj = {"type": "object"}
    return {
        "/v1/workflows": {
            "get": operation(
                "List loaded workflows", {"200": json_response(any_obj), **error_responses(401, 403)}, tag="workflows"
            )
        },
        "/v1/workflows/{workflowId}": {
            "get": operation(
                "One workflow definition",
                {"200": json_response(schema_ref("WorkflowDefinition")), **error_responses(401, 403, 404)},
                params=[path_param("workflowId", "Workflow id")],
                tag="workflows",
            )
        },
    }


def run_paths() -> dict[str, Any]:
    """Starting, listing, reading, cancelling and forking runs."""
    run_id = path_param("runId", "The run id")
    any_obj = {"type": "object"}
    location = {"Location": {"schema": {"type": "string"}, "description": "The new run's URL"}}
    return {
        "/v1/runs": {
            "post": operation(
                "Start a run",
                {
                    "201": json_response(any_obj, "Created", location),
                    **error_responses(400, 401, 403, 404, 409, 413, 415, text={409: IDEMPOTENCY_409}),
                },
                body=request_body(CreateRunBody),
                params=[idempotency_key_header()],
            ),
            "get": operation(
                "List runs of the caller's tenant",
                {"200": json_response(any_obj), **error_responses(400, 401, 403)},
                params=[
                    query_param("workflowId", "Filter"),
                    query_param("status", "Filter"),
                    query_param("limit", "Page size (default 50)", bounded(PAGE_LIMIT)),
                    query_param("cursor", "Next page (opaque, from nextCursor); a malformed cursor is 400"),
                ],
            ),
        },
        "/v1/runs/{runId}": {
            "get": operation(
                "Run snapshot",
                {"200": json_response(schema_ref("RunSnapshot")), **error_responses(401, 403, 404)},
                params=[run_id],
            )
        },
        "/v1/runs/{runId}/cancel": {
            "post": operation(
                "Cancel a run (idempotent on terminal runs). The body is optional; when present it is an object.",
                {"200": json_response(any_obj), **error_responses(400, 401, 403, 404, 413, 415)},
                body=request_body(CancelBody, False),
                params=[run_id],
            )
        },
        "/v1/runs/{runId}:fork": {
            "post": operation(
                "Fork a run in replay mode. The body is optional; when present it is an object.",
                {
                    "201": json_response(any_obj, "Created", location),
                    **error_responses(400, 401, 403, 404, 409, 413, 415),
                },
                body=request_body(ForkBody, False),
                params=[run_id],
            )
        },
    }


def history_paths() -> dict[str, Any]:
    """A run's history: its events (streamed, read or long-polled) and its audit entries."""
    run_id = path_param("runId", "The run id")
    any_obj = {"type": "object"}
    return {
        "/v1/runs/{runId}/events": {
            "get": operation(
                "Run events: SSE (text/event-stream), or {events} under Accept: application/json",
                {
                    "200": {
                        "description": "Events",
                        "content": {
                            "text/event-stream": SSE,
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"events": {"type": "array", "items": schema_ref("RunEventDoc")}},
                                }
                            },
                        },
                    },
                    **error_responses(400, 401, 403, 404, 429),
                },
                params=[
                    run_id,
                    header_param("Last-Event-ID", "Resume after this sequence number", SEQUENCE),
                    query_param("lastEventId", "Same as the Last-Event-ID header (for EventSource)", SEQUENCE),
                    query_param("limit", "At most this many events (JSON only; default 10000)", bounded(EVENTS_LIMIT)),
                ],
            ),
        },
        "/v1/runs/{runId}/events/poll": {
            "get": operation(
                "Long-poll run events",
                {"200": json_response(any_obj), **error_responses(400, 401, 403, 404)},
                params=[
                    run_id,
                    query_param("lastSequence", "After this sequence number", bounded(LAST_SEQUENCE)),
                    query_param("timeout", "Wait up to this many seconds for a first event", bounded(POLL_TIMEOUT_S)),
                ],
            )
        },
        "/v1/runs/{runId}/audit": {
            "get": operation(
                "Audit entries of a run",
                {"200": json_response(any_obj), **error_responses(401, 403, 404)},
                params=[run_id],
            )
        },
        "/v1/runs/{runId}/channels/{name}": {
            "get": operation(
                "A page of a message channel (a snapshot shows only its last entries)",
                {"200": json_response(CHANNEL_PAGE), **error_responses(400, 401, 403, 404)},
                params=[
                    run_id,
                    path_param("name", "The channel's name"),
                    query_param("offset", "Index of the first entry (default 0)", bounded(CHANNEL_OFFSET)),
                    query_param("limit", "Page size (default 100)", bounded(PAGE_LIMIT)),
                ],
            )
        },
    }


#: ``GET /v1/runs/{runId}/channels/{name}``: one page of the channel's entries.
CHANNEL_PAGE: dict[str, Any] = {
    "type": "object",
    "required": ["runId", "channel", "total", "offset", "items"],
    "properties": {
        "runId": {"type": "string"},
        "channel": {"type": "string"},
        "total": {"type": "integer", "minimum": 0},
        "offset": {"type": "integer", "minimum": 0},
        "items": {"type": "array", "items": {"type": "object"}},
        "nextOffset": {"type": "integer", "minimum": 1},
    },
}


def answer_responses(
    *, on_409: str = ANSWER_409, on_422: str = "interrupt_cancelled / correlation_mismatch"
) -> dict[str, Any]:
    """The responses of an answer (by address, legacy approval or link): 200, and each refusal it can meet."""
    return {
        "200": json_response({"type": "object"}),
        **error_responses(400, 401, 403, 404, 409, 410, 413, 415, 422, text={409: on_409, 422: on_422}),
    }


def interrupt_paths() -> dict[str, Any]:
    """A run's interrupts by address: answer, read, cancel, mint links, and the legacy approval endpoint."""
    run_id = path_param("runId", "The run id")
    node_id = path_param("nodeId", "The interrupt's address (its nodeId)")
    any_obj = {"type": "object"}
    return {
        "/v1/runs/{runId}/interrupts/{nodeId}": {
            "post": operation(
                "Resolve an interrupt (scope approvals:respond)",
                answer_responses(),
                body=request_body(ResolveBody),
                params=[run_id, node_id, idempotency_key_header()],
                tag="interrupts",
            ),
            "get": operation(
                "The latest interrupt at this address",
                {"200": json_response(any_obj), **error_responses(401, 403, 404)},
                params=[run_id, node_id],
                tag="interrupts",
            ),
        },
        "/v1/runs/{runId}/interrupts/{nodeId}/cancel": {
            "post": operation(
                "Cancel one interrupt (approvals fail closed). The body is optional; when present it is an object.",
                {"200": json_response(any_obj), **error_responses(400, 401, 403, 404, 409, 413, 415, 422)},
                body=request_body(CancelBody, False),
                params=[run_id, node_id],
                tag="interrupts",
            )
        },
        "/v1/runs/{runId}/interrupts/{nodeId}/links": {
            "post": operation(
                "Mint a signed link for an interrupt. The body is optional; when present it is an object. A resolve "
                "link for a gate that needs several approvals must name its subject (400 otherwise).",
                {"201": json_response(any_obj, "Created"), **error_responses(400, 401, 403, 404, 409, 413, 415)},
                body=request_body(LinkBody, False),
                params=[run_id, node_id],
                tag="interrupts",
            )
        },
        "/v1/runs/{runId}/approvals/{nodeId}": {
            "post": operation(
                "Legacy approval endpoint: bare {action} or {decision} body",
                answer_responses(
                    on_409="interrupt_cancelled (the run was cancelled) / " + ANSWER_409, on_422="correlation_mismatch"
                ),
                body={"required": True, "content": {"application/json": {"schema": any_obj}}},
                params=[run_id, node_id, idempotency_key_header()],
                tag="interrupts",
            )
        },
    }


def inbox_and_link_paths(link_page: bool) -> dict[str, Any]:
    """The pending-interrupts inbox and signed links (``link_page``: the inspect answer also serves a page)."""
    token = path_param("token", "A signed interrupt token")
    any_obj = {"type": "object"}
    inspect_content: dict[str, Any] = {"application/json": {"schema": any_obj}}
    if link_page:
        inspect_content["text/html"] = {"schema": {"type": "string"}}
    # The link page shows an unusable link as a page with the status the JSON answer would have had.
    inspect_errors = error_responses(404, 409, 410)
    if link_page:
        for response in inspect_errors.values():
            response["content"]["text/html"] = {"schema": {"type": "string"}}
    return {
        "/v1/interrupts": {
            "get": operation(
                "Pending-interrupts inbox",
                {"200": json_response(any_obj), **error_responses(400, 401, 403)},
                params=[
                    query_param("kind", "Filter by kind"),
                    query_param(
                        "status",
                        "pending (default)",
                        {"type": "string", "enum": ["pending", "resolved", "expired", "cancelled"]},
                    ),
                    query_param("limit", "Page size (default 50)", bounded(PAGE_LIMIT)),
                    query_param("cursor", "Next page (opaque, from nextCursor); a malformed cursor is 400"),
                ],
                tag="interrupts",
            )
        },
        "/v1/interrupts/{token}": {
            "get": operation(
                "Inspect a signed link" + (" (a page under Accept: text/html)" if link_page else ""),
                {"200": {"description": "OK", "content": inspect_content}, **inspect_errors},
                params=[token],
                auth=False,
                tag="interrupts",
            ),
            "post": operation(
                "Resolve through a signed link",
                answer_responses(),
                body=request_body(ResolveBody),
                params=[token, idempotency_key_header()],
                auth=False,
                tag="interrupts",
            ),
        },
    }
