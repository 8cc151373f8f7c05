"""The v2 webhook routes (webhooks.md): register, unregister, rotate a secret, read and redrive dead letters.

Every route needs the ``webhooks:manage`` scope and stays inside the caller's tenant: a subscription
id is tenant-bound (``<tenant>/whk-…``); one of another tenant is ``403``, an unknown one ``404``.
Deliveries themselves are the notify layer's (:mod:`openwop_bridge.notify.webhook`).
"""

from __future__ import annotations

import base64
import secrets
from typing import Annotated, Any

import orjson
from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.errors import BridgeError, ForbiddenError, NotFoundError, RateLimitedError, ValidationError
from openwop_bridge.core.notices import DeadLetter
from openwop_bridge.host.http.body import ClosedModel, parse, read_json
from openwop_bridge.host.http.deps import engine, int_param, principal
from openwop_bridge.host.http.openapi_ops import json_response, query_param
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.routing import Operation
from openwop_bridge.host.v2 import ids
from openwop_bridge.host.v2.doc import bound_param, errors
from openwop_bridge.host.v2.openapi_webhooks import PAGE, REDRIVEN, REGISTERED, ROTATED
from openwop_bridge.notify.webhook.channel import Webhooks
from openwop_bridge.notify.webhook.subscriptions import (
    ALGORITHMS,
    STANDARD,
    V1,
    Subscription,
    signed_headers,
    whsec_bytes,
)
from openwop_bridge.spec import v2 as spec

SCOPE = "webhooks:manage"
#: How long an endpoint has to answer its verification challenge (webhooks.md §Standard Webhooks).
VERIFY_TIMEOUT_S = 10.0
#: The largest page of dead letters.
DEAD_LETTER_PAGE = 100
#: The dead-letter reason of a delivery whose event could not be rendered (never retried).
UNPROJECTABLE = "payload_unprojectable"


class WebhookEndpointUnverifiedError(BridgeError, code="webhook_endpoint_unverified", status=400):
    """400: the endpoint did not echo the verification challenge."""


class RegisterBody(ClosedModel):
    """``POST /webhooks``."""

    url: str = Field(min_length=1, max_length=2048)
    events: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(min_length=1, max_length=64)
    secret: str | None = Field(default=None, min_length=16, max_length=256)
    tags: list[Annotated[str, Field(min_length=1, max_length=256)]] | None = Field(default=None, max_length=32)
    signatureAlgorithms: list[str] | None = Field(default=None, min_length=1, max_length=len(ALGORITHMS))


class RotateBody(ClosedModel):
    """``POST /webhooks/{webhookId}/rotate-secret``: the new secret."""

    secret: str = Field(min_length=16, max_length=256)


def _webhooks(request: Request) -> Webhooks:
    hooks: Webhooks = request.app.state.webhooks
    return hooks


def _manager(request: Request) -> Principal:
    """The caller (its ``webhooks:manage`` scope is the operation's, checked before)."""
    return principal(request)


def _event_types(names: list[str]) -> frozenset[str]:
    """The filter, each name a registered v2 event type or a vendor one (``<org>.<name>``)."""
    bad = [n for n in names if spec.problems("run-event.schema.json", n, "/properties/type/oneOf/0")]
    vendor = [n for n in bad if not spec.problems("run-event.schema.json", n, "/properties/type/oneOf/1")]
    unknown = [n for n in bad if n not in vendor]
    if unknown:
        raise ValidationError("events must be v2 event type names", details={"unknown": unknown[:20]})
    return frozenset(names)


def _algorithms(body: RegisterBody) -> tuple[str, ...]:
    asked = body.signatureAlgorithms or [V1]
    if V1 not in asked or len(set(asked)) != len(asked) or any(a not in ALGORITHMS for a in asked):
        raise ValidationError(
            "signatureAlgorithms must list 'v1', once each, from those this host offers",
            details={"offered": ALGORITHMS},
        )
    if STANDARD in asked and (body.secret is None or whsec_bytes(body.secret) is None):
        raise ValidationError("standard-webhooks-1 needs a secret 'whsec_' + base64 of 24 to 64 bytes")
    return tuple(a for a in ALGORITHMS if a in asked)


async def _verify(hooks: Webhooks, sub: Subscription) -> None:
    """Send the endpoint challenge; unless a 2xx echoes it within :data:`VERIFY_TIMEOUT_S` (the whole exchange),
    refuse (nothing stored, no retry). A tenant with as many challenges in flight as it may is ``429``."""
    challenge = base64.urlsafe_b64encode(secrets.token_bytes(24)).decode().rstrip("=")
    raw = orjson.dumps({"type": "openwop.webhook.verification", "challenge": challenge})  # RFC 0201 §D
    now_ms = hooks.engine.clock.now_ms()
    message_id = f"whv_{secrets.token_hex(16)}"
    headers = signed_headers(
        sub, message_id=message_id, event_type=None, timestamp=now_ms // 1000, raw=raw, now_ms=now_ms
    )
    target = await hooks.egress.resolve(sub.url)
    slot = hooks.transport.hold_verification(sub.tenant)
    if slot is None:
        raise RateLimitedError(
            "this tenant has as many endpoint challenges in flight as it may; try again shortly",
            int(VERIFY_TIMEOUT_S),
            details={"max": hooks.transport.verify_per_tenant},
        )
    try:
        with slot:
            status, _, answer = await hooks.transport.post(
                sub.tenant, target, raw, headers, VERIFY_TIMEOUT_S, read=True
            )
        echoed = orjson.loads(answer).get("challenge") if 200 <= status < 300 else None
    except Exception as exc:  # a timeout of the whole exchange included
        raise WebhookEndpointUnverifiedError("the endpoint did not confirm the subscription") from exc
    if echoed != challenge:
        raise WebhookEndpointUnverifiedError("the endpoint did not confirm the subscription")


def _full(hooks: Webhooks) -> ValidationError:
    return ValidationError(
        "this tenant holds as many webhook subscriptions as it may", details={"max": hooks.settings.per_tenant}
    )


async def register(request: Request) -> Response:
    """``POST /webhooks``: subscribe ``url`` to run events of the caller's tenant."""
    who = _manager(request)
    body = parse(RegisterBody, await read_json(request))
    hooks = _webhooks(request)
    events = _event_types(body.events)
    algorithms = _algorithms(body)
    await hooks.egress.resolve(body.url)  # 400 webhook_url_rejected before anything is sent or stored
    if len(hooks.of_tenant(who.tenant)) >= hooks.settings.per_tenant:
        raise _full(hooks)  # known full here: refused before verifying the endpoint
    eng = engine(request)
    generated = body.secret is None
    sub = Subscription(
        webhook_id=eng.clock.new_id("whk"),
        tenant=who.tenant,
        url=body.url,
        events=events,
        secret=body.secret or secrets.token_urlsafe(32),
        algorithms=algorithms,
        tags=frozenset(body.tags or ()),
        created_ms=eng.clock.now_ms(),
    )
    if sub.standard:
        await _verify(hooks, sub)
    # The cap again, authoritative: counted and stored in one transaction, so registrations at once (on any
    # instance) cannot all pass the check above.
    if not await hooks.state.put_capped(sub.webhook_id, sub.to_json(), field="tenant", cap=hooks.settings.per_tenant):
        raise _full(hooks)
    hooks.remember(sub)
    out: dict[str, Any] = {"webhookId": ids.bind(sub.tenant, sub.webhook_id)}
    if body.signatureAlgorithms is not None:
        out["signatureAlgorithms"] = list(algorithms)
    if generated:
        out["secret"] = sub.secret  # the one time it is shown: the subscriber verifies with it
    return JSONResponse(out, status_code=201)


async def _owned(request: Request, who: Principal) -> tuple[Webhooks, Subscription, dict[str, Any]]:
    """The subscription the path names (its stored record too): 404 unknown, 403 another tenant's."""
    hooks = _webhooks(request)
    webhook_id = ids.resolve_param(request.path_params["webhook_id"], who)
    doc = await hooks.state.get(webhook_id) if webhook_id.startswith("whk_") else None
    if doc is None:
        raise NotFoundError("no such webhook subscription")
    sub = Subscription.from_json(doc)
    if sub.tenant != who.tenant:
        raise ForbiddenError("this webhook subscription belongs to another tenant")
    return hooks, sub, doc


async def unregister(request: Request) -> Response:
    """``DELETE /webhooks/{webhookId}``: nothing more is delivered; queued deliveries become dead letters."""
    who = _manager(request)
    hooks, sub, doc = await _owned(request, who)
    if not await hooks.state.forget_if(sub.webhook_id, doc):
        raise NotFoundError("no such webhook subscription")
    hooks.forget(sub.webhook_id)
    return Response(status_code=204)


async def rotate_secret(request: Request) -> Response:
    """``POST /webhooks/{webhookId}/rotate-secret {secret}``: the new secret signs from now on, and the previous
    one beside it for the overlap (``webhook-signature``; ``OpenWOP-Signature`` stays on the previous one)."""
    who = _manager(request)
    body = parse(RotateBody, await read_json(request))
    hooks, sub, doc = await _owned(request, who)
    if not sub.standard:
        raise ValidationError("only a subscription opted into standard-webhooks-1 rotates its secret")
    if whsec_bytes(body.secret) is None:
        raise ValidationError("the secret must be 'whsec_' + base64 of 24 to 64 bytes")
    now_ms = engine(request).clock.now_ms()
    rotated = sub.rotated(body.secret, now_ms, hooks.settings.rotation_overlap_s)
    if not await hooks.state.replace(sub.webhook_id, doc, rotated.to_json()):
        raise ValidationError("the subscription changed meanwhile; try again")
    hooks.remember(rotated)
    assert rotated.previous_until_ms is not None
    return JSONResponse(
        {
            "webhookId": ids.bind(sub.tenant, sub.webhook_id),
            "rotatedAt": iso_ms(now_ms),
            "previousSecretExpiresAt": iso_ms(rotated.previous_until_ms),
        }
    )


def _cursor(sub: Subscription, notice_id: str) -> str:
    """A dead-letter page's ``nextCursor``: opaque, and good for this subscription only (RFC 0188 §A.3)."""
    return base64.urlsafe_b64encode(f"{sub.webhook_id}.{notice_id}".encode()).decode().rstrip("=")


def _after(sub: Subscription, cursor: str | None) -> str | None:
    """The notice id a cursor continues after: ``400`` for one not handed out for this subscription."""
    if cursor is None:
        return None
    try:
        webhook_id, _, notice_id = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode().partition(".")
    except ValueError:
        webhook_id, notice_id = "", ""
    if webhook_id != sub.webhook_id or not notice_id.startswith("ntc_") or len(notice_id) > 64:
        raise ValidationError("cursor is not one this host handed out for this subscription")
    return notice_id


def dead_letter_record(sub: Subscription, d: DeadLetter, retention_ms: int) -> dict[str, Any]:
    """One record of RFC 0188 §A.4 (``webhook-dead-letter-page.schema.json``): which delivery, which event, how many
    attempts and why; never the body, the headers or the secret. The bridge's own reason code (``http_503``,
    ``timeout``, ``queue_full``, …) is not a reason of the record: every one but ``payload_unprojectable`` means the
    delivery will not be tried again, ``retries_exhausted``; an HTTP status is ``lastStatus``."""
    record: dict[str, Any] = {
        "deliveryId": ids.bind(sub.tenant, d.notice_id),
        "webhookId": ids.bind(sub.tenant, sub.webhook_id),
        "runId": ids.bind(sub.tenant, d.run_id),
        "eventId": d.event_id,
        "eventType": d.event_type,
        "attempts": max(1, d.attempts),
        "deadLetteredAt": iso_ms(d.dead_ms),
        "expiresAt": iso_ms(d.dead_ms + retention_ms),
        "reason": UNPROJECTABLE if d.reason == UNPROJECTABLE else "retries_exhausted",
    }
    status = d.reason.removeprefix("http_")
    if d.reason.startswith("http_") and status.isdigit():
        record["lastStatus"] = int(status)
    return record


async def dead_letters(request: Request) -> Response:
    """``GET /webhooks/{webhookId}/dead-letters?limit=&cursor=``: deliveries given up on, newest first, content-free
    (RFC 0188): ``{"deliveries": [...], "nextCursor"?}``, each delivery ``<tenant>/ntc-…`` for the ``webhook-id``
    ``ntc_…``; ``nextCursor`` only when there may be more."""
    who = _manager(request)
    _, sub, _ = await _owned(request, who)
    limit = int_param(request, "limit", 50, low=1, high=DEAD_LETTER_PAGE)
    after = _after(sub, request.query_params.get("cursor") or None)
    eng = engine(request)
    page = await eng.notify.dead_letters("webhook", sub.webhook_id, sub.tenant, limit=limit, after=after)
    retention_ms = eng.config.outbox_limits.dead_ttl_ms
    now_ms = eng.clock.now_ms()
    deliveries = [
        dead_letter_record(sub, d, retention_ms)
        for d in page
        # expired: gone, whether or not it was deleted yet; one written before deliveries named their event is
        # not a record this read can show
        if d.dead_ms + retention_ms > now_ms and d.event_id and d.event_type
    ]
    out: dict[str, Any] = {"deliveries": deliveries}
    if len(page) == limit:
        out["nextCursor"] = _cursor(sub, page[-1].notice_id)
    return JSONResponse(out)


async def redrive(request: Request) -> Response:
    """``POST /webhooks/{webhookId}/dead-letters/{deliveryId}/redrive`` and ``POST
    /webhooks/{webhookId}/dead-letters/redrive`` (the oldest hundred): the subscription's owner queues its dead
    letters again, each with its id and body, its attempts counted afresh, signed as the subscription stands when it
    is sent. ``202 {"redriven": [deliveryId…]}``; a delivery that is not a dead letter of this subscription (or no
    longer kept, or refused by a cap without its body) is ``404``."""
    who = _manager(request)
    hooks, sub, _ = await _owned(request, who)
    named: list[str] | None = None
    wire = request.path_params.get("delivery_id")
    if wire is not None:
        notice_id = ids.resolve_param(wire, who)
        if not notice_id.startswith("ntc_") or len(notice_id) > 64:
            raise NotFoundError("no such dead letter of this subscription")
        named = [notice_id]
    cap = hooks.settings.per_subscription_queue
    done = await engine(request).notify.redrive("webhook", sub.webhook_id, sub.tenant, named, cap=cap)
    if named is not None and not done:
        raise NotFoundError("no such dead letter of this subscription")
    return JSONResponse({"redriven": [ids.bind(sub.tenant, n) for n in done]}, status_code=202)


_WEBHOOK = bound_param("webhookId", "The tenant-bound subscription id, projected to one segment (acme~2Fwhk-…)")
_DELIVERY = bound_param("deliveryId", "The tenant-bound delivery id from a dead-letter page (acme~2Fntc-…)")

#: The webhook operations, each needing ``webhooks:manage``.
OPERATIONS = (
    Operation(
        "POST",
        "/webhooks",
        register,
        "Subscribe a URL to run events of the caller's tenant (scope webhooks:manage)",
        {"201": json_response(REGISTERED), **errors(400, 401, 403, 413, 415, 429)},
        scope=SCOPE,
        body=RegisterBody,
        operation_id="registerWebhook",
    ),
    Operation(
        "DELETE",
        "/webhooks/{webhookId}",
        unregister,
        "Stop deliveries to a subscription",
        {"204": {"description": "Unsubscribed"}, **errors(400, 401, 403, 404)},
        scope=SCOPE,
        params=(_WEBHOOK,),
        operation_id="unregisterWebhook",
    ),
    Operation(
        "POST",
        "/webhooks/{webhookId}/rotate-secret",
        rotate_secret,
        "Sign with a new secret, the previous one beside it for the overlap (standard-webhooks-1)",
        {"200": json_response(ROTATED), **errors(400, 401, 403, 404, 413, 415)},
        scope=SCOPE,
        body=RotateBody,
        params=(_WEBHOOK,),
        operation_id="rotateWebhookSecret",
    ),
    Operation(
        "GET",
        "/webhooks/{webhookId}/dead-letters",
        dead_letters,
        "Deliveries given up on, content-free, newest first",
        {"200": json_response(PAGE), **errors(400, 401, 403, 404)},
        scope=SCOPE,
        params=(
            _WEBHOOK,
            query_param(
                "limit",
                f"Page size (default 50, at most {DEAD_LETTER_PAGE})",
                {"type": "integer", "minimum": 1, "maximum": DEAD_LETTER_PAGE},
            ),
            query_param("cursor", "Next page (opaque, from nextCursor)"),
        ),
        operation_id="listWebhookDeadLetters",
    ),
    Operation(
        "POST",
        "/webhooks/{webhookId}/dead-letters/redrive",
        redrive,
        "Queue the subscription's dead letters again, the oldest hundred, each with its id and body "
        "(this host's operation, not OpenWOP's)",
        {"202": json_response(REDRIVEN), **errors(400, 401, 403, 404)},
        scope=SCOPE,
        params=(_WEBHOOK,),
        operation_id="redriveWebhookDeadLetters",
    ),
    Operation(
        "POST",
        "/webhooks/{webhookId}/dead-letters/{deliveryId}/redrive",
        redrive,
        "Queue one dead letter again, with its id and body (this host's operation, not OpenWOP's); "
        "404 when it is not a dead letter of this subscription",
        {"202": json_response(REDRIVEN), **errors(400, 401, 403, 404)},
        scope=SCOPE,
        params=(_WEBHOOK, _DELIVERY),
        operation_id="redriveWebhookDeadLetter",
    ),
)
