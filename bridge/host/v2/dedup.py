"""``OpenWOP-Dedup: enforce`` on ``POST /runs``: one active run per ``(tenantId, scopeId)`` (runs.md §Create).

A claim is one key-value entry per ``(tenant, scopeId)`` in the engine's adapter state, replaced rather than
accumulated: ``{"pending": <nonce>, "at": <ms>}`` while a create is under way, then ``{"runId": <id>}`` (a
failed create deletes it). A claim is live while its run is not terminal (or, pending, for
:data:`PENDING_GRACE_MS`); a stale one is taken over by compare-and-set, so of two creates racing for it exactly
one wins. A duplicate is ``409 run_already_active``
with ``Retry-After`` and creates nothing.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic import Field

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.errors import ValidationError
from openwop_bridge.host.http.body import CreateRunBody
from openwop_bridge.host.v2.errors import RunAlreadyActiveError
from openwop_bridge.runtime.adapter_state import AdapterState
from openwop_bridge.runtime.engine import Engine

HEADER = "openwop-dedup"
NAMESPACE = "openwop.v2.dedup"
#: How long a claim whose create has not finished keeps others out (a crashed create frees it after this).
PENDING_GRACE_MS = 30_000
#: ``Retry-After`` (seconds) while the claiming run is active: its end is not predictable, so poll soon.
ACTIVE_RETRY_S = 1
#: Attempts at taking a stale claim before answering 409 (each lost attempt means another create took it).
ATTEMPTS = 3


class CreateRunBodyV2(CreateRunBody):
    """``POST /runs``: the v1 fields plus ``scopeId``."""

    scopeId: str | None = Field(default=None, min_length=1, max_length=256)


def enforced(value: str | None) -> bool:
    """Whether the header asks for dedup: absent is no, ``enforce`` is yes, anything else is a 400."""
    if value is None:
        return False
    if value.strip().lower() != "enforce":
        raise ValidationError("OpenWOP-Dedup takes the value enforce", details={"header": "OpenWOP-Dedup"})
    return True


def _key(who: Principal, body: CreateRunBodyV2) -> str:
    """The claim key: the tenant the run will be created in, and the scope."""
    if not body.scopeId:
        raise ValidationError("OpenWOP-Dedup needs a scopeId in the body", details={"field": "scopeId"})
    return f"{who.run_tenant(body.tenantId)}/{body.scopeId}"


async def _retry_after_s(eng: Engine, held: Any, now_ms: int) -> int | None:
    """Seconds until the claim ``held`` is stale-eligible, or None when it is stale now."""
    if not isinstance(held, dict):
        return None
    if "pending" in held:
        left = int(held.get("at", 0)) + PENDING_GRACE_MS - now_ms
        return max(1, math.ceil(left / 1000)) if left > 0 else None
    run = await eng.run_record(str(held.get("runId", "")))
    return ACTIVE_RETRY_S if run is not None and not run.terminal else None


async def _take(eng: Engine, state: AdapterState, key: str, mine: dict[str, Any]) -> None:
    """Take the claim on ``key`` for ``mine``, or raise :class:`RunAlreadyActiveError`."""
    for _ in range(ATTEMPTS):
        if await state.put(key, mine, only_if_absent=True):
            return
        held = await state.get(key)
        wait = await _retry_after_s(eng, held, eng.clock.now_ms())
        if wait is not None:
            raise RunAlreadyActiveError(
                "a run for this scopeId is still active", wait, details={"scopeId": key.split("/", 1)[1]}
            )
        if await state.replace(key, held, mine):
            return
    raise RunAlreadyActiveError("another create took this scopeId", ACTIVE_RETRY_S)


@asynccontextmanager
async def claim(eng: Engine, who: Principal, body: CreateRunBodyV2) -> AsyncIterator[dict[str, str]]:
    """Hold the ``(tenant, scopeId)`` claim around a create; put the new run's id in the yielded dict."""
    state = eng.adapter_state(NAMESPACE)
    key = _key(who, body)
    mine = {"pending": uuid.uuid4().hex, "at": eng.clock.now_ms()}
    await _take(eng, state, key, mine)
    made: dict[str, str] = {}
    try:
        yield made
    finally:
        # A made run binds the claim; a failed create deletes it, so refused creates leave nothing stored.
        if made:
            await state.replace(key, mine, {"runId": made["runId"]})
        else:
            await state.forget_if(key, mine)
