"""The v2 operations at root paths: the same engine calls as ``/v1``, re-spelled for v2.

Each handler sits beside its declaration in :data:`OPERATIONS` (:mod:`openwop_bridge.host.http.routing`).
Every handler resolves the v2 path id to the engine's id (:mod:`.ids`), calls the
engine exactly as the ``/v1`` route does (the shared :mod:`openwop_bridge.host.http.operations`), and re-spells
the result
(:mod:`.documents`); errors follow the v2 registry (:mod:`.errors`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from starlette.convertors import StringConvertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import Response

from openwop_bridge.core import kinds
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.errors import InterruptNotFoundError
from openwop_bridge.core.records import RunRecord
from openwop_bridge.host.http import operations, paged, sse
from openwop_bridge.host.http.body import CancelBody, ForkBody, ResolveBody, parse, read_json
from openwop_bridge.host.http.deps import PAGE_LIMIT, base_url, engine, int_param, optional_principal, principal
from openwop_bridge.host.http.openapi_ops import (
    SEQUENCE,
    SSE,
    bounded,
    header_param,
    json_response,
    passkey_assertion_header,
    path_param,
    query_param,
    schema_ref,
)
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.routing import Operation
from openwop_bridge.host.http.streams import guarded, guarded_stream
from openwop_bridge.host.v2 import batching, bulk, dedup, documents, events, ids, tokens
from openwop_bridge.host.v2.doc import IDEMPOTENCY, META, OBJECT, RUN, errors
from openwop_bridge.host.v2.idempotency import RULES
from openwop_bridge.runtime.engine import Engine

#: ``afterSequence`` and ``timeout`` (seconds) of the v2 long poll (events.md §Poll).
AFTER_SEQUENCE = {"low": 0, "high": 2**62}
POLL_TIMEOUT_S = {"low": 1, "high": 60}


class RunIdConvertor(StringConvertor):
    """A run id segment that does not end in ``:fork``, so ``GET /runs/{runId}:fork`` is 405, not a run lookup."""

    regex = "[^/]+(?<!:fork)"


register_url_convertor("v2run", RunIdConvertor())


async def _run(request: Request, who: Principal) -> tuple[str, str]:
    """``(engine run id, tenant)`` of the ``{run_id}`` path parameter, visible to ``who`` (else 404)."""
    run = await _run_record(request, who)
    return run.run_id, run.tenant


async def _run_record(request: Request, who: Principal) -> RunRecord:
    """The run the ``{run_id}`` path parameter names, visible to ``who`` (else 404)."""
    return await engine(request).visible_run(ids.resolve_param(request.path_params["run_id"], who), who)


async def _readable_record(request: Request) -> RunRecord:
    """The run the path names (see :func:`_run_record`); the operation's scope (``runs:read``) is checked before."""
    return await _run_record(request, principal(request))


async def _readable_run(request: Request) -> tuple[str, str]:
    """``(engine run id, tenant)`` of :func:`_readable_record`."""
    run = await _readable_record(request)
    return run.run_id, run.tenant


def _created(request: Request, run_id: str, tenant: str, status: str, **extra: Any) -> JSONResponse:
    bound = ids.bind(tenant, run_id)
    url = f"{base_url(request)}/runs/{ids.project(bound)}"
    body = {"runId": bound, "status": status, "eventsUrl": f"{url}/events", "statusUrl": url, **extra}
    return JSONResponse(body, status_code=201, headers={"Location": url})


async def create_run(request: Request) -> Response:
    """``POST /runs``; with ``OpenWOP-Dedup: enforce``, one active run per ``(tenantId, scopeId)`` (:mod:`.dedup`)."""
    who = principal(request)
    body = parse(dedup.CreateRunBodyV2, await read_json(request))
    if not dedup.enforced(request.headers.get(dedup.HEADER)):
        run = await operations.create_run(request, who, body)
        return _created(request, run.run_id, run.tenant, run.status)
    async with dedup.claim(engine(request), who, body) as made:
        run = await operations.create_run(request, who, body)
        made["runId"] = run.run_id
    return _created(request, run.run_id, run.tenant, run.status)


async def list_runs(request: Request) -> Response:
    """``GET /runs``: the caller's runs, newest first, each a v2 snapshot."""
    who = principal(request)
    eng = engine(request)
    page, cursor = await operations.list_runs(request, who)
    url = base_url(request)
    snaps = []
    for run in page:
        snap = await eng.snapshot_of(run, base_url=url, link=eng.link_for(who), reader=who.id)
        snaps.append(documents.snapshot(snap, run.tenant, snap["owner"]["principal"], url, run.spec.get("subject")))
    return JSONResponse({"runs": snaps, **({"nextCursor": cursor} if cursor else {})})


async def get_run(request: Request) -> Response:
    """``GET /runs/{runId}``."""
    who = principal(request)
    run_id, tenant = await _run(request, who)
    url = base_url(request)
    eng = engine(request)
    who.require("runs:read")
    run = await eng.visible_run(run_id, who)
    snap = await eng.snapshot_of(run, base_url=url, link=eng.link_for(who), reader=who.id)
    return JSONResponse(documents.snapshot(snap, tenant, snap["owner"]["principal"], url, run.spec.get("subject")))


async def cancel_run(request: Request) -> Response:
    """``POST /runs/{runId}/cancel``."""
    who = principal(request)
    body = await operations.optional_body(request, CancelBody)
    run_id = ids.resolve_param(request.path_params["run_id"], who)
    return JSONResponse(await bulk.cancel_one(request, who, run_id, body.reason))


async def fork_run(request: Request) -> Response:
    """``POST /runs/{runId}:fork``."""
    who = principal(request)
    body = await operations.optional_body(request, ForkBody)
    source, tenant = await _run(request, who)
    run = await engine(request).fork_run(source, who, body.mode, body.fromSeq)
    return _created(
        request, run.run_id, run.tenant, run.status, sourceRunId=ids.bind(tenant, source), mode=body.mode, fromSeq=0
    )


async def _interrupts_of(eng: Engine, run_id: str) -> events.InterruptOf:
    """The interrupt a node held at an event's time, for legacy payloads that do not name it, and the
    subjects votes were cast with."""
    return events.InterruptOf.of(await eng.run_interrupts(run_id))


async def _frames(eng: Engine, seen: RunRecord, after: int, keepalive_s: float) -> AsyncGenerator[sse.Chunk]:
    """The SSE body of a run's events in their v2 shape, live until the run ends (see :func:`sse.chunks`).

    ``seen``: the run as the visibility check read it (see :meth:`Engine.follow`).
    """
    run_id, tenant = seen.run_id, seen.tenant

    async def render(docs: list[dict[str, Any]]) -> bytes:
        lookup = await _interrupts_of(eng, run_id) if any(d["type"] in events.RESOLVED for d in docs) else None
        return b"".join(sse.frame(documents.event(doc, tenant, lookup)) for doc in docs)

    async with aclosing(eng.follow(run_id, after, idle_s=keepalive_s, seen=seen)) as batches:
        async for chunk in sse.chunks(batches, render):
            yield chunk


async def run_events(request: Request) -> Response:
    """``GET /runs/{runId}/events``: SSE resuming after ``Last-Event-ID``."""
    run = await _readable_record(request)
    mode = request.query_params.get("streamMode")
    if mode not in (None, "", "updates", "debug", "updates,debug", "debug,updates"):
        from openwop_bridge.host.v2.errors import v2_envelope

        status, body = v2_envelope(
            "unsupported_stream_mode", "this host streams updates and debug", {"supported": ["updates", "debug"]}, 400
        )
        return JSONResponse(body, status_code=status)
    after = operations.last_event_id(request)
    keepalive = float(request.app.state.keepalive_s)
    buffer_ms = int_param(request, "bufferMs", 0, **batching.BUFFER_MS)
    frames = (
        batching.batched_frames(engine(request), run, after, keepalive, buffer_ms, _interrupts_of)
        if buffer_ms
        else _frames(engine(request), run, after, keepalive)
    )
    return guarded(request, principal(request), run.run_id, operations.event_stream(frames))


async def poll_events(request: Request) -> Response:
    """``GET /runs/{runId}/events/poll?afterSequence=&timeout=`` (seconds, 1..60, default 30)."""
    run_id, tenant = await _readable_run(request)
    raw_after = request.query_params.get("afterSequence")
    after = -1 if raw_after in (None, "") else int_param(request, "afterSequence", 0, **AFTER_SEQUENCE)
    timeout_s = int_param(request, "timeout", 30, **POLL_TIMEOUT_S)
    eng = engine(request)

    async def render(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        lookup = await _interrupts_of(eng, run_id) if any(d["type"] in events.RESOLVED for d in docs) else None
        return [documents.event(doc, tenant, lookup) for doc in docs]

    poll = paged.Poll(eng, run_id, after, timeout_s * 1000, render)

    async def trailer() -> dict[str, Any]:
        return documents.poll_trailer(await eng.run_record(run_id))

    document = paged.array_document(documents.poll_head(run_id, tenant), "events", poll.pages(), trailer)
    return await guarded_stream(request, principal(request), run_id, lambda: paged.json_stream(document))


async def resolve(request: Request) -> Response:
    """``POST /runs/{runId}/interrupts/{nodeId} {resumeValue}``."""
    who = principal(request)
    body = parse(ResolveBody, await read_json(request))
    run_id, tenant = await _run(request, who)
    return JSONResponse(_answer(await operations.resolve(request, who, body, run_id), tenant))


def _answer(result: dict[str, Any], tenant: str) -> dict[str, Any]:
    """A resolve result in v2 words: bound ids, and ``decision`` in ``interruptResolved``'s vocabulary."""
    out = dict(result)
    for key in ("runId", "interruptId"):
        if isinstance(out.get(key), str):
            out[key] = ids.bind(tenant, out[key])
    if "decision" in out:
        decision = events.DECISIONS.get(str(out.pop("decision")))
        if decision:
            out["decision"] = decision
    return out


async def _engine_token(request: Request) -> str:
    eng = engine(request)
    presented = request.path_params["token"]
    kids = eng.signer.kids if eng.signer is not None else []
    if presented.startswith(tokens.PREFIX + ".") and presented.split(".")[2:3] and presented.split(".")[2] not in kids:
        await eng.load_signing_keys()  # a key rotated on another instance
        kids = eng.signer.kids if eng.signer is not None else []
    return tokens.to_engine(presented, kids)


async def inspect_token(request: Request) -> Response:
    """``GET /interrupts/{token}``: the ``InterruptPayload`` the link points at."""
    eng = engine(request)
    token = await _engine_token(request)
    try:
        _, record = await eng.verify_token(token)
    except InterruptNotFoundError as exc:
        raise tokens.InterruptTokenInvalidError("this host does not accept the token") from exc
    view = await eng.inspect_token(token, base_url=base_url(request))
    return JSONResponse(_answer(documents.resolved_by(view, record.tenant), record.tenant))


async def resolve_token(request: Request) -> Response:
    """``POST /interrupts/{token} {resumeValue}``."""
    who = optional_principal(request)
    eng = engine(request)
    with operations.counting_refusals(request):
        token = await _engine_token(request)
        try:
            verified = await eng.verify_token(token)
        except InterruptNotFoundError as exc:
            raise tokens.InterruptTokenInvalidError("this host does not accept the token") from exc
        result = await operations.resolve_token(request, who, token, verified)
        return JSONResponse(_answer(result, verified[1].tenant))


async def inbox(request: Request) -> Response:
    """``GET /interrupts?kind=&status=pending``: the pending-interrupts list."""
    who = principal(request)
    url = base_url(request)
    page = await operations.inbox(request, who, url)
    tenant = who.tenant
    items = page.get("interrupts", page.get("items", []))
    key = "interrupts" if "interrupts" in page else "items"
    return JSONResponse({**page, key: [documents.interrupt(v, v.get("tenant", tenant), url) for v in items]})


async def openapi_json(request: Request) -> Response:
    """``GET /openapi.json``: the v2 operations this host serves."""
    body: bytes = request.app.state.openapi_v2()
    return Response(body, media_type="application/json", headers={"Cache-Control": "public, max-age=300"})


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
        "events": {"type": "array", "items": OBJECT},
        "lastSequence": {"type": "integer"},
        "status": {"type": "string"},
        "isTerminal": {"type": "boolean"},
    },
}
_DEDUP = header_param(
    "OpenWOP-Dedup",
    "enforce: while a run created for the same tenantId and scopeId (required then) is not terminal, "
    "409 run_already_active with Retry-After, and no run is created.",
    {"type": "string", "enum": ["enforce"]},
)
_NODE = path_param("nodeId", "The interrupt's address")
_TOKEN = path_param("token", "A signed link token (ow2.<alg>.<kid>.<payload>.<mac>, or a v1 token)")
_ANSWERED = {"200": json_response(schema_ref("ResolveResponse")), **errors(400, 401, 403, 404, 409, 410, 413, 415, 422)}

#: The v2 run, event and interrupt operations, in the order their routes match.
OPERATIONS = (
    Operation("GET", "/openapi.json", openapi_json, "This document", META, auth=False, operation_id="getOpenApi"),
    Operation(
        "POST",
        "/runs",
        create_run,
        "Start a run (OpenWOP-Dedup: enforce keeps one active run per tenantId and scopeId)",
        {"201": json_response(_CREATED, "Created", _LOCATION), **errors(400, 401, 403, 404, 409, 413, 415, 422)},
        scope="runs:create",
        idempotency=RULES,
        body=dedup.CreateRunBodyV2,
        params=(IDEMPOTENCY, _DEDUP),
        operation_id="createRun",
    ),
    Operation(
        "GET",
        "/runs",
        list_runs,
        "The caller's runs, newest first",
        {"200": json_response(schema_ref("RunListResponse")), **errors(400, 401, 403)},
        scope="runs:read",
        params=(
            query_param("workflowId", "Filter"),
            query_param("status", "Filter"),
            query_param("limit", "Page size (default 50)", bounded(PAGE_LIMIT)),
            query_param("cursor", "Next page (opaque, from nextCursor); a malformed cursor is 400"),
        ),
        operation_id="listRuns",
    ),
    *bulk.OPERATIONS,
    Operation(
        "POST",
        "/runs/{runId}:fork",
        fork_run,
        "Fork a run in replay mode. The body is optional.",
        {"201": json_response(_CREATED, "Created", _LOCATION), **errors(400, 401, 403, 404, 409, 413, 415)},
        scope="runs:create",
        idempotency=RULES,
        body=ForkBody,
        body_required=False,
        params=(RUN, IDEMPOTENCY),
        operation_id="forkRun",
    ),
    Operation(
        "GET",
        "/runs/{runId}",
        get_run,
        "Run snapshot",
        {"200": json_response(schema_ref("RunSnapshot")), **errors(400, 401, 403, 404)},
        scope="runs:read",
        params=(RUN,),
        operation_id="getRun",
        route="/runs/{run_id:v2run}",
    ),
    Operation(
        "POST",
        "/runs/{runId}/cancel",
        cancel_run,
        "Cancel a run; one that already ended is 409 run_terminal. The body is optional.",
        {"200": json_response(schema_ref("CancelResponse")), **errors(400, 401, 403, 404, 409, 413, 415)},
        scope="runs:cancel",
        idempotency=RULES,
        body=CancelBody,
        body_required=False,
        params=(RUN, IDEMPOTENCY),
        operation_id="cancelRun",
    ),
    Operation(
        "GET",
        "/runs/{runId}/events",
        run_events,
        "Run events as server-sent events, live until the run ends",
        {
            "200": {"description": "Server-sent events", "content": {"text/event-stream": SSE}},
            **errors(400, 401, 403, 404, 429),
        },
        scope="runs:read",
        params=(
            RUN,
            header_param("Last-Event-ID", "Resume after this sequence number", SEQUENCE),
            query_param("lastEventId", "Same as Last-Event-ID (for EventSource)", SEQUENCE),
            query_param(
                "streamMode",
                "updates, debug or both (another mode is 400 unsupported_stream_mode)",
                {"enum": ["updates", "debug", "updates,debug", "debug,updates"]},
            ),
            query_param("bufferMs", "Gather events into batch frames for up to this long", bounded(batching.BUFFER_MS)),
        ),
        operation_id="streamRunEvents",
    ),
    Operation(
        "GET",
        "/runs/{runId}/events/poll",
        poll_events,
        "Long-poll run events after a sequence number",
        {"200": json_response(_POLL), **errors(400, 401, 403, 404)},
        scope="runs:read",
        params=(
            RUN,
            query_param("afterSequence", "After this sequence number", bounded(AFTER_SEQUENCE)),
            query_param("timeout", "Wait up to this many seconds (default 30)", bounded(POLL_TIMEOUT_S)),
        ),
        operation_id="pollRunEvents",
    ),
    Operation(
        "POST",
        "/runs/{runId}/interrupts/{nodeId}",
        resolve,
        "Answer a run's open interrupt by its address",
        _ANSWERED,
        scope="approvals:respond",
        idempotency=RULES,
        body=ResolveBody,
        params=(RUN, _NODE, IDEMPOTENCY, passkey_assertion_header()),
        operation_id="resolveInterruptByRun",
    ),
    Operation(
        "GET",
        "/interrupts",
        inbox,
        "The caller's pending interrupts",
        {"200": json_response(OBJECT), **errors(400, 401, 403)},
        scope="interrupts:read",
        params=(
            query_param("kind", "Filter (empty: every kind)", {"enum": ["", *kinds.KINDS]}),
            query_param(
                "status", "Filter (empty: pending)", {"enum": ["", "pending", "resolved", "expired", "cancelled"]}
            ),
            query_param("limit", "Page size (default 50)", bounded(PAGE_LIMIT)),
            query_param("cursor", "Next page (opaque, from nextCursor)"),
        ),
        operation_id="listPendingInterrupts",
    ),
    Operation(
        "GET",
        "/interrupts/{token}",
        inspect_token,
        "The interrupt a signed link points at",
        {"200": json_response(schema_ref("InterruptInspection")), **errors(401, 404, 410)},
        auth=False,
        params=(_TOKEN,),
        operation_id="inspectInterruptByToken",
    ),
    Operation(
        "POST",
        "/interrupts/{token}",
        resolve_token,
        "Answer the interrupt a signed link points at",
        _ANSWERED,
        idempotency=RULES,
        auth=False,
        body=ResolveBody,
        params=(_TOKEN, IDEMPOTENCY),
        operation_id="resolveInterruptByToken",
    ),
)
