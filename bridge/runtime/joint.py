"""An answer and the step it wakes, committed as one transaction.

When an answer finds its run released (no executor anywhere, nothing else to
do), the decision is taken on the rows as read, and the run is resumed here at
once on what that decision makes of them: the interrupt settled, the run
leased to this instance under its next epoch. The executor hands its first
commit back (:class:`Handoff`) and the answer's transaction carries it
(:meth:`~openwop_bridge.store.base.Store.answer_and_step`); the answer is acknowledged
once that one transaction is durable.

The store applies the decision only if neither row changed since it was read;
otherwise it decides again under the lock, the resumed executor is dropped and
the run goes on the ordinary way. Other answers and cancels of the run wait
here until the answer in flight ended (:meth:`~openwop_bridge.runtime.kernel.Kernel.joint_settled`). Writers on
other instances sharing the database (PostgreSQL) take the run's row lock like
the answer's transaction does: whichever commits first, the other sees its rows,
and an answer that comes second decides again. A step still busy after
``BUDGET_S`` does not hold the answer: the answer commits alone and the step
follows in its own transaction.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from openwop_bridge.core.errors import BridgeError, StaleOwnerError
from openwop_bridge.core.records import InterruptDecision, InterruptRecord, Mutation, RunRecord, replaced
from openwop_bridge.runtime.hub import EventHub
from openwop_bridge.store.base import Claim, CommitResult, MutationResult, RunCommit, Store

#: How long an answer waits for the step it woke before committing alone (0: it never waits).
BUDGET_S = 0.05


@dataclass(eq=False)
class Handoff:
    """Between an answer and the executor it resumed: the executor's first commit, and its outcome."""

    #: The step, or None once the answer stopped waiting for it (see :func:`_offered_within`).
    offered: asyncio.Future[RunCommit | None]
    result: asyncio.Future[CommitResult]
    #: Resolved once the answer's transaction ended (committed or not).
    answered: asyncio.Future[None]
    #: Set when the answer commits alone: the executor then commits on its own, after it.
    closed: bool = False
    #: Stops the resumed executor and forgets it (the answer did not commit as foreseen).
    drop: list[Callable[[], None]] = field(default_factory=list)
    #: The executor's own wait for ``result`` (see :func:`step_outcome`).
    told: asyncio.Future[CommitResult] | None = None
    #: The task that commits the answer (held here while it runs).
    joining: asyncio.Task[None] | None = None


class JointHost(Protocol):
    """What an answer needs from the engine (a :class:`~openwop_bridge.runtime.kernel.Kernel` is one)."""

    store: Store
    hub: EventHub

    @property
    def claim(self) -> Claim:
        """Lease a run a mutation wakes to this instance in that same transaction."""

    def start_joint(self, run: RunRecord, settled: InterruptRecord) -> Handoff | None:
        """Resume a run an answer not yet committed leases here; None when that cannot be."""

    def dispatch(self, run_id: str) -> None:
        """Make sure the run's work gets done: wake its executor here or start one."""

    def after_mutation(self, result: MutationResult) -> None:
        """Publish a guarded mutation's events and wake or start the run's executor."""


def _eligible(run: RunRecord | None, intr: InterruptRecord) -> bool:
    """A released, waiting run whose open interrupt this answer may settle."""
    return (
        run is not None
        and intr.open
        and run.owner is None
        and not run.needs_work
        and not run.terminal
        and run.status != "cancelling"
        and not run.control
    )


def _speculate(
    run: RunRecord, intr: InterruptRecord, m: Mutation, now: int, claim: Claim
) -> tuple[RunRecord, InterruptRecord]:
    """The run and interrupt rows as the store will leave them once ``m`` applied and leased the run here.

    The resumed run takes the state document ``run`` was read with, uncopied: the rows seen are
    compared by version alone (:func:`openwop_bridge.store.plan.run_version`), and decisions never read it.
    """
    settled = replaced(intr)
    settled.status = m.interrupt_status or intr.status
    if m.interrupt_state is not None:
        settled.state = m.interrupt_state
    if m.resolution is not None:
        settled.resolution = m.resolution
    if m.resolved_at_ms is not None:
        settled.resolved_at_ms = m.resolved_at_ms
    leased = replaced(run)
    leased.status = m.run_status or run.status
    leased.wake = run.wake + 1
    leased.needs_work = True
    leased.next_seq = run.next_seq + len(m.events)
    leased.updated_at_ms = now
    leased.owner = claim.owner
    leased.lease_until_ms = now + claim.lease_ms
    leased.epoch = run.epoch + 1
    return leased, settled


async def answer_with_step(
    host: JointHost, decide: InterruptDecision, current: InterruptRecord, now: int, run: RunRecord | None = None
) -> MutationResult | None:
    """Apply an answer together with the step it wakes; None when the ordinary path must take it.

    ``run`` is the interrupt's run as the caller read it just now, if it did (else it is read here).
    """
    if run is None or run.run_id != current.run_id:
        run = await host.store.load_run(current.run_id)
    if run is None or not _eligible(run, current):
        return None
    try:
        decided = decide(current, run)
    except BridgeError:
        return None
    if decided.error is not None or not decided.wake or decided.cancel_interrupts or decided.control is not None:
        return None
    claim = host.claim
    leased, settled = _speculate(run, current, decided, now, claim)
    handoff = host.start_joint(leased, settled)
    if handoff is None:
        return None
    if BUDGET_S <= 0:
        # Offered no more before the resumed executor even starts: a step ready at once stays out too.
        _stop_offers(handoff.offered)
    # In a task of its own: whatever becomes of the caller, the resumed executor learns how the answer
    # ended. The caller waits on a future of its own, which the task settles (in the turn it ends).
    reply: asyncio.Future[MutationResult] = asyncio.get_running_loop().create_future()
    handoff.joining = asyncio.ensure_future(
        _reply(reply, _join(host, handoff, (run, current), decided, decide, now, claim))
    )
    return await reply


async def _reply(reply: asyncio.Future[MutationResult], joining: Coroutine[Any, Any, MutationResult]) -> None:
    """Run ``joining`` and hand its outcome to ``reply``, unless whoever waited on that went away."""
    try:
        result = await joining
    except asyncio.CancelledError:
        reply.cancel()
        raise
    except BaseException as exc:
        if not reply.done():
            reply.set_exception(exc)
        if not isinstance(exc, Exception):
            raise
    else:
        if not reply.done():
            reply.set_result(result)


def step_outcome(handoff: Handoff) -> asyncio.Future[CommitResult]:
    """What the resumed executor awaits for the outcome of the step it handed to the answer.

    A future of its own, settled with ``handoff.result`` in the same turn: cancelling the
    executor cancels only that one, never the outcome the answer shares.
    """
    if handoff.result.done():
        return handoff.result
    handoff.told = asyncio.get_running_loop().create_future()
    return handoff.told


def _tell(handoff: Handoff, committed: CommitResult) -> None:
    """The step committed: record it, and wake the executor waiting for it."""
    handoff.result.set_result(committed)
    if handoff.told is not None and not handoff.told.done():
        handoff.told.set_result(committed)


async def _join(
    host: JointHost,
    handoff: Handoff,
    seen: tuple[RunRecord, InterruptRecord],
    decided: Mutation,
    decide: InterruptDecision,
    now: int,
    claim: Claim,
) -> MutationResult:
    """Wait (within the budget) for the resumed step, commit it with the answer, and tell the executor."""
    run_id = seen[0].run_id
    try:
        step = await _offered_within(handoff.offered, BUDGET_S)
        handoff.closed = step is None
        answered = await host.store.answer_and_step(seen, decided, decide, now, claim, step)
    except BaseException as exc:
        # Told first: the executor may be waiting for it, and stopping it would cancel that wait.
        _answered(handoff)
        _stop(handoff, exc)
        host.dispatch(run_id)  # whatever committed instead (a cancel, another answer) is seen to
        raise
    finally:
        _answered(handoff)
    result, committed = answered.mutation, answered.step
    if answered.as_seen and result.claimed and result.run is not None and result.run.epoch == seen[0].epoch + 1:
        host.hub.publish(run_id, result.events)
        if step is not None and committed is None:
            # Left out of the answer's transaction: it follows in its own.
            try:
                committed = await host.store.commit(step)
            except BaseException as exc:
                _stop(handoff, exc)
                raise
        if step is not None and committed is not None:
            _tell(handoff, committed)
    else:
        _stop(handoff, StaleOwnerError(f"run {run_id} changed before the answer committed"))
        host.after_mutation(result)
    if answered.error is not None:
        raise answered.error
    return result


async def _offered_within(offered: asyncio.Future[RunCommit | None], budget_s: float) -> RunCommit | None:
    """The step the resumed executor offers within ``budget_s``, else None (then it is offered no more:
    the executor sees ``offered`` done and commits on its own, after the answer)."""
    if offered.done():  # a step ready at once (or no longer awaited) needs no timer
        return offered.result()
    timer = asyncio.get_running_loop().call_later(budget_s, _stop_offers, offered)
    try:
        return await offered
    finally:
        timer.cancel()


def _stop_offers(offered: asyncio.Future[RunCommit | None]) -> None:
    """The answer waits for the step no longer."""
    if not offered.done():
        offered.set_result(None)


def _answered(handoff: Handoff) -> None:
    """The answer's transaction ended (committed or not)."""
    if not handoff.answered.done():
        handoff.answered.set_result(None)


def _stop(handoff: Handoff, error: BaseException) -> None:
    """Drop the executor resumed for an answer that did not commit as foreseen."""
    if not handoff.result.done():
        handoff.result.set_exception(error)
        handoff.result.exception()  # retrieved: nobody may be waiting on it
    if handoff.told is not None and not handoff.told.done():
        handoff.told.set_exception(error)
        handoff.told.exception()  # likewise: the executor is stopped below
    for drop in handoff.drop:
        drop()
