"""Analytics reads in a store: the settled interrupts of a window, for the decision report."""

from __future__ import annotations

from typing import Protocol

from openwop_bridge.core.decision_stats import SettledPage


class AnalyticsStore(Protocol):
    """Bounded reads for reports: each page one range of an index, however large the store."""

    async def settled_interrupts(
        self, tenant: str, from_ms: int, to_ms: int, limit: int, *, after: tuple[int, str] | None = None
    ) -> SettledPage:
        """A page of the interrupts of ``tenant`` settled in ``[from_ms, to_ms)``, oldest settled first, after
        ``(resolved_at, interrupt_id)`` when given, at most ``limit`` (``more`` when others follow).

        Each holds what :class:`~openwop_bridge.core.decision_stats.SettledInterrupt` does: the fields of its
        resolution and of its first :data:`~openwop_bridge.core.decision_stats.VOTES_READ` votes the report needs
        (never whole documents), when its first notice to a person was delivered and whether one of them was
        dead-lettered (looked up by interrupt in the outbox's ``outbox_interrupt`` index).
        """
