"""The ``/v1`` run and workflow operations: create, read, list, cancel, fork, events (SSE, JSON, poll), audit.

Each handler sits beside its declaration in :data:`OPERATIONS` (see :mod:`openwop_bridge.host.http.routing`):
the scope a caller needs, ``Idempotency-Key`` and what the OpenAPI document says of it.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from openwop_bridge.core.workflow import thaw
from openwop_bridge.host.http import operations, paged, sse
from openwop_bridge.host.http.body import CancelBody, CreateRunBody, ForkBody
from openwop_bridge.host.http.deps import (
    CHANNEL_OFFSET,
    EVENTS_LIMIT,
    LAST_SEQUENCE,
    PAGE_LIMIT,
    POLL_TIMEOUT_S,
    base_url,
    engine,
    int_param,
    principal,
)
from openwop_bridge.host.http.idempotency import V1_RULES
from openwop_bridge.host.http.openapi_ops import (
    IDEMPOTENCY_409,
    SEQUENCE,
    SSE,
    bounded,
    error_responses,
    header_param,
    idempotency_key_header,
    json_response,
    path_param,
    query_param,
    schema_ref,
)
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.routing import Operation
from openwop_bridge.host.http.streams import guarded, guarded_stream
from openwop_bridge.runtime.engine import Engine


def _run_created(request: Request, run_id: str, status: str, **extra: object) -> JSONResponse:
    url = f"{base_url(request)}/v1/runs/{run_id}"
    return JSONResponse(
        {"runId": run_id, "status": status, "eventsUrl": f"{url}/events", "runUrl": url, **extra},
        status_code=201,
        headers={"Location": url},
    )


async def create_run(request: Request) -> Response:
    """``POST /v1/runs``."""
    run = await operations.create_run(request, principal(request))
    return _run_created(request, run.run_id, run.status)


async def list_runs(request: Request) -> Response:
    """``GET /v1/runs?workflowId=&status=&limit=&cursor=``."""
    runs, cursor = await operations.list_runs(request, principal(request))
    return JSONResponse(
        {
            "runs": [
                {"runId": r.run_id, "workflowId": r.workflow_id, "status": r.status, "createdAt": r.created_at_ms}
                for r in runs
            ],
            "nextCursor": cursor,
        }
    )


async def get_run(request: Request) -> Response:
    """``GET /v1/runs/{runId}``: the RunSnapshot."""
    who = principal(request)
    snap = await engine(request).snapshot(request.path_params["run_id"], who, base_url=base_url(request))
    return JSONResponse(snap)


async def cancel_run(request: Request) -> Response:
    """``POST /v1/runs/{runId}/cancel``: 200 ``{runId, status}``, also on a terminal run."""
    who = principal(request)
    body = await operations.optional_body(request, CancelBody)
    result = await engine(request).cancel_run(request.path_params["run_id"], who, body.reason)
    return JSONResponse(result)


async def fork_run(request: Request) -> Response:
    """``POST /v1/runs/{runId}:fork {"mode": "replay"}``."""
    who = principal(request)
    body = await operations.optional_body(request, ForkBody)
    source = request.path_params["run_id"]
    run = await engine(request).fork_run(source, who, body.mode, body.fromSeq)
    return _run_created(request, run.run_id, run.status, sourceRunId=source, mode=body.mode, fromSeq=0)


async def run_events(request: Request) -> Response:
    """``GET /v1/runs/{runId}/events``: SSE, or ``{events}`` under ``Accept: application/json``."""
    who = principal(request)
    run_id = request.path_params["run_id"]
    eng = engine(request)
    after = operations.last_event_id(request)
    accept = request.headers.get("accept", "")
    whole = "application/json" in accept and "text/event-stream" not in accept
    limit = int_param(request, "limit", 10_000, **EVENTS_LIMIT) if whole else 0
    run = await eng.visible_run(run_id, who)
    if whole:
        # ``{events}``: one document, written a page at a time (see :mod:`.paged`), holding a stream's slot.
        document = paged.array_document({}, "events", paged.StoredEvents(eng, run_id, after, limit).pages())
        return await guarded_stream(request, who, run_id, lambda: paged.json_stream(document))
    keepalive = float(request.app.state.keepalive_s)
    stream = operations.event_stream(sse.follow(eng, run_id, after, keepalive_s=keepalive, seen=run))
    return guarded(request, who, run_id, stream)


async def _readable(request: Request) -> tuple[Engine, str]:
    """The engine and the path's run id, once the caller sees this run (else 404; the scope is checked before)."""
    who = principal(request)
    run_id = request.path_params["run_id"]
    eng = engine(request)
    await eng.visible_run(run_id, who)
    return eng, run_id


async def poll_events(request: Request) -> Response:
    """``GET /v1/runs/{runId}/events/poll?lastSequence=&timeout=`` (long poll; ``timeout`` in seconds)."""
    eng, run_id = await _readable(request)
    after = int_param(request, "lastSequence", -1, **LAST_SEQUENCE)
    timeout_s = int_param(request, "timeout", 0, **POLL_TIMEOUT_S)
    poll = paged.Poll(eng, run_id, after, timeout_s * 1000)
    document = paged.array_document({}, "events", poll.pages(), poll.trailer)
    return await guarded_stream(request, principal(request), run_id, lambda: paged.json_stream(document))


async def run_audit(request: Request) -> Response:
    """``GET /v1/runs/{runId}/audit``: votes, overrides and denials recorded for a run."""
    eng, run_id = await _readable(request)
    document = paged.array_document({}, "entries", paged.audit_entries(eng, run_id))
    return await guarded_stream(request, principal(request), run_id, lambda: paged.json_stream(document))


async def run_channel(request: Request) -> Response:
    """``GET /v1/runs/{runId}/channels/{name}?offset=&limit=``: a page of a message channel."""
    who = principal(request)
    page = await engine(request).channel(
        request.path_params["run_id"],
        who,
        request.path_params["name"],
        offset=int_param(request, "offset", 0, **CHANNEL_OFFSET),
        limit=int_param(request, "limit", 100, **PAGE_LIMIT),
    )
    return JSONResponse(page)


async def list_workflows(request: Request) -> Response:
    """``GET /v1/workflows``."""
    return JSONResponse({"workflows": [wf.describe() for wf in engine(request).workflows()]})


async def get_workflow(request: Request) -> Response:
    """``GET /v1/workflows/{workflowId}``: the definition as loaded."""
    wf = engine(request).workflow(request.path_params["workflow_id"])
    return JSONResponse(thaw(wf.raw))


_ANY = {"type": "object"}
_RUN_ID = (path_param("runId", "The run id"),)
_LOCATION = {"Location": {"schema": {"type": "string"}, "description": "The new run's URL"}}
_WORKFLOWS = ("workflows",)
_RUNS = ("runs",)
#: ``GET /v1/runs/{runId}/channels/{name}``: one page of the channel's entries.
CHANNEL_PAGE: dict[str, object] = {
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
_EVENTS_200 = {
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
}

#: The run and workflow operations, in the order their routes match (``:fork`` before a bare run id).
OPERATIONS = (
    Operation(
        "GET",
        "/v1/workflows",
        list_workflows,
        "List loaded workflows",
        {"200": json_response(_ANY), **error_responses(401, 403, 503)},
        scope="workflows:read",
        tags=_WORKFLOWS,
    ),
    Operation(
        "GET",
        "/v1/workflows/{workflowId}",
        get_workflow,
        "One workflow definition",
        {"200": json_response(schema_ref("WorkflowDefinition")), **error_responses(401, 403, 404, 503)},
        scope="workflows:read",
        params=(path_param("workflowId", "Workflow id"),),
        tags=_WORKFLOWS,
    ),
    Operation(
        "POST",
        "/v1/runs",
        create_run,
        "Start a run",
        {
            "201": json_response(_ANY, "Created", _LOCATION),
            **error_responses(400, 401, 403, 404, 409, 413, 415, 503, text={409: IDEMPOTENCY_409}),
        },
        scope="runs:create",
        idempotency=V1_RULES,
        body=CreateRunBody,
        params=(idempotency_key_header(),),
        tags=_RUNS,
    ),
    Operation(
        "GET",
        "/v1/runs",
        list_runs,
        "List runs of the caller's tenant",
        {"200": json_response(_ANY), **error_responses(400, 401, 403, 503)},
        scope="runs:read",
        params=(
            query_param("workflowId", "Filter"),
            query_param("status", "Filter"),
            query_param("limit", "Page size (default 50)", bounded(PAGE_LIMIT)),
            query_param("cursor", "Next page (opaque, from nextCursor); a malformed cursor is 400"),
        ),
        tags=_RUNS,
    ),
    Operation(
        "POST",
        "/v1/runs/{runId}:fork",
        fork_run,
        "Fork a run in replay mode. The body is optional; when present it is an object.",
        {"201": json_response(_ANY, "Created", _LOCATION), **error_responses(400, 401, 403, 404, 409, 413, 415, 503)},
        scope="runs:create",
        body=ForkBody,
        body_required=False,
        params=_RUN_ID,
        tags=_RUNS,
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}",
        get_run,
        "Run snapshot",
        {"200": json_response(schema_ref("RunSnapshot")), **error_responses(401, 403, 404, 503)},
        scope="runs:read",
        params=_RUN_ID,
        tags=_RUNS,
    ),
    Operation(
        "POST",
        "/v1/runs/{runId}/cancel",
        cancel_run,
        "Cancel a run (idempotent on terminal runs). The body is optional; when present it is an object.",
        {"200": json_response(_ANY), **error_responses(400, 401, 403, 404, 413, 415, 503)},
        scope="runs:cancel",
        body=CancelBody,
        body_required=False,
        params=_RUN_ID,
        tags=_RUNS,
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/events",
        run_events,
        "Run events: SSE (text/event-stream), or {events} under Accept: application/json",
        {"200": _EVENTS_200, **error_responses(400, 401, 403, 404, 429, 503)},
        scope="runs:read",
        params=(
            *_RUN_ID,
            header_param("Last-Event-ID", "Resume after this sequence number", SEQUENCE),
            query_param("lastEventId", "Same as the Last-Event-ID header (for EventSource)", SEQUENCE),
            query_param("limit", "At most this many events (JSON only; default 10000)", bounded(EVENTS_LIMIT)),
        ),
        tags=_RUNS,
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/events/poll",
        poll_events,
        "Long-poll run events",
        {"200": json_response(_ANY), **error_responses(400, 401, 403, 404, 503)},
        scope="runs:read",
        params=(
            *_RUN_ID,
            query_param("lastSequence", "After this sequence number", bounded(LAST_SEQUENCE)),
            query_param("timeout", "Wait up to this many seconds for a first event", bounded(POLL_TIMEOUT_S)),
        ),
        tags=_RUNS,
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/audit",
        run_audit,
        "Audit entries of a run",
        {"200": json_response(_ANY), **error_responses(401, 403, 404, 503)},
        scope="runs:read",
        params=_RUN_ID,
        tags=_RUNS,
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/channels/{name}",
        run_channel,
        "A page of a message channel (a snapshot shows only its last entries)",
        {"200": json_response(CHANNEL_PAGE), **error_responses(400, 401, 403, 404, 503)},
        scope="runs:read",
        params=(
            *_RUN_ID,
            path_param("name", "The channel's name"),
            query_param("offset", "Index of the first entry (default 0)", bounded(CHANNEL_OFFSET)),
            query_param("limit", "Page size (default 100)", bounded(PAGE_LIMIT)),
        ),
        tags=_RUNS,
    ),
)
