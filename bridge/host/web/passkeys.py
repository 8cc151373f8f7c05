"""The inbox's passkey endpoints: register passkeys, and ask for a challenge that confirms a decision.

- ``GET /ui/api/passkeys``: the signed-in principal's passkeys;
- ``POST /ui/api/passkeys/options``: WebAuthn creation options for a new one;
- ``POST /ui/api/passkeys {credential}``: the browser's registration, verified and kept;
- ``POST /ui/api/passkeys/challenge {runId, nodeId | token, resumeValue}``: WebAuthn request options
  whose challenge binds that decision (by the signed-in principal, or by a signed link's subject).

What is kept and how a decision is verified is :mod:`openwop_bridge.host.passkeys`'s.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.errors import SenderConstraintMissingError, ValidationError
from openwop_bridge.host.http.body import read_json
from openwop_bridge.host.http.deps import base_url, engine, optional_principal, principal
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.passkeys import RelyingParty, passkeys_of

__all__ = ["passkey_routes"]

_NO_STORE = {"Cache-Control": "no-store"}


def _options(text: str) -> Response:
    return Response(text, media_type="application/json", headers=_NO_STORE)


async def list_passkeys(request: Request) -> Response:
    """``GET /ui/api/passkeys``: the caller's passkeys (id and when registered)."""
    who = principal(request)
    found = await passkeys_of(request).list(who.id)
    listed = [{"credentialId": k["credentialId"], "createdAt": iso_ms(int(k["createdMs"]))} for k in found]
    return JSONResponse({"passkeys": listed}, headers=_NO_STORE)


async def registration_options(request: Request) -> Response:
    """``POST /ui/api/passkeys/options``: creation options for a new passkey of the caller."""
    who = principal(request)
    rp = RelyingParty.of(base_url(request))
    return _options(await passkeys_of(request).registration_options(who, rp))


async def register(request: Request) -> Response:
    """``POST /ui/api/passkeys {credential}``: keep the passkey the browser just made."""
    who = principal(request)
    body = await read_json(request)
    credential = body.get("credential") if isinstance(body, dict) else None
    if not isinstance(credential, dict):
        raise ValidationError('the body must be {"credential": <the registration as JSON>}')
    record = await passkeys_of(request).register(who, credential, RelyingParty.of(base_url(request)))
    created = {"credentialId": record["credentialId"], "createdAt": iso_ms(int(record["createdMs"]))}
    return JSONResponse(created, status_code=201, headers=_NO_STORE)


async def decision_challenge(request: Request) -> Response:
    """``POST /ui/api/passkeys/challenge {runId, nodeId | token, resumeValue}``: request options for this decision."""
    body = await read_json(request)
    if not isinstance(body, dict) or "resumeValue" not in body:
        raise ValidationError('the body must be {"runId", "nodeId" (or "token"), "resumeValue"}')
    value: Any = body["resumeValue"]
    eng = engine(request)
    token = body.get("token")
    if isinstance(token, str):
        claims, record = await eng.verify_token(token)
        who = optional_principal(request)
        answerer = claims.subject or (who.id if who else None)
        if not answerer:
            raise SenderConstraintMissingError(
                "this link names no one whose passkey could confirm the decision: ask for a link made out to you"
            )
    else:
        run_id, node_id = body.get("runId"), body.get("nodeId")
        if not isinstance(run_id, str) or not isinstance(node_id, str):
            raise ValidationError('the body must name the interrupt\'s "runId" and "nodeId" (or a link\'s "token")')
        caller = principal(request)
        record, answerer = await eng.interrupt_at(run_id, node_id, caller), caller.id
    rp = RelyingParty.of(base_url(request))
    return _options(await passkeys_of(request).decision_options(answerer, record.interrupt_id, value, rp))


def passkey_routes() -> list[BaseRoute]:
    """The passkey endpoints of the inbox and the link page."""
    return [
        Route("/ui/api/passkeys", list_passkeys, methods=["GET"]),
        Route("/ui/api/passkeys", register, methods=["POST"]),
        Route("/ui/api/passkeys/options", registration_options, methods=["POST"]),
        Route("/ui/api/passkeys/challenge", decision_challenge, methods=["POST"]),
    ]
