"""What a route does with the engine, shared by ``/v1`` and the v2 root routes.

Both versions read the same bodies and call the engine the same way; each keeps
only its wire differences (paths, run ids, response shapes, error registry).
The order of checks stays with the route: a route parses its body, resolves its
path ids, then calls one of these.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Iterator
from typing import Any, TypeVar

from starlette.requests import Request

from openwop_bridge.core.assurance import BEARER
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.errors import BridgeError, ValidationError
from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.core.tokens import TokenClaims
from openwop_bridge.host import passkeys
from openwop_bridge.host.http import sse
from openwop_bridge.host.http.body import ClosedModel, CreateRunBody, ResolveBody, parse, read_json
from openwop_bridge.host.http.deps import PAGE_LIMIT, engine, int_param

M = TypeVar("M", bound=ClosedModel)


async def optional_body(request: Request, model: type[M]) -> M:
    """A body that may be left out (read as ``{}``), validated against ``model``."""
    return parse(model, await read_json(request, required=False, absent={}))


async def create_run(request: Request, who: Principal, body: CreateRunBody | None = None) -> RunRecord:
    """Start the run a ``CreateRunBody`` asks for (``body`` when the caller already parsed it)."""
    body = body or parse(CreateRunBody, await read_json(request))
    return await engine(request).create_run(
        who,
        body.workflowId,
        inputs=body.inputs,
        configurable=body.configurable,
        tags=body.tags,
        metadata=body.metadata,
        tenant=body.tenantId,
    )


async def list_runs(request: Request, who: Principal) -> tuple[list[RunRecord], str | None]:
    """A page of the caller's runs, filtered by ``workflowId`` and ``status``, and the next cursor."""
    return await engine(request).list_runs(
        who,
        workflow_id=request.query_params.get("workflowId"),
        status=request.query_params.get("status"),
        limit=int_param(request, "limit", 50, **PAGE_LIMIT),
        cursor=request.query_params.get("cursor"),
    )


async def resolve(request: Request, who: Principal, body: ResolveBody, run_id: str) -> dict[str, Any]:
    """Answer the interrupt at ``run_id`` and the path's ``node_id``, under the request's ``Idempotency-Key``."""
    eng, node_id = engine(request), request.path_params["node_id"]
    assurance = BEARER
    if request.headers.get(passkeys.HEADER) is not None:  # a passkey confirms this very answer
        record = await eng.interrupt_at(run_id, node_id, who)
        assurance = await passkeys.assurance_of(request, who.id, record, body.resumeValue)
    return await eng.resolve(
        who,
        body.resumeValue,
        run_id=run_id,
        node_id=node_id,
        idempotency_key=request.headers.get("idempotency-key"),
        assurance=assurance,
    )


@contextlib.contextmanager
def counting_refusals(request: Request) -> Iterator[None]:
    """Around an answer through a signed link: a refusal is counted by its error code
    (``openwop_callbacks_rejected_total``), then goes on to become the response."""
    try:
        yield
    except BridgeError as exc:
        engine(request).metrics.callback_rejected(exc.code)
        raise


async def resolve_token(
    request: Request, who: Principal | None, token: str, verified: tuple[TokenClaims, InterruptRecord]
) -> dict[str, Any]:
    """Answer through a verified signed link, with the ``resumeValue`` of the request's body."""
    body = parse(ResolveBody, await read_json(request))
    claims, record = verified
    # The link's subject answers (else the key sent with it): their passkey confirms it.
    answerer = claims.subject or (who.id if who else None)
    assurance = await passkeys.assurance_of(request, answerer, record, body.resumeValue)
    return await engine(request).resolve_token(
        token,
        body.resumeValue,
        who,
        idempotency_key=request.headers.get("idempotency-key"),
        verified=verified,
        assurance=assurance,
    )


async def inbox(request: Request, who: Principal, base_url: str) -> dict[str, Any]:
    """A page of the interrupts the caller may answer, filtered by ``kind`` and ``status`` (default pending)."""
    return await engine(request).inbox(
        who,
        kind=request.query_params.get("kind") or None,
        status=request.query_params.get("status") or "pending",
        limit=int_param(request, "limit", 50, **PAGE_LIMIT),
        cursor=request.query_params.get("cursor") or None,
        base_url=base_url,
    )


def last_event_id(request: Request) -> int:
    """The sequence a stream resumes after: ``Last-Event-ID`` (or ``?lastEventId``), -1 when absent."""
    raw = request.headers.get("last-event-id") or request.query_params.get("lastEventId")
    if raw is None or raw == "":
        return -1
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValidationError("Last-Event-ID must be an event sequence number") from exc
    if not -1 <= value < 2**53:
        raise ValidationError("Last-Event-ID must be an event sequence number")
    return value


def event_stream(body: AsyncGenerator[sse.Chunk]) -> sse.EventStream:
    """A ``text/event-stream`` response that proxies neither cache nor buffer."""
    return sse.EventStream(body, headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
