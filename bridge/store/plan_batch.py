"""Several decisions in one transaction: all of them apply, or none does.

:func:`mutate_all` decides on each interrupt in turn (each by its run-scoped address, its run's
row locked first, as :func:`openwop_bridge.store.plan.mutate_interrupt` does) and applies the
decision. The first decision that refuses raises :class:`BatchItemRefused`, which rolls the whole
transaction back: no answer, vote, event or audit entry of any item stays. The caller orders the
items by run (the lock order every batch shares, so two batches cannot deadlock).
"""

from __future__ import annotations

from collections.abc import Sequence

from openwop_bridge.core.errors import BridgeError
from openwop_bridge.core.records import InterruptDecision
from openwop_bridge.store import plan
from openwop_bridge.store.base import Claim, MutationResult
from openwop_bridge.store.codec import Dialect
from openwop_bridge.store.steps import Plan

__all__ = ["BatchItemRefused", "Decisions", "mutate_all"]

#: ``(run_id, node_id, decide)`` of each item, in the order they are applied.
Decisions = Sequence[tuple[str, str, InterruptDecision]]


class BatchItemRefused(Exception):
    """The decision of item ``index`` refused: nothing of the batch was applied."""

    def __init__(self, index: int, error: BridgeError) -> None:
        super().__init__(f"item {index}: {error.message}")
        self.index = index
        self.error = error


def mutate_all(d: Dialect, decisions: Decisions, now_ms: int, claim: Claim | None) -> Plan[list[MutationResult]]:
    """Decide on and apply every item, or raise :class:`BatchItemRefused` (the transaction rolls back)."""
    results: list[MutationResult] = []
    for index, (run_id, node_id, decide) in enumerate(decisions):
        try:
            result, error = yield from plan.mutate_interrupt(d, decide, now_ms, claim, None, run_id, node_id)
        except BridgeError as exc:
            raise BatchItemRefused(index, exc) from exc
        if error is not None:
            raise BatchItemRefused(index, error)
        results.append(result)
    return results
