"""Batch decisions: answer several interrupts in one request, all together or each on its own.

:meth:`BatchAnswers.resolve_batch` takes up to :data:`MAX_ITEMS` items ``(run_id, node_id,
value)``. Every item is first found, authorised and validated against the interrupt as it
stands (the same decision a single answer makes, tried without applying it). Then:

- ``atomic``: if any item is refused, nothing is applied and the first refusal is raised with
  every item's outcome in its details (``refused`` with its error, or ``not-applied``);
  otherwise every answer is applied in one transaction (:meth:`Store.mutate_interrupts`), which
  decides each item again on the rows it locks and rolls back whole if one no longer holds;
- not ``atomic``: each item is answered as a single answer would be, and its outcome reported,
  whatever happens to the others.

Conversation turns are answered one at a time (their order matters): a batch refuses them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openwop_bridge.core import kinds
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.decisions.answer import answer_decision, prepare_answer
from openwop_bridge.core.decisions.common import Answer
from openwop_bridge.core.errors import BridgeError, InterruptNotFoundError, ValidationError
from openwop_bridge.core.records import InterruptDecision, InterruptRecord
from openwop_bridge.runtime.answers import AnswerService
from openwop_bridge.runtime.kernel import Kernel
from openwop_bridge.runtime.runs import RunService
from openwop_bridge.store.plan_batch import BatchItemRefused
from openwop_bridge.store.values import MutationResult

__all__ = ["MAX_ITEMS", "BatchAnswers", "BatchItem"]

#: The most items one batch may hold.
MAX_ITEMS = 100


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One answer of a batch: the interrupt's run-scoped address and the resume value."""

    run_id: str
    node_id: str
    value: Any


@dataclass(slots=True)
class _Ready:
    index: int
    item: BatchItem
    record: InterruptRecord
    decide: InterruptDecision


class BatchAnswers:
    """Answering several interrupts at once (see the module docstring)."""

    def __init__(self, kernel: Kernel, runs: RunService, answers: AnswerService) -> None:
        self._k = kernel
        self._runs = runs
        self._answers = answers

    async def resolve_batch(
        self, principal: Principal, items: Sequence[BatchItem], *, atomic: bool = True
    ) -> dict[str, Any]:
        """Answer every item; ``{"atomic", "applied", "items": [outcome…]}`` (see the module docstring).

        Each outcome is ``{index, runId, nodeId}`` with ``interruptId``, ``status``
        (``resolved`` or ``pending``) and ``resumeValue`` once applied, or ``status: "refused"``
        and the OpenWOP error envelope as ``error``.
        """
        principal.require("approvals:respond")
        _check_items(items)
        if not atomic:
            outcomes = [await self._one(principal, index, item) for index, item in enumerate(items)]
            applied = sum(1 for o in outcomes if o["status"] != "refused")
            return {"atomic": False, "applied": applied, "items": outcomes}
        ready: list[_Ready] = []
        refusals: dict[int, BridgeError] = {}
        for index, item in enumerate(items):
            try:
                ready.append(await self._prepared(principal, index, item))
            except BridgeError as exc:
                refusals[index] = exc
        if refusals:
            raise _refused(items, refusals)
        ready.sort(key=lambda r: (r.record.run_id, r.index))  # one lock order for every batch
        now = self._k.clock.now_ms()
        try:
            results = await self._k.store.mutate_interrupts(
                [(r.item.run_id, r.item.node_id, r.decide) for r in ready], now, claim=self._k.claim
            )
        except BatchItemRefused as exc:
            raise _refused(items, {ready[exc.index].index: exc.error}) from None
        outcomes_by_index: dict[int, dict[str, Any]] = {}
        for r, result in zip(ready, results, strict=True):
            self._k.after_mutation(result)
            outcomes_by_index[r.index] = self._applied(r.index, r.item, result, now)
        return {"atomic": True, "applied": len(results), "items": [outcomes_by_index[i] for i in range(len(items))]}

    async def _prepared(self, principal: Principal, index: int, item: BatchItem) -> _Ready:
        """The item's interrupt and decision, once the decision would apply now (else its refusal is raised)."""
        run, record = await self._runs.visible_run_at(item.run_id, item.node_id, principal)
        if record is None or run is None:
            raise InterruptNotFoundError(f"no interrupt at node {item.node_id!r} of run {item.run_id!r}")
        if kinds.kind_of(record.kind).turn:
            raise ValidationError("a conversation's turns are answered one at a time, not in a batch")
        now = self._k.clock.now_ms()
        answer = Answer(
            principal=principal,
            value=item.value,
            surface="run",
            delegation=await self._answers.delegation_for(principal, item.value, record),
            checks=self._k.answer_checks,
            ask_limits=self._k.config.ask_limits,
            conversation_limits=self._k.config.conversation_limits,
        )
        if isinstance(item.value, Mapping) and item.value.get("action") == "ask":
            raise ValidationError("a question ('ask') is asked on its own, not in a batch")
        decide = answer_decision(answer, now, self._k.clock.new_id, prepare_answer(record, answer, now))
        tried = decide(record, run)
        if tried.error is not None:
            raise tried.error
        return _Ready(index, item, record, decide)

    async def _one(self, principal: Principal, index: int, item: BatchItem) -> dict[str, Any]:
        """One item answered on its own, as a single answer is."""
        outcome: dict[str, Any] = {"index": index, "runId": item.run_id, "nodeId": item.node_id}
        try:
            record = await self._answers.interrupt_at(item.run_id, item.node_id, principal)
            if kinds.kind_of(record.kind).turn:
                raise ValidationError("a conversation's turns are answered one at a time, not in a batch")
            body = await self._answers.resolve(principal, item.value, run_id=item.run_id, node_id=item.node_id)
        except BridgeError as exc:
            return {**outcome, "status": "refused", "error": exc.envelope()}
        outcome.update({k: body[k] for k in ("interruptId", "status", "resumeValue") if k in body})
        return outcome

    def _applied(self, index: int, item: BatchItem, result: MutationResult, now: int) -> dict[str, Any]:
        record = result.interrupt
        assert record is not None
        outcome: dict[str, Any] = {
            "index": index,
            "runId": item.run_id,
            "nodeId": item.node_id,
            "interruptId": record.interrupt_id,
            **(result.result or {}),
        }
        if outcome.get("status") == "resolved":
            self._k.metrics.resolved(record.kind, record.requested_at_ms, now)
            if record.resolution:
                outcome["resumeValue"] = record.resolution.get("resumeValue")
        return outcome


def _check_items(items: Sequence[BatchItem]) -> None:
    if not items:
        raise ValidationError("a batch needs at least one item")
    if len(items) > MAX_ITEMS:
        raise ValidationError(
            f"a batch holds at most {MAX_ITEMS} items, this one {len(items)}", details={"maxItems": MAX_ITEMS}
        )
    seen: dict[tuple[str, str], int] = {}
    for index, item in enumerate(items):
        address = (item.run_id, item.node_id)
        if address in seen:
            raise ValidationError(
                f"items {seen[address]} and {index} answer the same interrupt; a batch answers each once",
                details={"items": [seen[address], index]},
            )
        seen[address] = index


def _refused(items: Sequence[BatchItem], refusals: Mapping[int, BridgeError]) -> BridgeError:
    """The first refusal, its message saying nothing was applied, every item's outcome in its details."""
    outcomes: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        outcome: dict[str, Any] = {"index": index, "runId": item.run_id, "nodeId": item.node_id}
        if index in refusals:
            outcomes.append({**outcome, "status": "refused", "error": refusals[index].envelope()})
        else:
            outcomes.append({**outcome, "status": "not-applied"})
    first = min(refusals)
    cause = refusals[first]
    refusal = copy.copy(cause)  # the same code and status as the item's own refusal
    refusal.message = f"item {first} was refused ({cause.message}); nothing in the batch was applied"
    refusal.args = (refusal.message,)
    refusal.details = {"index": first, "items": outcomes}
    return refusal
