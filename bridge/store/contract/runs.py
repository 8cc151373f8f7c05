"""Runs in a store: created, leased, stepped by their executor, decided on, found.

The two kinds of writes (see :mod:`openwop_bridge.store.base`) both go through here: an executor's
:meth:`RunStore.commit`, and :meth:`RunStore.mutate_run` (with :meth:`RunStore.answer_and_step`, an answer
and the step it wakes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptDecision, InterruptRecord, Mutation, RunDecision, RunRecord
from openwop_bridge.store.values import AnswerStepResult, Claim, CommitResult, KvWrite, MutationResult, RunCommit


class RunStore(Protocol):
    """Runs: insert, lease, commit steps, apply decisions, and the queries recovery and children need."""

    async def create_run(
        self, run: RunRecord, events: Sequence[EventDraft], writes: Sequence[KvWrite] = ()
    ) -> list[dict[str, Any]]:
        """Insert a run and its first events, with adapters' ``writes`` in the same transaction.

        A write ``only_if_absent`` whose key is stored already raises
        :class:`~openwop_bridge.core.errors.KeyTakenError` and nothing is written.
        """

    async def load_run(self, run_id: str) -> RunRecord | None:
        """One run, or None."""

    async def claim_run(self, run_id: str, owner: str, now_ms: int, lease_ms: int) -> RunRecord | None:
        """Take ownership when free (or the lease expired); bumps ``epoch``. None if taken."""

    async def renew_leases(self, owner: str, run_ids: Sequence[str], now_ms: int, lease_ms: int) -> int:
        """Extend this owner's leases on ``run_ids`` (the runs it is executing); returns how many.

        A run the owner holds but no longer executes is left to expire, so
        recovery (here or on another instance) picks it up again.
        """

    async def commit(self, commit: RunCommit) -> CommitResult:
        """Apply an executor step; raises :class:`~openwop_bridge.core.errors.StaleOwnerError` when fenced."""

    def commit_soon(self, commit: RunCommit) -> asyncio.Future[CommitResult]:
        """:meth:`commit`, started now: the future settles once the step is durable (or failed), whether or
        not anyone still awaits it."""

    async def answer_and_step(
        self,
        seen: tuple[RunRecord, InterruptRecord],
        decided: Mutation,
        decide: InterruptDecision,
        now_ms: int,
        claim: Claim,
        step: RunCommit | None,
    ) -> AnswerStepResult:
        """Apply an answer ``decided`` on the rows ``seen`` and the step it woke, in one transaction.

        If either row changed since, ``decide`` runs again under the lock and ``step`` is left out;
        ``step`` is also left out unless the answer leased the run to its epoch.
        """

    async def mutate_run(
        self, run_id: str, decide: RunDecision, now_ms: int, *, claim: Claim | None = None
    ) -> MutationResult:
        """Apply a decision to a run and its open interrupts in one transaction."""

    async def runs_needing_work(self, now_ms: int, limit: int = 500) -> list[str]:
        """Runs that have work and no live owner (recovery, reclaim)."""

    async def child_runs(self, parent_run_id: str) -> list[RunRecord]:
        """Children of a run, oldest first."""

    async def find_child(self, parent_run_id: str, node_id: str, visit: int, ordinal: int) -> str | None:
        """The child a node activation started at ``ordinal``, if it exists."""

    async def release_owned(self, owner: str) -> list[str]:
        """Give up every lease ``owner`` holds, on a graceful stop: its runs are left needing work and unowned,
        and a shared store tells every other instance, so one of them claims each at once. Returns their ids."""

    async def reset_owners(self) -> int:
        """Forget every lease (single-instance stores, at start-up after a crash)."""

    async def list_runs(
        self, tenant: str, *, workflow_id: str | None, status: str | None, limit: int, cursor: str | None
    ) -> tuple[list[RunRecord], str | None]:
        """Runs of a tenant, newest first."""
