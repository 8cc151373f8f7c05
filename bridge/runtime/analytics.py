"""Reports over what people decided (``GET /v1/analytics/decisions``; see :mod:`openwop_bridge.core.decision_stats`)."""

from __future__ import annotations

from typing import Any

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.decision_stats import GroupBy, report
from openwop_bridge.store.contract.analytics import AnalyticsStore

#: The scope a report needs.
AUDIT_SCOPE = "audit:read"


async def decision_report(
    store: AnalyticsStore, principal: Principal, group_by: GroupBy, from_ms: int, to_ms: int, cap: int
) -> dict[str, Any]:
    """The decision figures of the caller's tenant for ``[from_ms, to_ms)``, from at most ``cap`` settled
    interrupts (the report says ``truncated`` when the window held more)."""
    principal.require(AUDIT_SCOPE)
    page = await store.settled_interrupts(principal.tenant, from_ms, to_ms, cap)
    return report(page, group_by, from_ms, to_ms, cap)
