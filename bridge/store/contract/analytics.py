"""Analytics reads in a store: the settled interrupts of a window, for the decision report."""

from __future__ import annotations

from typing import Protocol

from openwop_bridge.core.decision_stats import SettledPage


class AnalyticsStore(Protocol):
    """Bounded reads for reports: one range of an index per request, however large the store."""

    async def settled_interrupts(self, tenant: str, from_ms: int, to_ms: int, limit: int) -> SettledPage:
        """The interrupts of ``tenant`` settled in ``[from_ms, to_ms)``, oldest settled first, at most ``limit``
        (``truncated`` when more were settled in the window), each with what
        :class:`~openwop_bridge.core.decision_stats.SettledInterrupt` holds: the fields of its resolution and
        votes the report needs (not whole documents), when its first notice to a person was delivered and whether
        one of them was dead-lettered (looked up by interrupt in the outbox's ``outbox_interrupt`` index)."""
