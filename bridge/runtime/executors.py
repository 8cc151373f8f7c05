"""The runs executing in this process: one :class:`~openwop_bridge.runtime.executor.RunExecutor` per run with work.

:class:`Executors` starts them (on a run leased elsewhere, a run this instance
already leased, a new run its first commit inserts, a run resumed for an answer
not yet committed), wakes them when an input for their run commits, publishes
what they commit, and forgets them when they exit. It also keeps the answers in
flight with the step they woke (:mod:`openwop_bridge.runtime.joint`), which the other
writes to a run wait for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import orjson

from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord, RunRecord, replaced
from openwop_bridge.core.workflow import WorkflowDefinition
from openwop_bridge.notify.service import NotifyService
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.runtime.executor import RunExecutor
from openwop_bridge.runtime.first_commit import FirstCommit
from openwop_bridge.runtime.hub import EventHub
from openwop_bridge.runtime.joint import Handoff
from openwop_bridge.runtime.kernel import ExecutorHost
from openwop_bridge.runtime.telemetry import interrupt_requested, run_span
from openwop_bridge.store.base import CommitResult, KvWrite, MutationResult, RunCommit

log = logging.getLogger("openwop_bridge.runtime.engine")


class ExecutorsHost(ExecutorHost, Protocol):
    """What the executors need from the engine besides what each executor needs."""

    config: EngineConfig
    hub: EventHub
    #: The outbox, poked after a commit that may have written notices.
    notify: NotifyService

    def loaded_workflow(self, workflow_id: str) -> WorkflowDefinition | None:
        """A registered workflow, or None."""


class Executors:
    """The executors of this process, by run; see the module docstring."""

    def __init__(self, host: ExecutorsHost, poke_timers: Callable[[int], None]) -> None:
        self._host = host
        self._poke_timers = poke_timers
        self.running: dict[str, RunExecutor] = {}
        self._joints: dict[str, Handoff] = {}  # answers in flight with the step they woke
        self._tasks: set[asyncio.Task[Any]] = set()
        #: Set when the engine stops: nothing new starts.
        self.stopping = False

    def refuse_new(self) -> None:
        """Start nothing new from now on: the engine is stopping."""
        self.stopping = True

    async def stop(self) -> None:
        """Stop every executor (their runs stay durable)."""
        self.stopping = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def recover(self) -> int:
        """Dispatch every run that has work and no live owner. Returns how many."""
        count = 0
        store, clock = self._host.store, self._host.clock
        while True:
            run_ids = await store.runs_needing_work(clock.now_ms(), limit=500)
            fresh = [r for r in run_ids if r not in self.running]
            for run_id in fresh:
                self.start_executor(run_id)
            count += len(fresh)
            if len(run_ids) < 500 or not fresh:
                return count
            await asyncio.sleep(0)

    def on_remote_wake(self, run_id: str) -> None:
        """Another instance committed an input for this run (an answer, a cancel, a child ending)."""
        if not self.stopping:
            self.dispatch(run_id)

    def dispatch(self, run_id: str) -> None:
        """Make sure the run's work gets done: wake its executor here or start one."""
        executor = self.running.get(run_id)
        if executor is not None:
            executor.notify()
        else:
            self.start_executor(run_id)

    def start_executor(self, run_id: str, claimed: RunRecord | None = None) -> None:
        """Execute a run here: ``claimed`` is its record when this instance already leased it."""
        if self.stopping:
            return
        self._run(RunExecutor(self._host, run_id), claimed)

    def start_new_run(
        self, run: RunRecord, events: list[EventDraft], writes: Sequence[KvWrite] = ()
    ) -> asyncio.Future[bool] | None:
        """Execute a run not yet stored: its executor's first commit inserts it with ``events`` and ``writes``.

        The future is True once that commit is durable, False if the executor stopped before it inserted
        the run; None while the engine is stopping.
        """
        if self.stopping:
            return None
        first, created = FirstCommit.inserting(self._host.store, run, events, writes)
        executor = RunExecutor(self._host, run.run_id, first)
        # The executor works on its own copy: ``run`` keeps the state it is inserted with. The
        # document is JSON, so a JSON round trip copies it (several times faster than deepcopy).
        own = replaced(run)
        own.state = orjson.loads(orjson.dumps(run.state))
        self._run(executor, own)
        return created

    def start_joint(self, run: RunRecord, settled: InterruptRecord) -> Handoff | None:
        """Resume ``run`` (leased here by an answer not yet committed) on the interrupt ``settled``.

        The executor's first commit is handed to the answer (:mod:`openwop_bridge.runtime.joint`); None
        when an executor is registered for the run here already, or the engine is stopping.
        """
        if self.stopping or run.run_id in self.running:
            return None
        loop = asyncio.get_running_loop()
        handoff = Handoff(loop.create_future(), loop.create_future(), loop.create_future())
        executor = RunExecutor(self._host, run.run_id, FirstCommit.joining(self._host.store, handoff, settled))
        task = self._run(executor, run)

        def drop() -> None:
            task.cancel()
            if self.running.get(run.run_id) is executor:
                del self.running[run.run_id]

        handoff.drop.append(drop)
        self._joints[run.run_id] = handoff

        def forget(_: asyncio.Future[None]) -> None:
            if self._joints.get(run.run_id) is handoff:
                del self._joints[run.run_id]

        handoff.answered.add_done_callback(forget)
        return handoff

    async def joint_settled(self, run_id: str) -> bool:
        """Wait until no answer to ``run_id`` is in flight with the step it woke here; True if it waited."""
        waited = False
        while (handoff := self._joints.get(run_id)) is not None and not handoff.answered.done():
            waited = True
            await asyncio.shield(handoff.answered)
        return waited

    @property
    def answers_in_flight(self) -> bool:
        """Whether an answer is in flight with the step it woke, for any run."""
        return bool(self._joints)

    def _run(self, executor: RunExecutor, claimed: RunRecord | None) -> asyncio.Task[None]:
        """Register ``executor`` and start the task that drives it."""
        self.running[executor.run_id] = executor
        task = asyncio.create_task(self._own(executor, claimed), name=f"run:{executor.run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _own(self, executor: RunExecutor, claimed: RunRecord | None = None) -> None:
        host = self._host
        try:
            run = claimed or await host.store.claim_run(
                executor.run_id, host.instance_id, host.clock.now_ms(), host.config.lease_ms
            )
            if run is None:
                return
            workflow = host.loaded_workflow(run.workflow_id)
            if workflow is None:
                log.error("run %s needs workflow %r, which is not loaded here", run.run_id, run.workflow_id)
                return
            with run_span(run.run_id, run.workflow_id):
                await executor.drive(run, workflow)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("could not run %s", executor.run_id)
        finally:
            if self.running.get(executor.run_id) is executor:
                del self.running[executor.run_id]

    def after_commit(self, run: RunRecord, commit: RunCommit, result: CommitResult) -> None:
        """Called by an executor after each commit: publish, arm timers, start children."""
        self._host.hub.publish(run.run_id, result.events)
        self._host.notify.poke()
        for record in commit.new_interrupts:
            interrupt_requested(record)
            if record.open and record.deadline_ms is not None:
                self._poke_timers(record.deadline_ms)
        for child_id, docs in result.child_events.items():
            self._host.hub.publish(child_id, docs)
        if commit.wake_run:
            self.dispatch(commit.wake_run)

    def after_mutation(self, result: MutationResult) -> None:
        """Publish a guarded mutation's events and wake, start or leave the run's executor."""
        run = result.run
        if run is None:
            return
        self._host.hub.publish(run.run_id, result.events)
        self._host.notify.poke()
        if result.claimed:
            # Leased to this instance by the mutation itself: an executor still registered
            # here is past its release (its epoch is stale now), so a new one takes over.
            self.start_executor(run.run_id, claimed=run)
        elif run.needs_work and not run.terminal:
            executor = self.running.get(run.run_id)
            if executor is not None:
                # Claiming, running or releasing here: an executor whose release committed
                # has already left the registry by the time this runs (futures resolve in
                # commit order), so a registered one always sees this wake-up.
                executor.notify()
            elif run.owner is None or run.owner == self._host.instance_id:
                self.start_executor(run.run_id)
            # Owned by another instance: a shared store notifies it from inside the
            # transaction (see ``listen``), so there is nothing to send from here.

    async def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until no executor is active (tests and benchmarks)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self.running:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"executors still active: {sorted(self.running)}")
            await asyncio.sleep(0.005)
