"""An executor's first commit, which may do more than record a step.

It inserts a new run (:meth:`FirstCommit.prime`), with the adapter-state writes
its creator gave: creating a run and running it until its first suspension (or
its end) is then one transaction. Or it rides
with the answer that resumed the run and is not committed yet
(:mod:`openwop_bridge.runtime.joint`): the answer's transaction carries it, and until
then the interrupt that answer settles is seen as the answer will leave it.
Every later commit goes straight to the store.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import Any

from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.runtime.joint import Handoff, step_outcome
from openwop_bridge.store.base import ChildStart, CommitResult, KvWrite, RunCommit, Store


class FirstCommit:
    """What an executor's first commit carries besides its step, and how it is sent."""

    def __init__(
        self,
        store: Store,
        *,
        create: ChildStart | None = None,
        handoff: Handoff | None = None,
        settled: InterruptRecord | None = None,
    ) -> None:
        """An ordinary first commit; with ``create`` (:meth:`inserting`), it inserts a new run; with ``handoff``
        and ``settled`` (:meth:`joining`), it rides with the answer that resumed the run."""
        self.store = store
        #: The new run and its first events, until the commit that inserts them.
        self.create = create
        #: True once the new run is durable (with its first step), False if it was not inserted; see :meth:`inserting`.
        self.created: asyncio.Future[bool] | None = (
            None if create is None else asyncio.get_running_loop().create_future()
        )
        #: The commit that would have inserted the run failed: the run was never created.
        self.uncreated = False
        #: Resumed for an answer not yet committed: the first commit goes to it (see joint.py) ...
        self.handoff = handoff
        #: ... and until then, the interrupt that answer settles, as it will be stored.
        self.settled = settled

    @classmethod
    def inserting(
        cls, store: Store, run: RunRecord, events: list[EventDraft], writes: Sequence[KvWrite] = ()
    ) -> tuple[FirstCommit, asyncio.Future[bool]]:
        """A first commit that inserts the new run ``run`` (and ``writes``), and its :attr:`created` future.

        The future is True once the run is durable, False when the executor stopped before it was inserted (the
        run was never created); it is the run's creator's alone, who may cancel it by going away.
        """
        first = cls(store, create=ChildStart(run, events, writes))
        assert first.created is not None
        return first, first.created

    @classmethod
    def joining(cls, store: Store, handoff: Handoff, settled: InterruptRecord) -> FirstCommit:
        """A first commit handed to the answer not yet committed that resumed the run and settles ``settled``."""
        return cls(store, handoff=handoff, settled=settled)

    def take_create(self) -> ChildStart | None:
        """The new run the next commit inserts, if any (only the first one does)."""
        create, self.create = self.create, None
        return create

    def abandon(self) -> None:
        """The executor stopped: a run whose inserting commit was never sent is not created."""
        if self.create is not None and self.created is not None and not self.created.done():
            self.created.set_result(False)

    def resumed(self, state: dict[str, Any]) -> list[InterruptRecord] | None:
        """At the first look at a run the answer in flight resumes (``state``: the run as that answer
        read it): the interrupts of the node it resumes when they are known without reading them,
        else ``[]``; None when no answer is in flight. That look reads no other interrupt.

        The answer found the run released with nothing to do: no lease, no pending wake-up
        (:func:`openwop_bridge.runtime.joint._eligible`). Every answer, expiry or cancel that settles an
        interrupt wakes its run in the same transaction, and a run is released only by an executor
        that read, after the wake-up it released at, every settled interrupt not yet consumed and
        resumed or consumed each one it could. So the answer's own interrupt is the only settled one
        this look could act on. The answer commits, and the step with it, only if the run's row is
        still the one it read (:func:`openwop_bridge.store.plan.answer_and_step`); otherwise the executor is
        dropped. A later look (an answer committed meanwhile) reads the store again.
        """
        settled = self.settled
        if settled is None:
            return None
        # Every interrupt a node raises counts in its ``ints``: at most one, and it is this one.
        return [settled] if state["nodes"].get(settled.exec_node, {}).get("ints", 0) <= 1 else []

    def settled_key(self, key: str) -> InterruptRecord | None:
        """The interrupt the answer in flight settles, when it has this idempotency key."""
        settled = self.settled
        return settled if settled is not None and settled.key == key else None

    def overlaid(self, records: list[InterruptRecord]) -> list[InterruptRecord]:
        """``records`` with the interrupt an uncommitted answer settles, as that answer leaves it."""
        settled = self.settled
        if settled is None:
            return records
        return [r for r in records if r.interrupt_id != settled.interrupt_id] + [settled]

    def replaced(self, records: list[InterruptRecord], node_id: str) -> list[InterruptRecord]:
        """A node's ``records``, the one an uncommitted answer settles as that answer leaves it."""
        settled = self.settled
        if settled is None or settled.exec_node != node_id:
            return records
        return [settled if r.interrupt_id == settled.interrupt_id else r for r in records]

    async def before_answer(self, claimed: bool) -> None:
        """Woken again before the answer that leased the run here committed: wait for it to."""
        if self.handoff is not None and not claimed:
            # Shielded here and below: stopping this executor must not cancel what the answer,
            # and whatever waits for it (``joint_settled``), share.
            await asyncio.shield(self.handoff.answered)

    async def send(self, commit: RunCommit) -> CommitResult:
        """Commit ``commit``: with the answer in flight, as the inserting commit, or on its own."""
        handoff, self.handoff = self.handoff, None
        if handoff is not None and not handoff.closed and not handoff.offered.done():
            handoff.offered.set_result(commit)
            result = await step_outcome(handoff)
        else:
            if handoff is not None:
                await asyncio.shield(handoff.answered)  # the answer that leased the run here commits first
            result = await (self.store.commit(commit) if commit.create is None else self._inserting(commit))
        self.settled = None
        return result

    async def _inserting(self, commit: RunCommit) -> CommitResult:
        """The commit that inserts the run: it settles :attr:`created` even if the executor is cancelled.

        The executor waits on a future of its own, which the commit's outcome settles in the turn it
        lands (as :attr:`created`): cancelling the executor cancels only that future, not the commit.
        """
        sent = self.store.commit_soon(commit)
        landed: asyncio.Future[CommitResult] = asyncio.get_running_loop().create_future()
        sent.add_done_callback(functools.partial(self._created, landed))
        try:
            return await landed
        except asyncio.CancelledError:
            raise
        except BaseException:
            self.uncreated = True
            raise

    def _created(self, landed: asyncio.Future[CommitResult], outcome: asyncio.Future[CommitResult]) -> None:
        """The commit that inserts the run settled: tell the executor (``landed``) first, then the creator.

        The executor hears first so that it publishes the run's first events before its creator goes on.
        """
        error = None if outcome.cancelled() else outcome.exception()
        if not landed.done():
            if outcome.cancelled():
                landed.cancel()
            elif error is not None:
                landed.set_exception(error)
            else:
                landed.set_result(outcome.result())
        if self.created is None or self.created.done():
            return
        if outcome.cancelled():
            self.created.set_result(False)
        elif error is not None:
            self.created.set_exception(error)
        else:
            self.created.set_result(True)
