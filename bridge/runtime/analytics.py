"""Reports over what people decided (``GET /v1/analytics/decisions``; see :mod:`openwop_bridge.core.decision_stats`).

A window is read a page of :data:`CHUNK` settled interrupts at a time, each page one range of the store's
index, and only each decision's group, outcome and times are kept; the read stops once the report holds
``cap`` decisions, and then says ``truncated`` when the window held more.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.decision_stats import GroupBy, Tally
from openwop_bridge.store.contract.analytics import AnalyticsStore

#: The scope a report needs.
AUDIT_SCOPE = "audit:read"
#: Settled interrupts read per statement.
CHUNK = 1_000


async def decision_report(
    store: AnalyticsStore, principal: Principal, group_by: GroupBy, from_ms: int, to_ms: int, cap: int
) -> dict[str, Any]:
    """The decision figures of the caller's tenant for ``[from_ms, to_ms)``, from the settled interrupts up to
    the one that brings the decisions counted to ``cap`` (``truncated`` when the window held more)."""
    principal.require(AUDIT_SCOPE)
    tally = Tally(group_by)
    after: tuple[int, str] | None = None
    while True:
        page = await store.settled_interrupts(principal.tenant, from_ms, to_ms, CHUNK, after=after)
        for index, row in enumerate(page.rows):
            tally.add(row)
            if tally.decisions >= cap:
                tally.truncated |= page.more or index < len(page.rows) - 1
                return tally.report(from_ms, to_ms, cap)
        if not page.more:
            return tally.report(from_ms, to_ms, cap)
        after = page.after
