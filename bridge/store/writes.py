"""The write side both stores share: contract methods that run a plan of :mod:`openwop_bridge.store.plan`.

Each store supplies :meth:`Writes._plan`, which runs a plan in one of its
transactions; what the transactions decide is written once, in the plans.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.notices import Notice, NoticeDraft, NoticePlanning
from openwop_bridge.core.records import InterruptDecision, InterruptRecord, Mutation, RunDecision, RunRecord
from openwop_bridge.store import plan, plan_batch, plan_kv, plan_outbox, plan_records
from openwop_bridge.store.base import AnswerStepResult, Claim, CommitResult, KvWrite, MutationResult, RunCommit
from openwop_bridge.store.codec import Dialect
from openwop_bridge.store.contract.records import Signer
from openwop_bridge.store.steps import Plan, Recorded

T = TypeVar("T")


class Writes(ABC):
    """Writes of the :class:`~openwop_bridge.store.base.Store` contract written once for both dialects."""

    _dialect: Dialect
    #: Who plans the notices each run write owes, in its transaction, and the caps on queued notices
    #: (see :mod:`openwop_bridge.store.plan_outbox`); given to the store's constructor.
    notice_planning: NoticePlanning
    #: Notices the planners have written here (counted as written: a transaction that fails later counts too).
    notices_written: int = 0
    #: The channels of the notices counted in :attr:`notices_written`, each with its count.
    notices_written_by_channel: Counter[str] | None = None

    #: Who signs the decision record's entries (:mod:`openwop_bridge.store.plan_records`): the engine sets it
    #: when it loads its keys; while it is None, decisions append no record.
    decision_signer: Signer | None = None

    def _planned(self, steps: Plan[T]) -> Plan[T]:
        """``steps`` with the decisions' records appended and the notices the planners plan written in
        (``steps`` itself when there is neither to do)."""
        signer = self.decision_signer
        if signer is not None:
            steps = plan_records.with_records(signer, steps, lock=not self._dialect.question_marks)
        planning = self.notice_planning
        if not planning.asks():
            return steps
        return plan_outbox.with_notices(planning.planners, planning.limits, steps, self._wrote)

    def _wrote(self, drafts: Sequence[NoticeDraft]) -> None:
        self.notices_written += len(drafts)
        if self.notices_written_by_channel is None:
            self.notices_written_by_channel = Counter()
        self.notices_written_by_channel.update(draft.channel for draft in drafts)

    @abstractmethod
    async def _plan(self, make: Callable[[], Plan[T]]) -> T:
        """Run the plan ``make()`` returns in one transaction (called again if the transaction is retried)."""

    async def retire_signing_key(self, kid: str, now_ms: int) -> None:
        await self._plan(lambda: plan_kv.retire_signing_key(kid, now_ms))

    async def create_run(
        self, run: RunRecord, events: Sequence[EventDraft], writes: Sequence[KvWrite] = ()
    ) -> list[dict[str, Any]]:
        return await self._plan(lambda: plan.insert_run(run, events, writes))

    async def commit(self, commit: RunCommit) -> CommitResult:
        return await self._plan(lambda: plan.commit(self._dialect, commit))

    def commit_soon(self, commit: RunCommit) -> asyncio.Future[CommitResult]:
        return asyncio.ensure_future(self.commit(commit))

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
        # The decision's error is raised after the transaction commits, so its audit entries stay.
        result, error = await self._plan(
            lambda: plan.mutate_interrupt(self._dialect, decide, now_ms, claim, interrupt_id, run_id, node_id)
        )
        if error is not None:
            raise error
        return result

    async def mutate_interrupts(
        self, decisions: plan_batch.Decisions, now_ms: int, *, claim: Claim | None = None
    ) -> list[MutationResult]:
        return await self._plan(lambda: plan_batch.mutate_all(self._dialect, decisions, now_ms, claim))

    async def answer_and_step(
        self,
        seen: tuple[RunRecord, InterruptRecord],
        decided: Mutation,
        decide: InterruptDecision,
        now_ms: int,
        claim: Claim,
        step: RunCommit | None,
    ) -> AnswerStepResult:
        return await self._plan(lambda: plan.answer_and_step(self._dialect, seen, decided, decide, now_ms, claim, step))

    async def mutate_run(
        self, run_id: str, decide: RunDecision, now_ms: int, *, claim: Claim | None = None
    ) -> MutationResult:
        result, error = await self._plan(lambda: plan.mutate_run(self._dialect, run_id, decide, now_ms, claim))
        if error is not None:
            raise error
        return result

    async def kv_put(self, namespace: str, key: str, value: Any, now_ms: int, *, only_if_absent: bool = False) -> bool:
        return await self._plan(lambda: plan_kv.kv_put(namespace, key, value, now_ms, only_if_absent))

    async def kv_put_capped(
        self,
        namespace: str,
        key: str,
        value: dict[str, Any],
        now_ms: int,
        *,
        field: str,
        cap: int,
        recorded: Recorded | None = None,
    ) -> bool:
        lock = not self._dialect.question_marks
        return await self._plan(
            lambda: plan_kv.kv_put_capped(namespace, key, value, now_ms, field, cap, lock=lock, recorded=recorded)
        )

    async def kv_replace(
        self, namespace: str, key: str, expected: Any, value: Any, now_ms: int, *, recorded: Recorded | None = None
    ) -> bool:
        return await self._plan(lambda: plan_kv.kv_replace(namespace, key, expected, value, now_ms, recorded))

    async def kv_forget_if(self, namespace: str, key: str, expected: Any) -> bool:
        return await self._plan(lambda: plan_kv.kv_forget_if(namespace, key, expected))

    async def kv_put_soon(self, namespace: str, key: str, value: Any, now_ms: int) -> None:
        await self.kv_put(namespace, key, value, now_ms)

    async def kv_forget_before(self, namespace: str, before_ms: int) -> int:
        return await self._plan(lambda: plan_kv.kv_forget_before(namespace, before_ms))

    async def idempotency_finish(
        self, key_id: str, owner: str, status: int, headers: dict[str, str], body: str
    ) -> bool:
        return await self._plan(lambda: plan_kv.idempotency_finish(key_id, owner, status, headers, body))

    async def idempotency_release(self, key_id: str, owner: str) -> None:
        await self._plan(lambda: plan_kv.idempotency_release(key_id, owner))

    # --- the outbox -----------------------------------------------------------------

    async def outbox_add(self, tenant: str, run_id: str, drafts: Sequence[NoticeDraft], now_ms: int) -> list[str]:
        return await self._plan(
            lambda: plan_outbox.write_notices(tenant, run_id, drafts, now_ms, self.notice_planning.limits)
        )

    async def outbox_claim(
        self,
        owner: str,
        now_ms: int,
        lease_ms: int,
        limit: int,
        channels: Sequence[str] = ("webhook",),
        busy: Sequence[str] = (),
        *,
        busy_tenants: Sequence[str] = (),
    ) -> list[Notice]:
        return await self._plan(
            lambda: plan_outbox.claim(self._dialect, owner, now_ms, lease_ms, limit, channels, busy, busy_tenants)
        )

    async def outbox_settle(
        self,
        notice_id: str,
        owner: str,
        attempt: int,
        status: str,
        next_attempt_ms: int,
        error: str | None,
        now_ms: int,
    ) -> bool:
        return await self._plan(
            lambda: plan_outbox.settle(self._dialect, notice_id, owner, attempt, status, next_attempt_ms, error, now_ms)
        )

    async def outbox_release(self, notice_ids: Sequence[str], owner: str, next_attempt_ms: int) -> int:
        return await self._plan(lambda: plan_outbox.release(notice_ids, owner, next_attempt_ms))

    async def outbox_redrive(
        self,
        channel: str,
        recipient: str,
        tenant: str,
        notice_ids: Sequence[str] | None,
        now_ms: int,
        *,
        cap: int,
        limit: int = 100,
    ) -> list[str]:
        limits = self.notice_planning.limits
        return await self._plan(
            lambda: plan_outbox.redrive(
                self._dialect, channel, recipient, tenant, notice_ids, now_ms, limits, cap, limit
            )
        )

    async def outbox_prune(self, now_ms: int) -> int:
        return await self._plan(lambda: plan_outbox.prune(now_ms, self.notice_planning.limits))
