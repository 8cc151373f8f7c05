"""``Idempotency-Key`` on the routes that create or answer: one decorator, records in the store.

A request carrying the header is handled at most once per key:

- the key is scoped to the caller (tenant and principal; a signed link used
  without credentials is its own caller) and to the endpoint, and is stored only
  as a digest of that scope;
- the caller is authorized first: a key that lacks the route's scope is refused
  (403, by the route's scope check) before any recorded response is looked up, so
  a key shared with a narrower credential (v2 scopes keys to the tenant) replays
  nothing to it;
- the request's digest covers its path parameters and its JSON body in a
  canonical spelling (key order and spacing do not matter);
- a final response (2xx, or a 4xx the state of the resource decided: 409, 410,
  422) is recorded and replayed to a retry with ``OpenWOP-Idempotent-Replay:
  true``; refusals a retry may fix (400, 401, 403, 404, 413, 415, 429, 5xx)
  are not, so the retry is handled afresh;
- the same key with another request is ``409 idempotency_key_mismatch``; a
  retry while the first is still being handled is ``409 idempotency_in_flight``
  with ``Retry-After``;
- records live ``EngineConfig.idempotency_ttl_ms`` (24 hours by default) in the
  store, so they survive restarts and are shared by every instance.

The response is recorded right after the effect commits, in a second short
transaction. Should the process die between the two, the key stays pending
until its lease (:data:`IN_FLIGHT_LEASE_MS`) runs out, and a retry after that is
handled again: an answer then meets the settled interrupt (409
``interrupt_already_resolved``), while a create would start a second run.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.errors import (
    BridgeError,
    IdempotencyInFlightError,
    IdempotencyKeyMismatchError,
    ValidationError,
)
from openwop_bridge.host.http.body import read_bytes
from openwop_bridge.host.http.deps import engine, optional_principal, principal
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.runtime.idempotency import IdempotencyRecord

log = logging.getLogger("openwop_bridge.host.http.idempotency")

HEADER = "idempotency-key"
REPLAY_HEADER = "OpenWOP-Idempotent-Replay"
#: Printable ASCII without spaces, 1 to 255 characters (a UUID is the usual choice).
KEY_PATTERN = re.compile(r"[\x21-\x7e]{1,255}")
#: How long the first request holds its key before a retry may take it over (its process died).
IN_FLIGHT_LEASE_MS = 60_000
#: Statuses recorded and replayed besides 2xx: outcomes the resource's state decided.
FINAL_REFUSALS = frozenset({409, 410, 422})
#: Response headers worth replaying.
KEPT_HEADERS = ("content-type", "location")

Handler = Callable[[Request], Awaitable[Response]]


def _invalid_v1() -> BridgeError:
    return ValidationError("Idempotency-Key must be 1 to 255 printable ASCII characters without spaces")


@dataclass(frozen=True)
class Rules:
    """What a major says about ``Idempotency-Key``: its grammar, its scope, what is recorded."""

    #: The grammar a key must match.
    pattern: re.Pattern[str]
    #: The error for a key outside the grammar.
    invalid: Callable[[], BridgeError]
    #: Whether keys are scoped to the principal as well as the tenant.
    per_principal: bool
    #: The refusals (4xx statuses) recorded and replayed besides 2xx.
    final_refusals: frozenset[int]


#: The rules of ``/v1``: keys per caller, refusals a retry may fix handled afresh.
V1_RULES = Rules(KEY_PATTERN, _invalid_v1, per_principal=True, final_refusals=FINAL_REFUSALS)


def idempotent(endpoint: str, *, anonymous: bool = False, rules: Rules = V1_RULES) -> Callable[[Handler], Handler]:
    """Honour ``Idempotency-Key`` on a route; ``endpoint`` names its operation (``POST /v1/runs``).

    The route's scope is checked before this runs (:func:`openwop_bridge.host.http.routing.serve`), so
    a recorded response is replayed only to a caller that may make the request. ``anonymous`` routes (a
    signed link: the link is the authorization) also accept callers without credentials; such a caller's
    keys are scoped to the link it presents. ``rules`` are the major's (:data:`V1_RULES` unless given).
    """

    def wrap(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def guarded(request: Request) -> Response:
            key = request.headers.get(HEADER)
            if key is None:
                return await handler(request)
            who = optional_principal(request) if anonymous else principal(request)
            if not rules.pattern.fullmatch(key):
                raise rules.invalid()
            raw = await read_bytes(request)
            request = _with_body(request, raw)
            key_id = _key_id(who, endpoint, key, request, per_principal=rules.per_principal)
            return await _handle(request, handler, key_id, _digest(request, raw), rules.final_refusals)

        return guarded

    return wrap


async def _handle(
    request: Request, handler: Handler, key_id: str, digest: str, final_refusals: frozenset[int]
) -> Response:
    ledger = engine(request).idempotency
    owner = secrets.token_hex(8)
    found = await ledger.begin(key_id, digest, owner, lease_ms=IN_FLIGHT_LEASE_MS)
    if found is not None:
        return _answer_for(found, digest)
    try:
        response = await handler(request)
    except BridgeError as exc:
        if exc.status in final_refusals:
            await _finish(request, key_id, owner, exc.status, {"content-type": "application/json"}, exc.envelope())
        else:
            await ledger.release(key_id, owner)
        raise
    except Exception:
        await ledger.release(key_id, owner)
        raise
    # A cancelled request (BaseException) keeps its key pending: its effect may have committed.
    if 200 <= response.status_code < 300 or response.status_code in final_refusals:
        kept = {name: response.headers[name] for name in KEPT_HEADERS if name in response.headers}
        await _finish(request, key_id, owner, response.status_code, kept, bytes(response.body).decode("utf-8"))
    else:
        await ledger.release(key_id, owner)
    return response


async def _finish(
    request: Request, key_id: str, owner: str, status: int, headers: dict[str, str], body: object
) -> None:
    text = body if isinstance(body, str) else orjson.dumps(body).decode("utf-8")
    try:
        await engine(request).idempotency.finish(key_id, owner, status, headers, text)
    except Exception:
        # The effect is committed: answer it. A retry meets the pending key until its lease runs out.
        log.warning("could not record an idempotent response on %s %s", request.method, request.url.path)


def _answer_for(found: IdempotencyRecord, digest: str) -> Response:
    if found.digest != digest:
        error: BridgeError = IdempotencyKeyMismatchError(
            "this Idempotency-Key was already used for a different request; use a new key for a new request"
        )
        return JSONResponse(error.envelope(), status_code=error.status)
    if found.pending or found.status is None:
        error = IdempotencyInFlightError(
            "the first request with this Idempotency-Key is still being handled; retry shortly",
            details={"retryAfter": 1},
        )
        return JSONResponse(error.envelope(), status_code=error.status, headers={"Retry-After": "1"})
    headers = {**found.headers, REPLAY_HEADER: "true"}
    return Response((found.body or "").encode("utf-8"), status_code=found.status, headers=headers)


def _key_id(who: Principal | None, endpoint: str, key: str, request: Request, *, per_principal: bool) -> str:
    if who is not None:
        scope = [who.tenant, who.id if per_principal else ""]
    else:
        token = str(request.path_params.get("token", ""))
        scope = ["", "link:" + hashlib.sha256(token.encode("utf-8")).hexdigest()]
    return hashlib.sha256(orjson.dumps([*scope, endpoint, key])).hexdigest()


def _digest(request: Request, raw: bytes) -> str:
    digest = hashlib.sha256(orjson.dumps(sorted((str(k), str(v)) for k, v in request.path_params.items())))
    digest.update(b"\x00")
    try:
        canonical = b"json:" + orjson.dumps(orjson.loads(raw), option=orjson.OPT_SORT_KEYS) if raw.strip() else b""
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        canonical = b"raw:" + raw  # not JSON (the route refuses it): compared as sent
    digest.update(canonical)
    return digest.hexdigest()


def _with_body(request: Request, raw: bytes) -> Request:
    """The same request, its body (already read) delivered again to the route."""
    delivered = False
    receive = request.receive

    async def replay() -> Message:
        nonlocal delivered
        if delivered:
            return await receive()
        delivered = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return Request(request.scope, replay)
