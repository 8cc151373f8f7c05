"""The ``/v1`` interrupt operations: run-scoped resolve, legacy approvals, signed links, the inbox.

Each handler sits beside its declaration in :data:`OPERATIONS` (see :mod:`openwop_bridge.host.http.routing`).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

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
from openwop_bridge.host.http.deps import PAGE_LIMIT, base_url, engine, optional_principal, principal
from openwop_bridge.host.http.idempotency import V1_RULES
from openwop_bridge.host.http.openapi_ops import (
    ANSWER_409,
    bounded,
    error_responses,
    idempotency_key_header,
    json_response,
    passkey_assertion_header,
    path_param,
    query_param,
)
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.routing import Operation


async def resolve(request: Request) -> Response:
    """``POST /v1/runs/{runId}/interrupts/{nodeId} {resumeValue}`` (scope approvals:respond)."""
    who = principal(request)
    body = parse(ResolveBody, await read_json(request))
    return JSONResponse(await operations.resolve(request, who, body, request.path_params["run_id"]))


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
    """``GET /v1/runs/{runId}/interrupts/{nodeId}``: the latest interrupt at that address.

    ``runs:read`` or ``interrupts:read`` opens it: what lists it in the inbox opens it too.
    """
    who = principal(request)
    eng = engine(request)
    record = await eng.interrupt_at(request.path_params["run_id"], request.path_params["node_id"], who)
    view = eng.interrupt_view(record, base_url=base_url(request), link=eng.link_for(who), reader=who.id)
    delivery = await eng.notify.delivery_state([record.interrupt_id])
    return JSONResponse({**view, **delivery.get(record.interrupt_id, {})})


_ANY = {"type": "object"}
_RUN_NODE = (path_param("runId", "The run id"), path_param("nodeId", "The interrupt's address (its nodeId)"))
_TOKEN = (path_param("token", "A signed interrupt token"),)
_TAGS = ("interrupts",)


def answer_responses(
    *, on_409: str = ANSWER_409, on_422: str = "interrupt_cancelled / correlation_mismatch"
) -> dict[str, Any]:
    """The responses of an answer (by address, legacy approval or link): 200, and each refusal it can meet."""
    return {
        "200": json_response({"type": "object"}),
        **error_responses(400, 401, 403, 404, 409, 410, 413, 415, 422, 503, text={409: on_409, 422: on_422}),
    }


#: The interrupt operations, in the order their routes match. ``GET /v1/interrupts/{token}`` is documented
#: as the bare JSON answer; the v1 document adds the link page's representation when the host serves it.
OPERATIONS = (
    Operation(
        "GET",
        "/v1/interrupts",
        inbox,
        "Pending-interrupts inbox",
        {"200": json_response(_ANY), **error_responses(400, 401, 403, 503)},
        scope="interrupts:read",
        params=(
            query_param("kind", "Filter by kind"),
            query_param(
                "status",
                "pending (default)",
                {"type": "string", "enum": ["pending", "resolved", "expired", "cancelled"]},
            ),
            query_param("limit", "Page size (default 50)", bounded(PAGE_LIMIT)),
            query_param("cursor", "Next page (opaque, from nextCursor); a malformed cursor is 400"),
        ),
        tags=_TAGS,
    ),
    Operation(
        "GET",
        "/v1/interrupts/{token}",
        inspect_token,
        "Inspect a signed link",
        {"200": json_response(_ANY), **error_responses(404, 409, 410, 503)},
        auth=False,
        params=_TOKEN,
        tags=_TAGS,
    ),
    Operation(
        "POST",
        "/v1/interrupts/{token}",
        resolve_token,
        "Resolve through a signed link",
        answer_responses(),
        idempotency=V1_RULES,
        auth=False,
        body=ResolveBody,
        params=(*_TOKEN, idempotency_key_header(), passkey_assertion_header()),
        tags=_TAGS,
    ),
    Operation(
        "POST",
        "/v1/runs/{runId}/interrupts/{nodeId}",
        resolve,
        "Resolve an interrupt (scope approvals:respond)",
        answer_responses(),
        scope="approvals:respond",
        idempotency=V1_RULES,
        body=ResolveBody,
        params=(*_RUN_NODE, idempotency_key_header(), passkey_assertion_header()),
        tags=_TAGS,
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/interrupts/{nodeId}",
        interrupt_detail,
        "The latest interrupt at this address",
        {"200": json_response(_ANY), **error_responses(401, 403, 404, 503)},
        scope=("runs:read", "interrupts:read"),
        params=_RUN_NODE,
        tags=_TAGS,
    ),
    Operation(
        "POST",
        "/v1/runs/{runId}/interrupts/{nodeId}/cancel",
        cancel_interrupt,
        "Cancel one interrupt (approvals fail closed). The body is optional; when present it is an object.",
        {"200": json_response(_ANY), **error_responses(400, 401, 403, 404, 409, 413, 415, 422, 503)},
        scope="approvals:respond",
        body=CancelBody,
        body_required=False,
        params=_RUN_NODE,
        tags=_TAGS,
    ),
    Operation(
        "POST",
        "/v1/runs/{runId}/interrupts/{nodeId}/links",
        mint_link,
        "Mint a signed link for an interrupt. The body is optional; when present it is an object. A resolve "
        "link for a gate that needs several approvals must name its subject (400 otherwise).",
        {"201": json_response(_ANY, "Created"), **error_responses(400, 401, 403, 404, 409, 413, 415, 503)},
        scope="approvals:respond",
        body=LinkBody,
        body_required=False,
        params=_RUN_NODE,
        tags=_TAGS,
    ),
    Operation(
        "POST",
        "/v1/runs/{runId}/approvals/{nodeId}",
        legacy_approval,
        "Legacy approval endpoint: bare {action} or {decision} body",
        answer_responses(
            on_409="interrupt_cancelled (the run was cancelled) / " + ANSWER_409, on_422="correlation_mismatch"
        ),
        scope="approvals:respond",
        idempotency=V1_RULES,
        body=_ANY,
        params=(*_RUN_NODE, idempotency_key_header()),
        tags=_TAGS,
    ),
)
