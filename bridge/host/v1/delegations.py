"""``/v1/delegations``: a person lets another answer in their place while away (see
:mod:`openwop_bridge.core.delegations`)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.delegations import Delegation
from openwop_bridge.host.http.delegations import DelegationBody, create_delegation
from openwop_bridge.host.http.deps import engine, principal
from openwop_bridge.host.http.openapi_ops import error_responses, json_response, path_param
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.routing import Operation

__all__ = ["OPERATIONS"]


def _doc(made: Delegation) -> dict[str, Any]:
    return {
        "delegationId": made.delegation_id,
        "delegator": made.delegator,
        "delegate": made.delegate,
        "from": iso_ms(made.from_ms),
        "until": iso_ms(made.until_ms),
        "workflows": list(made.workflows),
        "reason": made.reason,
        "createdBy": made.created_by,
        "createdAt": iso_ms(made.created_at_ms),
        **({"endedAt": iso_ms(made.ended_at_ms)} if made.ended_at_ms is not None else {}),
    }


async def create(request: Request) -> Response:
    """Make a delegation (201)."""
    made = await create_delegation(request, principal(request))
    return JSONResponse(_doc(made), status_code=201)


async def listed(request: Request) -> Response:
    """The caller's delegations, made by them or to them (an admin: the tenant's)."""
    found = await engine(request).delegations(principal(request))
    return JSONResponse({"delegations": [_doc(d) for d in found]})


async def end(request: Request) -> Response:
    """End a delegation now."""
    ended = await engine(request).end_delegation(principal(request), request.path_params["delegation_id"])
    return JSONResponse(_doc(ended))


_ONE = {"type": "object", "required": ["delegationId", "delegator", "delegate", "from", "until"]}
_TAGS = ("delegations",)

OPERATIONS = (
    Operation(
        "POST",
        "/v1/delegations",
        create,
        "Let someone answer in your place while you are away",
        {"201": json_response(_ONE, "The delegation"), **error_responses(400, 401, 403, 409, 413, 415)},
        scope="approvals:respond",
        body=DelegationBody,
        tags=_TAGS,
    ),
    Operation(
        "GET",
        "/v1/delegations",
        listed,
        "Your delegations, made by you or to you (an admin: the tenant's)",
        {"200": json_response({"type": "object", "required": ["delegations"]}), **error_responses(401, 403)},
        scope="approvals:respond",
        tags=_TAGS,
    ),
    Operation(
        "DELETE",
        "/v1/delegations/{delegationId}",
        end,
        "End a delegation now",
        {"200": json_response(_ONE, "The ended delegation"), **error_responses(401, 403, 404, 409)},
        scope="approvals:respond",
        params=(path_param("delegationId", "The delegation's id"),),
        tags=_TAGS,
    ),
)
