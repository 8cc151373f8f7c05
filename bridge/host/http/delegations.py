"""Making a delegation over HTTP, shared by ``/v1/delegations`` and v2's ``/delegations``: the request body,
its times, and the engine call (the rules are :mod:`openwop_bridge.runtime.delegations`')."""

from __future__ import annotations

import re

from pydantic import Field
from starlette.requests import Request

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.clock import parse_iso_ms
from openwop_bridge.core.delegations import MAX_WORKFLOWS, Delegation
from openwop_bridge.core.errors import ValidationError
from openwop_bridge.host.http.body import ClosedModel, parse, read_json
from openwop_bridge.host.http.deps import engine

__all__ = ["DelegationBody", "create_delegation"]


class DelegationBody(ClosedModel):
    """``POST /v1/delegations`` and v2's ``POST /delegations``."""

    delegate: str = Field(min_length=1, max_length=256)
    #: When it stops (ISO 8601 with a zone, or epoch milliseconds).
    until: str | int
    #: When it starts (default now).
    from_: str | int | None = Field(default=None, alias="from")
    workflows: list[str] = Field(default_factory=list, max_length=MAX_WORKFLOWS)
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


async def create_delegation(request: Request, who: Principal) -> Delegation:
    """Make the delegation the request's :class:`DelegationBody` asks for, as ``who``."""
    body = parse(DelegationBody, await read_json(request))
    return await engine(request).create_delegation(
        who,
        delegate=body.delegate,
        until_ms=_ms(body.until, "until"),
        from_ms=None if body.from_ is None else _ms(body.from_, "from"),
        workflows=body.workflows,
        reason=body.reason,
        delegator=body.delegator,
    )
