"""Interrupts in a store: found by id, address, key or place; decided on; listed in inboxes; due."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from openwop_bridge.core.notices import Audience
from openwop_bridge.core.records import InterruptDecision, InterruptRecord, RunRecord
from openwop_bridge.store.values import Claim, InboxPage, MutationResult


class InterruptStore(Protocol):
    """Interrupts: reads, the one guarded decision write, inboxes, deadlines."""

    async def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        """One interrupt, or None."""

    async def interrupt_at(self, run_id: str, node_id: str) -> InterruptRecord | None:
        """The latest interrupt at a run-scoped address (``nodeId``)."""

    async def run_and_interrupt_at(self, run_id: str, node_id: str) -> tuple[RunRecord | None, InterruptRecord | None]:
        """A run and the latest interrupt at one of its addresses, read together (one snapshot, one round trip)."""

    async def interrupt_by_key(self, run_id: str, key: str) -> InterruptRecord | None:
        """The interrupt of a run with this key."""

    async def interrupt_at_slot(self, run_id: str, exec_node: str, visit: int, ordinal: int) -> InterruptRecord | None:
        """The interrupt a node raised at a given place in one of its activations."""

    async def node_interrupts(self, run_id: str, exec_node: str) -> list[InterruptRecord]:
        """Every interrupt a workflow node raised in a run."""

    async def exchange_answers(self, run_id: str, exec_node: str, conversation_id: str) -> list[tuple[str, Any]]:
        """``(key, resumeValue)`` of each answered (not closing) exchange of a node's conversation, in turn order
        (the rows' ``answer`` column: see :func:`~openwop_bridge.core.decisions.exchange.kept_answer`)."""

    async def run_interrupts(self, run_id: str, *, open_only: bool) -> list[InterruptRecord]:
        """Interrupts of a run, oldest first."""

    async def unconsumed(self, run_id: str) -> list[InterruptRecord]:
        """Settled interrupts whose node has not yet seen the answer."""

    async def mutate_interrupt(
        self,
        decide: InterruptDecision,
        now_ms: int,
        *,
        interrupt_id: str | None = None,
        run_id: str | None = None,
        node_id: str | None = None,
        claim: Claim | None = None,
    ) -> MutationResult:
        """Apply a decision to one interrupt (by id or by run-scoped address)."""

    async def mutate_interrupts(
        self, decisions: Sequence[tuple[str, str, InterruptDecision]], now_ms: int, *, claim: Claim | None = None
    ) -> list[MutationResult]:
        """Apply a decision to each ``(run_id, node_id)`` in one transaction: all, or none when one refuses
        (:class:`openwop_bridge.store.plan_batch.BatchItemRefused`, naming the item, is raised)."""

    async def inbox(self, tenant: str, *, kind: str | None, status: str, limit: int, cursor: str | None) -> InboxPage:
        """Interrupts of a tenant by status (and kind), oldest first, cursor-paginated."""

    async def waiting_on(
        self, tenant: str, audience: Audience, *, limit: int, after: tuple[int, str] | None = None
    ) -> list[InterruptRecord]:
        """The open interrupts of a listed kind in ``tenant`` that may wait on ``audience``'s person (see
        :class:`~openwop_bridge.core.notices.Audience`), oldest first, after ``(requested_at, interrupt_id)``: found by
        who the person is, however many other interrupts wait in the tenant."""

    async def inbox_count(self, tenant: str, *, kind: str | None, status: str) -> int:
        """How many interrupts :meth:`inbox` lists over all its pages (counted in the inbox's index)."""

    async def next_deadline(self) -> int | None:
        """Earliest deadline among open interrupts."""

    async def pending_by_kind(self) -> list[tuple[str, int, int]]:
        """``(kind, open interrupts, earliest requested_at)`` for each kind with open interrupts, every tenant."""

    async def due_interrupts(self, now_ms: int, limit: int = 200) -> list[str]:
        """Open interrupts whose deadline has passed."""
