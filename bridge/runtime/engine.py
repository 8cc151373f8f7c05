"""The engine: the public Python API of the bridge.

It owns the store, the workflow registry, the executors of the runs that have
work, leases and deadlines. Runs, read models, answers and signed links are
services of their own (:mod:`~bridge.runtime.runs`, :mod:`~bridge.runtime.run_views`,
:mod:`~bridge.runtime.answers`, :mod:`~bridge.runtime.links`) whose methods the
engine offers under its own names. The HTTP host and the adapters call only
this class, never the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import secrets
from collections.abc import AsyncGenerator, Iterable
from dataclasses import replace
from typing import Any

from bridge.core.clock import Clock, SystemClock
from bridge.core.decisions.common import AnswerCheck
from bridge.core.decisions.timeout import timeout_decision
from bridge.core.errors import (
    NotFoundError,
    ValidationError,
    WorkflowNotFoundError,
)
from bridge.core.events import EventDraft
from bridge.core.records import InterruptRecord, RunRecord
from bridge.core.tokens import (
    TokenSigner,
)
from bridge.core.workflow import WorkflowDefinition
from bridge.runtime.adapter_state import AdapterState
from bridge.runtime.answers import AnswerService
from bridge.runtime.ask import AskService, RecordingAskService
from bridge.runtime.config import EngineConfig
from bridge.runtime.executor import RunExecutor
from bridge.runtime.follow import RunFollower
from bridge.runtime.hub import EventHub
from bridge.runtime.idempotency import IdempotencyLedger
from bridge.runtime.joint import Handoff
from bridge.runtime.kernel import Delegate
from bridge.runtime.links import LinkService
from bridge.runtime.nodes import default_registry
from bridge.runtime.nodes.base import NodeRegistry
from bridge.runtime.run_views import RunViews
from bridge.runtime.runs import RunService
from bridge.runtime.telemetry import interrupt_requested, interrupt_resolving, run_span
from bridge.runtime.timers import TimerService
from bridge.store.base import Claim, CommitResult, MutationResult, RunCommit, Store

log = logging.getLogger("bridge.runtime.engine")


class Engine:
    """An OpenWOP host engine over a :class:`~bridge.store.base.Store`.

    A thin facade: it owns the store, the workflow registry, the executors and
    the timers, and hands each concept to a service of its own —
    :attr:`runs` (:class:`~bridge.runtime.runs.RunService`), :attr:`views`
    (:class:`~bridge.runtime.run_views.RunViews`), :attr:`answers`
    (:class:`~bridge.runtime.answers.AnswerService`), :attr:`links`
    (:class:`~bridge.runtime.links.LinkService`) and the run follower. Their
    methods are the engine's methods too (``engine.create_run``, ``engine.resolve`` …).
    """

    def __init__(
        self,
        store: Store,
        *,
        workflows: Iterable[WorkflowDefinition] = (),
        node_types: NodeRegistry | None = None,
        clock: Clock | None = None,
        config: EngineConfig | None = None,
        ask_service: AskService | None = None,
        token_secrets: Iterable[tuple[str, str]] = (),
        instance_id: str | None = None,
    ) -> None:
        self.store = store
        self.clock: Clock = clock or SystemClock()
        self.config = config or EngineConfig()
        self.node_types = node_types or default_registry()
        #: Approval answer checks by name (``data.answerCheck``); see :data:`bridge.core.decisions.common.AnswerCheck`.
        self.answer_checks: dict[str, AnswerCheck] = {}
        self.ask_service: AskService = ask_service or RecordingAskService()
        self.instance_id = instance_id or f"inst_{secrets.token_hex(6)}"
        self.hub = EventHub()
        self._follower = RunFollower(store, self.hub)
        #: ``Idempotency-Key`` records (see :mod:`bridge.runtime.idempotency`).
        self.idempotency = IdempotencyLedger(store, self.clock, self.config)
        self.links = LinkService(self, token_secrets)
        self.runs = RunService(self)
        self.views = RunViews(self, self.runs, self.links)
        self.answers = AnswerService(self, self.runs, self.links)
        self._workflows: dict[str, WorkflowDefinition] = {}
        self._executors: dict[str, RunExecutor] = {}
        self._joints: dict[str, Handoff] = {}  # answers in flight with the step they woke
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timers = TimerService(self.store.next_deadline, self._fire_due, self.clock.now_ms)
        self._heartbeat: asyncio.Task[None] | None = None
        self._started = False
        self._stopping = False
        for wf in workflows:
            self.add_workflow(wf)

    # --- configuration --------------------------------------------------------------

    @property
    def default_threshold(self) -> float:
        """Escalation threshold when a run does not set one."""
        return self.config.default_threshold

    @property
    def conversation_enabled(self) -> bool:
        """Whether the conversation primitive is offered."""
        return self.config.conversation_enabled

    @property
    def max_node_executions(self) -> int:
        """Ceiling on node executions per run (``limits.maxNodeExecutions``)."""
        return self.config.max_node_executions

    def add_workflow(self, workflow: WorkflowDefinition) -> None:
        """Register a workflow; every typeId must be known and every node config valid."""
        problems = []
        for node in workflow.nodes.values():
            node_type = self.node_types.get(node.type_id)
            if node_type is None:
                problems.append(f"node {node.id!r}: no node type {node.type_id!r} on this host")
            elif node_type.check is not None:
                problems += [f"node {node.id!r}: {p}" for p in node_type.check(node)]
        if problems:
            raise ValidationError(f"workflow {workflow.id!r} cannot run here", details={"problems": problems})
        self._workflows[workflow.id] = workflow

    def workflow(self, workflow_id: str) -> WorkflowDefinition:
        """A registered workflow, or 404."""
        wf = self._workflows.get(workflow_id)
        if wf is None:
            raise WorkflowNotFoundError(f"no workflow {workflow_id!r} is loaded")
        return wf

    def loaded_workflow(self, workflow_id: str) -> WorkflowDefinition | None:
        """A registered workflow, or None."""
        return self._workflows.get(workflow_id)

    def workflows(self) -> list[WorkflowDefinition]:
        """Every registered workflow, by id."""
        return [self._workflows[k] for k in sorted(self._workflows)]

    # --- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Open the store, load signing keys, start timers and resume runs that have work."""
        await self.store.open()
        await self.load_signing_keys()
        if self.store.single_instance:
            await self.store.reset_owners()
        await self.store.listen(self.instance_id, self._on_remote_wake, self._on_remote_events)
        self._timers.start()
        self._heartbeat = asyncio.create_task(self._heartbeat_loop(), name="openwop-bridge-heartbeat")
        self._started = True
        await self.recover()

    async def stop(self) -> None:
        """Stop executors (their runs stay durable), timers and the store."""
        self._stopping = True
        await self._timers.stop()
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await self.store.close()
        self._started = False

    async def __aenter__(self) -> Engine:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    async def recover(self) -> int:
        """Dispatch every run that has work and no live owner. Returns how many."""
        count = 0
        while True:
            run_ids = await self.store.runs_needing_work(self.clock.now_ms(), limit=500)
            fresh = [r for r in run_ids if r not in self._executors]
            for run_id in fresh:
                self.start_executor(run_id)
            count += len(fresh)
            if len(run_ids) < 500 or not fresh:
                return count
            await asyncio.sleep(0)

    async def _heartbeat_loop(self) -> None:
        """Renew the leases of the runs executing here; reclaim runs whose lease ran out."""
        interval = self.config.lease_ms / 3000
        shared = not self.store.single_instance
        while True:
            await asyncio.sleep(interval)
            try:
                if self._executors:
                    await self.store.renew_leases(
                        self.instance_id, list(self._executors), self.clock.now_ms(), self.config.lease_ms
                    )
                # Runs of dead instances (shared stores), and runs whose executor here
                # ended without releasing them (a store outage), once their lease ran out.
                await self.recover()
                if shared and not self.links.keys_given:
                    # Keys rotated or retired on another instance take effect here too.
                    await self.load_signing_keys()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("lease renewal or reclaim failed")

    def _on_remote_wake(self, run_id: str) -> None:
        """Another instance committed an input for this run (an answer, a cancel, a child ending)."""
        if self._stopping:
            return
        executor = self._executors.get(run_id)
        if executor is not None:
            executor.notify()
        else:
            self.start_executor(run_id)

    def _on_remote_events(self, run_id: str) -> None:
        """Another instance committed events of this run: local streams re-read the store."""
        self.hub.poke(run_id)

    # --- executors ---------------------------------------------------------------

    def dispatch(self, run_id: str) -> None:
        """Make sure the run's work gets done: wake its executor here or start one."""
        executor = self._executors.get(run_id)
        if executor is not None:
            executor.notify()
        else:
            self.start_executor(run_id)

    def start_executor(self, run_id: str, claimed: RunRecord | None = None) -> None:
        """Execute a run here: ``claimed`` is its record when this instance already leased it."""
        if self._stopping:
            return
        executor = RunExecutor(self, run_id)
        self._executors[run_id] = executor
        task = asyncio.create_task(self._own(executor, claimed), name=f"run:{run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def start_new_run(self, run: RunRecord, events: list[EventDraft]) -> asyncio.Future[None] | None:
        """Execute a run not yet stored: its executor's first commit inserts it with ``events``.

        The future resolves once that commit is durable; None while the engine is stopping.
        """
        if self._stopping:
            return None
        executor = RunExecutor(self, run.run_id)
        created = executor.prime(run, events)
        self._executors[run.run_id] = executor
        task = asyncio.create_task(
            self._own(executor, replace(run, state=copy.deepcopy(run.state))), name=f"run:{run.run_id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return created

    def start_joint(self, run: RunRecord, settled: InterruptRecord) -> Handoff | None:
        """Resume ``run`` (leased here by an answer not yet committed) on the interrupt ``settled``.

        The executor's first commit is handed to the answer (:mod:`bridge.runtime.joint`); None
        when an executor is registered for the run here already, or the engine is stopping.
        """
        if self._stopping or run.run_id in self._executors:
            return None
        loop = asyncio.get_running_loop()
        handoff = Handoff(loop.create_future(), loop.create_future(), loop.create_future())
        executor = RunExecutor(self, run.run_id)
        executor.handoff, executor.settled = handoff, settled
        self._executors[run.run_id] = executor
        task = asyncio.create_task(self._own(executor, run), name=f"run:{run.run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

        def drop() -> None:
            task.cancel()
            if self._executors.get(run.run_id) is executor:
                del self._executors[run.run_id]

        handoff.drop.append(drop)
        self._joints[run.run_id] = handoff

        def forget(_: asyncio.Future[None]) -> None:
            if self._joints.get(run.run_id) is handoff:
                del self._joints[run.run_id]

        handoff.answered.add_done_callback(forget)
        return handoff

    async def joint_settled(self, run_id: str) -> None:
        """Wait until no answer to ``run_id`` is in flight with the step it woke here."""
        while (handoff := self._joints.get(run_id)) is not None and not handoff.answered.done():
            await asyncio.shield(handoff.answered)

    async def _own(self, executor: RunExecutor, claimed: RunRecord | None = None) -> None:
        try:
            run = claimed or await self.store.claim_run(
                executor.run_id, self.instance_id, self.clock.now_ms(), self.config.lease_ms
            )
            if run is None:
                return
            workflow = self._workflows.get(run.workflow_id)
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
            if self._executors.get(executor.run_id) is executor:
                del self._executors[executor.run_id]

    def after_commit(self, run: RunRecord, commit: RunCommit, result: CommitResult) -> None:
        """Called by an executor after each commit: publish, arm timers, start children."""
        self.hub.publish(run.run_id, result.events)
        for record in commit.new_interrupts:
            interrupt_requested(record)
            if record.open and record.deadline_ms is not None:
                self._timers.poke(record.deadline_ms)
        for child_id, docs in result.child_events.items():
            self.hub.publish(child_id, docs)
        if commit.wake_run:
            self.dispatch(commit.wake_run)

    def after_mutation(self, result: MutationResult) -> None:
        """Publish a guarded mutation's events and wake, start or leave the run's executor."""
        run = result.run
        if run is None:
            return
        self.hub.publish(run.run_id, result.events)
        if result.claimed:
            # Leased to this instance by the mutation itself: an executor still registered
            # here is past its release (its epoch is stale now), so a new one takes over.
            self.start_executor(run.run_id, claimed=run)
        elif run.needs_work and not run.terminal:
            executor = self._executors.get(run.run_id)
            if executor is not None:
                # Claiming, running or releasing here: an executor whose release committed
                # has already left the registry by the time this runs (futures resolve in
                # commit order), so a registered one always sees this wake-up.
                executor.notify()
            elif run.owner is None or run.owner == self.instance_id:
                self.start_executor(run.run_id)
            # Owned by another instance: a shared store notifies it from inside the
            # transaction (see ``listen``), so there is nothing to send from here.

    async def _fire_due(self, now: int) -> int:
        fired = 0
        for interrupt_id in await self.store.due_interrupts(now):
            with interrupt_resolving("timeout", **{"openwop.interrupt_id": interrupt_id}):
                try:
                    result = await self.store.mutate_interrupt(
                        timeout_decision(now, self.clock.new_id), now, interrupt_id=interrupt_id, claim=self.claim
                    )
                except NotFoundError:
                    continue
            if result.result and result.result.get("fired"):
                fired += 1
            self.after_mutation(result)
        return fired

    @property
    def claim(self) -> Claim:
        """Lease a run a mutation wakes to this instance in that same transaction."""
        return Claim(self.instance_id, self.config.lease_ms)

    @property
    def signer(self) -> TokenSigner | None:
        """The link signer, once the keys are loaded."""
        return self.links.signer

    async def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until no executor is active (tests and benchmarks)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self._executors:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"executors still active: {sorted(self._executors)}")
            await asyncio.sleep(0.005)

    # --- runs -----------------------------------------------------------------------

    # --- the services' methods, under the engine's names ------------------------------

    uses_conversation = Delegate("runs", RunService.uses_conversation)
    create_run = Delegate("runs", RunService.create_run)
    fork_run = Delegate("runs", RunService.fork_run)
    cancel_run = Delegate("runs", RunService.cancel_run)
    cancel_children = Delegate("runs", RunService.cancel_children)
    visible_run = Delegate("runs", RunService.visible_run)
    list_runs = Delegate("runs", RunService.list_runs)
    events = Delegate("runs", RunService.events)
    find_child = Delegate("runs", RunService.find_child)
    prepare_child = Delegate("runs", RunService.prepare_child)
    snapshot = Delegate("views", RunViews.snapshot)
    snapshot_of = Delegate("views", RunViews.snapshot_of)
    reported_status = Delegate("views", RunViews.reported_status)
    channels = Delegate("views", RunViews.channels)
    load_signing_keys = Delegate("links", LinkService.load_signing_keys)
    rotate_signing_key = Delegate("links", LinkService.rotate_signing_key)
    mint_token = Delegate("links", LinkService.mint_token)
    interrupt_view = Delegate("links", LinkService.interrupt_view)
    link_for = staticmethod(LinkService.link_for)
    verify_token = Delegate("links", LinkService.verify_token)
    inspect_token = Delegate("links", LinkService.inspect_token)
    interrupt_at = Delegate("answers", AnswerService.interrupt_at)
    resolve = Delegate("answers", AnswerService.resolve)
    resolve_token = Delegate("answers", AnswerService.resolve_token)
    preview_answer = Delegate("answers", AnswerService.preview_answer)
    preview_cancel = Delegate("answers", AnswerService.preview_cancel)
    cancel_interrupt = Delegate("answers", AnswerService.cancel_interrupt)
    open_interrupts = Delegate("answers", AnswerService.open_interrupts)
    inbox = Delegate("answers", AnswerService.inbox)

    # --- following and reading runs (surfaces that checked visibility) -----------------

    def follow(
        self, run_id: str, after: int = -1, *, idle_s: float | None = None
    ) -> AsyncGenerator[list[dict[str, Any]]]:
        """A run's committed events after ``after``, live until it ends (see :mod:`bridge.runtime.follow`).

        The caller has already checked that the run is visible to whoever follows it.
        """
        return self._follower.follow(run_id, after, idle_s=idle_s)

    async def run_record(self, run_id: str) -> RunRecord | None:
        """A run's record as stored, with no visibility check (for surfaces that made one)."""
        return await self.store.load_run(run_id)

    async def audit(self, run_id: str) -> list[dict[str, Any]]:
        """A run's audit entries, oldest first (for surfaces that checked visibility)."""
        return await self.store.audit(run_id)

    async def run_events(self, run_id: str, after: int = -1, limit: int = 1000) -> list[dict[str, Any]]:
        """A run's committed events after ``after``, with no visibility check (for surfaces that made one)."""
        return await self.store.read_events(run_id, after, limit)

    @property
    def store_location(self) -> str:
        """Where the store keeps its data: a ``postgresql://`` URL, a SQLite path, or ``:memory:``."""
        return self.store.location

    async def run_interrupts(self, run_id: str, *, open_only: bool = False) -> list[InterruptRecord]:
        """A run's interrupts, oldest first, with no visibility check (for surfaces that made one)."""
        return await self.store.run_interrupts(run_id, open_only=open_only)

    async def interrupt_record(self, interrupt_id: str) -> InterruptRecord | None:
        """An interrupt's record as stored, with no visibility check (for surfaces that make their own)."""
        return await self.store.get_interrupt(interrupt_id)

    def adapter_state(self, namespace: str) -> AdapterState:
        """The key-value state an adapter keeps under its own ``namespace`` (:mod:`bridge.runtime.adapter_state`)."""
        return AdapterState(self.store, self.clock, namespace)

    @property
    def transient_errors(self) -> tuple[type[BaseException], ...]:
        """Exception types meaning the store is unreachable for now (the host answers them with 503)."""
        return tuple(self.store.transient_errors)

    # --- children (core.subWorkflow) ----------------------------------------------------
