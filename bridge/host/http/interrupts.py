"""Interrupt routes: run-scoped resolve, legacy approvals, signed links, the inbox."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.errors import (
    AnswerAfterCancelError,
    ForbiddenError,
    InterruptAlreadyResolvedError,
    LegacyAnswerAfterCancelError,
    ValidationError,
)
from openwop_bridge.host.http import operations
from openwop_bridge.host.http.body import CancelBody, LinkBody, ResolveBody, parse, read_json
from openwop_bridge.host.http.deps import base_url, engine, optional_principal, principal
from openwop_bridge.host.http.idempotency import idempotent
from openwop_bridge.host.http.responses import JSONResponse


@idempotent("POST /v1/runs/{runId}/interrupts/{nodeId}", scope="approvals:respond")
async def resolve(request: Request) -> Response:
    """``POST /v1/runs/{runId}/interrupts/{nodeId} {resumeValue}`` (scope approvals:respond)."""
    who = principal(request)
    body = parse(ResolveBody, await read_json(request))
    return JSONResponse(await operations.resolve(request, who, body, request.path_params["run_id"]))


@idempotent("POST /v1/runs/{runId}/approvals/{nodeId}", scope="approvals:respond")
async def legacy_approval(request: Request) -> Response:
    """``POST /v1/runs/{runId}/approvals/{nodeId}`` with a bare ``{action, …}`` or ``{decision}`` body."""
    who = principal(request)
    data = await read_json(request)
    if not isinstance(data, dict):
        raise ValidationError('the request body must be a JSON object such as {"action": "accept"}')
    value = data.get("resumeValue", data) if set(data) == {"resumeValue"} else data
    try:
        result = await engine(request).resolve(
            who, value, run_id=request.path_params["run_id"], node_id=request.path_params["node_id"]
        )
    except AnswerAfterCancelError as exc:
        # A cancel that won the race: this route's callers expect 409 (the run-scoped route keeps 422).
        raise LegacyAnswerAfterCancelError(str(exc), details=exc.details) from exc
    return JSONResponse(result)


async def cancel_interrupt(request: Request) -> Response:
    """``POST /v1/runs/{runId}/interrupts/{nodeId}/cancel``: abandon one interrupt."""
    who = principal(request)
    body = await operations.optional_body(request, CancelBody)
    reason = body.reason or "cancelled"
    eng = engine(request)
    record = await eng.interrupt_at(request.path_params["run_id"], request.path_params["node_id"], who)
    return JSONResponse(await eng.cancel_interrupt(who, record.interrupt_id, reason))


async def mint_link(request: Request) -> Response:
    """``POST /v1/runs/{runId}/interrupts/{nodeId}/links {intent, subject?, ttlMs?}``.

    Minting a link for someone else (``subject``) needs the right to act on
    their behalf; the link then votes as them. A resolve link for a quorum gate
    must name its subject (a quorum counts people).
    """
    who = principal(request)
    who.require("approvals:respond")
    body = await operations.optional_body(request, LinkBody)
    if body.intent not in ("resolve", "inspect"):
        raise ValidationError("intent must be 'resolve' or 'inspect'")
    if body.subject and body.subject != who.id and not who.can_act_as:
        raise ForbiddenError("minting a link for another principal needs the operator/admin role or approvals:act-as")
    eng = engine(request)
    record = await eng.interrupt_at(request.path_params["run_id"], request.path_params["node_id"], who)
    if not record.open:
        raise InterruptAlreadyResolvedError("this interrupt is no longer open")
    token, expires = eng.mint_token(record, body.intent, subject=body.subject, ttl_ms=body.ttlMs)
    return JSONResponse(
        {
            "token": token,
            "url": f"{base_url(request)}/v1/interrupts/{token}",
            "intent": body.intent,
            "subject": body.subject,
            "expiresAt": iso_ms(expires),
        },
        status_code=201,
    )


async def inspect_token(request: Request) -> Response:
    """``GET /v1/interrupts/{token}``: what the link points at (no auth needed)."""
    eng = engine(request)
    if "text/html" in request.headers.get("accept", "") and request.app.state.link_page is not None:
        page: Response = await request.app.state.link_page(request)
        return page
    return JSONResponse(await eng.inspect_token(request.path_params["token"], base_url=base_url(request)))


@idempotent("POST /v1/interrupts/{token}", anonymous=True)
async def resolve_token(request: Request) -> Response:
    """``POST /v1/interrupts/{token} {resumeValue}``."""
    who = optional_principal(request)
    eng = engine(request)
    token = request.path_params["token"]
    with operations.counting_refusals(request):
        verified = await eng.verify_token(token)  # an unknown or malformed link is 404 whatever the body
        return JSONResponse(await operations.resolve_token(request, who, token, verified))


async def inbox(request: Request) -> Response:
    """``GET /v1/interrupts?kind=&status=pending&limit=&cursor=``."""
    return JSONResponse(await operations.inbox(request, principal(request), base_url(request)))


async def interrupt_detail(request: Request) -> Response:
    """``GET /v1/runs/{runId}/interrupts/{nodeId}``: the latest interrupt at that address."""
    who = principal(request)
    if not who.has_scope("runs:read"):
        who.require("interrupts:read")  # what lists it in the inbox opens it too
    eng = engine(request)
    record = await eng.interrupt_at(request.path_params["run_id"], request.path_params["node_id"], who)
    view = eng.interrupt_view(record, base_url=base_url(request), link=eng.link_for(who), reader=who.id)
    delivery = await eng.notify.delivery_state([record.interrupt_id])
    return JSONResponse({**view, **delivery.get(record.interrupt_id, {})})


routes = [
    Route("/v1/interrupts", inbox, methods=["GET"]),
    Route("/v1/interrupts/{token}", inspect_token, methods=["GET"]),
    Route("/v1/interrupts/{token}", resolve_token, methods=["POST"]),
    Route("/v1/runs/{run_id}/interrupts/{node_id}", resolve, methods=["POST"]),
    Route("/v1/runs/{run_id}/interrupts/{node_id}", interrupt_detail, methods=["GET"]),
    Route("/v1/runs/{run_id}/interrupts/{node_id}/cancel", cancel_interrupt, methods=["POST"]),
    Route("/v1/runs/{run_id}/interrupts/{node_id}/links", mint_link, methods=["POST"]),
    Route("/v1/runs/{run_id}/approvals/{node_id}", legacy_approval, methods=["POST"]),
]
