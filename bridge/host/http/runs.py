"""Run routes: create, read, list, cancel, fork, events (SSE, JSON, poll), audit."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from openwop_bridge.core.workflow import thaw
from openwop_bridge.host.http import operations, paged, sse
from openwop_bridge.host.http.body import CancelBody, ForkBody
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
from openwop_bridge.host.http.idempotency import idempotent
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.streams import guarded, guarded_stream
from openwop_bridge.runtime.engine import Engine


def _run_created(request: Request, run_id: str, status: str, **extra: object) -> JSONResponse:
    url = f"{base_url(request)}/v1/runs/{run_id}"
    return JSONResponse(
        {"runId": run_id, "status": status, "eventsUrl": f"{url}/events", "runUrl": url, **extra},
        status_code=201,
        headers={"Location": url},
    )


@idempotent("POST /v1/runs", scope="runs:create")
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
    who.require("runs:read")
    run = await eng.visible_run(run_id, who)
    if whole:
        # ``{events}``: one document, written a page at a time (see :mod:`.paged`), holding a stream's slot.
        document = paged.array_document({}, "events", paged.StoredEvents(eng, run_id, after, limit).pages())
        return await guarded_stream(request, who, run_id, lambda: paged.json_stream(document))
    keepalive = float(request.app.state.keepalive_s)
    stream = operations.event_stream(sse.follow(eng, run_id, after, keepalive_s=keepalive, seen=run))
    return guarded(request, who, run_id, stream)


async def _readable(request: Request) -> tuple[Engine, str]:
    """The engine and the path's run id, once the caller may read runs and sees this one (else 403/404)."""
    who = principal(request)
    who.require("runs:read")
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
    principal(request).require("workflows:read")
    return JSONResponse({"workflows": [wf.describe() for wf in engine(request).workflows()]})


async def get_workflow(request: Request) -> Response:
    """``GET /v1/workflows/{workflowId}``: the definition as loaded."""
    principal(request).require("workflows:read")
    wf = engine(request).workflow(request.path_params["workflow_id"])
    return JSONResponse(thaw(wf.raw))


routes = [
    Route("/v1/workflows", list_workflows, methods=["GET"]),
    Route("/v1/workflows/{workflow_id}", get_workflow, methods=["GET"]),
    Route("/v1/runs", create_run, methods=["POST"]),
    Route("/v1/runs", list_runs, methods=["GET"]),
    Route("/v1/runs/{run_id}:fork", fork_run, methods=["POST"]),
    Route("/v1/runs/{run_id}", get_run, methods=["GET"]),
    Route("/v1/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
    Route("/v1/runs/{run_id}/events", run_events, methods=["GET"]),
    Route("/v1/runs/{run_id}/events/poll", poll_events, methods=["GET"]),
    Route("/v1/runs/{run_id}/audit", run_audit, methods=["GET"]),
    Route("/v1/runs/{run_id}/channels/{name}", run_channel, methods=["GET"]),
]
