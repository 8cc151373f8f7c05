"""``/v1/delegations``: a person lets another answer in their place while away (see
:mod:`openwop_bridge.core.delegations`)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from openwop_bridge.core.clock import iso_ms, parse_iso_ms
from openwop_bridge.core.delegations import Delegation
from openwop_bridge.core.errors import ValidationError
from openwop_bridge.host.http.body import ClosedModel, parse, read_json
from openwop_bridge.host.http.deps import engine, principal
from openwop_bridge.host.http.openapi_ops import error_responses, json_response, path_param
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.routing import Operation

__all__ = ["OPERATIONS", "DelegationBody"]


class DelegationBody(ClosedModel):
    """``POST /v1/delegations``."""

    delegate: str = Field(min_length=1, max_length=256)
    #: When it stops (ISO 8601 with a zone, or epoch milliseconds).
    until: str | int
    #: When it starts (default now).
    from_: str | int | None = Field(default=None, alias="from")
    workflows: list[str] = Field(default_factory=list, max_length=50)
    reason: str = Field(default="", max_length=500)
    #: Whom it is for: the caller, or anyone when an admin makes it.
    delegator: str | None = Field(default=None, min_length=1, max_length=256)


_ZONED = re.compile(r"(Z|[+-][0-9]{2}:[0-9]{2})$")


def _ms(value: str | int, name: str) -> int:
    """Epoch milliseconds from epoch milliseconds or an ISO 8601 time that names its zone."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = value if isinstance(value, str) else ""  # a boolean is no time
    try:
        if not _ZONED.search(text.strip()):
            raise ValueError(text)
        return parse_iso_ms(text)
    except (ValueError, OverflowError):
        raise ValidationError(
            f"{name}: an ISO 8601 time with its zone (2026-12-24T09:00:00Z) or epoch milliseconds"
        ) from None


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
    who = principal(request)
    body = parse(DelegationBody, await read_json(request))
    made = await engine(request).create_delegation(
        who,
        delegate=body.delegate,
        until_ms=_ms(body.until, "until"),
        from_ms=None if body.from_ is None else _ms(body.from_, "from"),
        workflows=body.workflows,
        reason=body.reason,
        delegator=body.delegator,
    )
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
