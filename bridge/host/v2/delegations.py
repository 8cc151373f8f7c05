"""v2's ``/delegations``: a person lets another answer in their place while away, as ``/v1/delegations`` does
(the same body, engine calls and rules: :mod:`openwop_bridge.host.http.delegations`,
:mod:`openwop_bridge.runtime.delegations`), in v2 words.

A delegation's id is tenant-bound (``<tenant>/dlg-…``; a path takes it projected, ``acme~2Fdlg-…``, or the v1 id);
its delegator, delegate and maker are Subjects (the API-key subject of the principal id a vote names); its times
are ISO 8601. The service's conflicts (the tenant keeps as many as it may; the delegation changed meanwhile) are
``409 version_conflict``: v2's ``run_state_conflict`` names a run's state.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response

from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.delegations import MAX_PER_TENANT, Delegation
from openwop_bridge.core.errors import ConflictError
from openwop_bridge.host.http.delegations import DelegationBody, create_delegation
from openwop_bridge.host.http.deps import engine, principal
from openwop_bridge.host.http.openapi_ops import json_response, schema_ref
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.routing import Operation
from openwop_bridge.host.v2 import ids, subjects
from openwop_bridge.host.v2.doc import bound_param, errors
from openwop_bridge.host.v2.errors import VersionConflictError

__all__ = ["OPERATIONS", "document"]

SCOPE = "approvals:respond"
T = TypeVar("T")


async def _unconflicted(call: Awaitable[T]) -> T:
    """``call``'s result; its conflict is v2's ``version_conflict``."""
    try:
        return await call
    except ConflictError as exc:
        raise VersionConflictError(exc.message, details=exc.details) from exc


def document(made: Delegation) -> dict[str, Any]:
    """A delegation in v2 words (see the module docstring)."""
    doc: dict[str, Any] = {
        "delegationId": ids.bind(made.tenant, made.delegation_id),
        "delegator": subjects.subject(made.tenant, made.delegator),
        "delegate": subjects.subject(made.tenant, made.delegate),
        "from": iso_ms(made.from_ms),
        "until": iso_ms(made.until_ms),
        "workflows": list(made.workflows),
        "reason": made.reason,
        "createdBy": subjects.subject(made.tenant, made.created_by),
        "createdAt": iso_ms(made.created_at_ms),
    }
    if made.ended_at_ms is not None:
        doc["endedAt"] = iso_ms(made.ended_at_ms)
    return doc


async def create(request: Request) -> Response:
    """``POST /delegations``: make a delegation (201)."""
    made = await _unconflicted(create_delegation(request, principal(request)))
    return JSONResponse(document(made), status_code=201)


async def listed(request: Request) -> Response:
    """``GET /delegations``: the caller's delegations, made by them or to them (an admin: the tenant's)."""
    found = await engine(request).delegations(principal(request))
    return JSONResponse({"delegations": [document(d) for d in found]})


async def end(request: Request) -> Response:
    """``DELETE /delegations/{delegationId}``: end a delegation now (its delegator, or an admin)."""
    who = principal(request)
    delegation_id = ids.resolve_param(request.path_params["delegation_id"], who)
    ended = await _unconflicted(engine(request).end_delegation(who, delegation_id))
    return JSONResponse(document(ended))


_LIST = {
    "type": "object",
    "additionalProperties": False,
    "required": ["delegations"],
    "properties": {"delegations": {"type": "array", "items": schema_ref("Delegation")}},
}


_CONFLICT = json_response(
    schema_ref("ErrorEnvelope"),
    f"version_conflict: the tenant keeps {MAX_PER_TENANT} delegations already, or the delegation changed meanwhile",
)
_NOT_YOURS = json_response(schema_ref("ErrorEnvelope"), "not_found: no delegation of yours with this id")
_DELEGATION = bound_param(
    "delegationId", "The tenant-bound delegation id projected to one segment (acme~2Fdlg-…), or its v1 id"
)


def _errors(*codes: int) -> dict[str, Any]:
    """The v2 error responses for ``codes`` (:func:`~openwop_bridge.host.v2.doc.errors`), a delegation's 404 and 409
    said as they are here."""
    out = errors(*(c for c in codes if c not in (404, 409)))
    if 404 in codes:
        out["404"] = _NOT_YOURS
    if 409 in codes:
        out["409"] = _CONFLICT
    return dict(sorted(out.items()))


#: The delegation operations, each needing ``approvals:respond``.
OPERATIONS = (
    Operation(
        "POST",
        "/delegations",
        create,
        "Let someone answer in your place while you are away (an admin: in anyone's place)",
        {"201": json_response(schema_ref("Delegation"), "The delegation"), **_errors(400, 401, 403, 409, 413, 415)},
        scope=SCOPE,
        body=DelegationBody,
        operation_id="createDelegation",
    ),
    Operation(
        "GET",
        "/delegations",
        listed,
        "Your delegations, made by you or to you (an admin: the tenant's), newest first",
        {"200": json_response(_LIST), **errors(401, 403)},
        scope=SCOPE,
        operation_id="listDelegations",
    ),
    Operation(
        "DELETE",
        "/delegations/{delegationId}",
        end,
        "End a delegation now (its delegator, or an admin); ending one that ended already changes nothing",
        {"200": json_response(schema_ref("Delegation"), "The ended delegation"), **_errors(400, 401, 403, 404, 409)},
        scope=SCOPE,
        params=(_DELEGATION,),
        operation_id="endDelegation",
    ),
)
