"""The engine: the public Python API of the bridge.

It owns the store, the workflow registry, leases and deadlines. The executors of
the runs that have work, runs, read models, answers and signed links are
services of their own (:mod:`~openwop_bridge.runtime.executors`, :mod:`~openwop_bridge.runtime.runs`,
:mod:`~openwop_bridge.runtime.run_views`, :mod:`~openwop_bridge.runtime.answers`,
:mod:`~openwop_bridge.runtime.links`) whose methods the
engine offers under its own names. The HTTP host and the adapters call only
this class, never the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from typing import Any

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.clock import Clock, SystemClock
from openwop_bridge.core.decision_stats import GroupBy
from openwop_bridge.core.decisions.common import AnswerCheck
from openwop_bridge.core.decisions.timeout import timeout_decision
from openwop_bridge.core.errors import (
    NotFoundError,
    ValidationError,
    WorkflowNotFoundError,
)
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.notices import POLICY_CHANNEL, Audience
from openwop_bridge.core.records import InterruptRecord, Mutation, RunRecord
from openwop_bridge.core.tokens import (
    TokenSigner,
)
from openwop_bridge.core.workflow import WorkflowDefinition
from openwop_bridge.notify.service import NotifyService
from openwop_bridge.notify.states import KEY_PURPOSE
from openwop_bridge.notify.worker import Settled
from openwop_bridge.runtime.adapter_state import AdapterState
from openwop_bridge.runtime.analytics import decision_report
from openwop_bridge.runtime.answers import AnswerService
from openwop_bridge.runtime.ask import AskService, RecordingAskService
from openwop_bridge.runtime.batch import BatchAnswers
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.runtime.decision_records import KEY_PURPOSE as RECORD_KEY_PURPOSE
from openwop_bridge.runtime.decision_records import DecisionRecords
from openwop_bridge.runtime.delegations import DelegationService
from openwop_bridge.runtime.executor import RunExecutor
from openwop_bridge.runtime.executors import Executors
from openwop_bridge.runtime.follow import STREAM_PAGE, RunFollower, read_page
from openwop_bridge.runtime.hub import EventHub
from openwop_bridge.runtime.idempotency import IdempotencyLedger
from openwop_bridge.runtime.kernel import Delegate
from openwop_bridge.runtime.links import LinkService
from openwop_bridge.runtime.metrics import Metrics
from openwop_bridge.runtime.nodes import default_registry
from openwop_bridge.runtime.nodes.base import NodeRegistry
from openwop_bridge.runtime.run_views import RunViews
from openwop_bridge.runtime.runs import RunService
from openwop_bridge.runtime.telemetry import interrupt_resolving, notice_span
from openwop_bridge.runtime.timers import TimerService
from openwop_bridge.store.base import Claim, Store
from openwop_bridge.store.contract.records import StoredRecord

log = logging.getLogger("openwop_bridge.runtime.engine")


class Engine:
    """An OpenWOP host engine over a :class:`~openwop_bridge.store.base.Store`.

    A thin facade: it owns the store, the workflow registry and the timers, and
    hands each concept to a private service of its own — the executors
    (:class:`~openwop_bridge.runtime.executors.Executors`), runs
    (:class:`~openwop_bridge.runtime.runs.RunService`), views
    (:class:`~openwop_bridge.runtime.run_views.RunViews`), answers
    (:class:`~openwop_bridge.runtime.answers.AnswerService`), links
    (:class:`~openwop_bridge.runtime.links.LinkService`) and the run follower. Their
    methods are reached as the engine's methods, and only so (``engine.create_run``, ``engine.resolve`` …).
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
        #: Approval answer checks by name (``data.answerCheck``); see
        #: :data:`openwop_bridge.core.decisions.common.AnswerCheck`.
        self.answer_checks: dict[str, AnswerCheck] = {}
        self.ask_service: AskService = ask_service or RecordingAskService()
        self.instance_id = instance_id or f"inst_{secrets.token_hex(6)}"
        self.hub = EventHub()
        #: Prometheus series (``GET /metrics``; see :mod:`openwop_bridge.runtime.metrics`).
        self.metrics = Metrics(self.store.pending_by_kind, self.clock.now_ms, self.store.outbox_queued)
        self._follower = RunFollower(store, self.hub)
        #: ``Idempotency-Key`` records (see :mod:`openwop_bridge.runtime.idempotency`).
        self.idempotency = IdempotencyLedger(store, self.clock, self.config)
        # The services (private: their methods are the engine's, below, the one way to reach them).
        self._records = DecisionRecords(self, enabled=self.config.decision_record)
        self._links = LinkService(
            self, token_secrets, keys_loaded=lambda s: self._records.use_keys(s.derived_keys(RECORD_KEY_PURPOSE))
        )
        self._runs = RunService(self)
        self._views = RunViews(self, self._runs, self._links)
        self._delegations = DelegationService(self)
        self._answers = AnswerService(self, self._runs, self._links, self._delegations)
        self._batch = BatchAnswers(self, self._runs, self._answers)
        self._workflows: dict[str, WorkflowDefinition] = {}
        self._timers = TimerService(self.store.next_deadline, self._fire_due, self.clock.now_ms)
        # The runs executing here (:mod:`openwop_bridge.runtime.executors`).
        self._executing = Executors(self, self._timers.poke)
        #: The outbox: notice planners, delivery channels, the worker (:mod:`openwop_bridge.notify.service`).
        self.notify = NotifyService(
            store,
            self.clock,
            self.instance_id,
            notify_retry=self.config.notify_retry,
            webhook_retry=self.config.webhook_retry,
            in_flight=self.config.notify_in_flight,
            per_destination=self.config.notify_per_destination,
            recipient_key=lambda: self._links.derived_keys(KEY_PURPOSE)[0],
            span=notice_span,
        )
        self.notify.set_limits(self.config.outbox_limits)
        self.notify.on_event(self._notice_event)
        self.notify.on_settled(self._count_notice)
        self._heartbeat: asyncio.Task[None] | None = None
        self._started = False
        for wf in workflows:
            self.add_workflow(wf)

    def _count_notice(self, settled: Settled) -> None:
        if settled.notice.channel != POLICY_CHANNEL:  # the bridge's own notices are no deliveries
            self.metrics.notification(settled.notice.channel, settled.outcome)

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
    def separation_of_duties(self) -> bool:
        """Whether every approval separates duties unless it says otherwise (``serve --separation-of-duties``)."""
        return self.config.separation_of_duties

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

    @property
    def started(self) -> bool:
        """Whether :meth:`start` completed and :meth:`stop` has not run since."""
        return self._started

    async def start(self) -> None:
        """Open the store, load signing keys, start timers and resume runs that have work.

        Does nothing on an engine already started (a host may start it before its app's lifespan does).
        """
        if self._started:
            return
        await self.store.open()
        await self.load_signing_keys()
        if self.store.single_instance:
            await self.store.reset_owners()
        await self.store.listen(
            self.instance_id, self._executing.on_remote_wake, self._on_remote_events, self._timers.poke
        )
        self._timers.start()
        self._heartbeat = asyncio.create_task(self._heartbeat_loop(), name="openwop-bridge-heartbeat")
        self._started = True
        self.notify.start()
        await self.recover()

    async def stop(self) -> None:
        """Stop executors (their runs stay durable), timers and the store.

        The runs executing here are handed over: their leases are released, so another instance
        sharing the store resumes them at once (a single-instance store resumes them at its next start).
        """
        self._executing.refuse_new()
        await self._timers.stop()
        await self.notify.stop()
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
        await self._executing.stop()
        if self._started:
            try:
                released = await self.store.release_owned(self.instance_id)
                if released:
                    log.info("released %d run(s) for other instances to resume", len(released))
            except Exception:
                log.exception(
                    "could not release this instance's leases; other instances resume its runs once they run out"
                )
        await self.store.close()
        self._started = False

    @contextlib.asynccontextmanager
    async def maintaining(self) -> AsyncIterator[Engine]:
        """The store open and the signing keys loaded, for one-off administration (the ``keys`` command):
        no run resumed, no timer, no listening for other instances. The store is closed on leaving."""
        await self.store.open()
        try:
            await self.load_signing_keys()
            yield self
        finally:
            await self.store.close()

    async def __aenter__(self) -> Engine:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

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
                if shared and not self._links.keys_given:
                    # Keys rotated or retired on another instance take effect here too.
                    await self.load_signing_keys()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("lease renewal or reclaim failed")

    def _on_remote_events(self, run_id: str) -> None:
        """Another instance committed events of this run: local streams re-read the store (and, if it planned
        notices, this instance's outbox worker may take some)."""
        self.hub.poke(run_id)
        self.notify.poke_remote()

    async def _notice_event(self, run_id: str, event_type: str, payload: dict[str, Any]) -> None:
        """Append a notice's outcome to its run's log (not to a run that has ended: its log is closed)."""
        now = self.clock.now_ms()
        draft = EventDraft(self.clock.new_id("evt"), event_type, payload, now)

        def decide(run: RunRecord, _: list[InterruptRecord]) -> Mutation:
            return Mutation() if run.terminal else Mutation(events=[draft])

        try:
            result = await self.store.mutate_run(run_id, decide, now)
        except NotFoundError:
            return
        self.after_mutation(result)

    async def _fire_due(self, now: int) -> int:
        """Time out every interrupt due at ``now``; returns how many fired."""
        fired = 0
        for interrupt_id in await self.store.due_interrupts(now):
            if self._executing.answers_in_flight:
                # An answer that came first may be in flight with the step it woke: it goes first.
                record = await self.store.get_interrupt(interrupt_id)
                if record is not None:
                    await self.joint_settled(record.run_id)
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
    def _executors(self) -> dict[str, RunExecutor]:
        """The executors of this process, by run."""
        return self._executing.running

    @property
    def claim(self) -> Claim:
        """Lease a run a mutation wakes to this instance in that same transaction."""
        return Claim(self.instance_id, self.config.lease_ms)

    @property
    def signer(self) -> TokenSigner | None:
        """The link signer, once the keys are loaded."""
        return self._links.signer

    # --- the services' methods, under the engine's names ------------------------------

    recover = Delegate("_executing", Executors.recover)
    dispatch = Delegate("_executing", Executors.dispatch)
    start_executor = Delegate("_executing", Executors.start_executor)
    start_new_run = Delegate("_executing", Executors.start_new_run)
    start_joint = Delegate("_executing", Executors.start_joint)
    joint_settled = Delegate("_executing", Executors.joint_settled)
    after_commit = Delegate("_executing", Executors.after_commit)
    after_mutation = Delegate("_executing", Executors.after_mutation)
    wait_idle = Delegate("_executing", Executors.wait_idle)
    uses_conversation = Delegate("_runs", RunService.uses_conversation)
    create_run = Delegate("_runs", RunService.create_run)
    fork_run = Delegate("_runs", RunService.fork_run)
    cancel_run = Delegate("_runs", RunService.cancel_run)
    cancel_children = Delegate("_runs", RunService.cancel_children)
    visible_run = Delegate("_runs", RunService.visible_run)
    list_runs = Delegate("_runs", RunService.list_runs)
    events = Delegate("_runs", RunService.events)
    find_child = Delegate("_runs", RunService.find_child)
    prepare_child = Delegate("_runs", RunService.prepare_child)
    snapshot = Delegate("_views", RunViews.snapshot)
    snapshot_of = Delegate("_views", RunViews.snapshot_of)
    channels = Delegate("_views", RunViews.channels)
    channel = Delegate("_views", RunViews.channel)
    load_signing_keys = Delegate("_links", LinkService.load_signing_keys)
    rotate_signing_key = Delegate("_links", LinkService.rotate_signing_key)
    retire_signing_key = Delegate("_links", LinkService.retire_signing_key)
    signing_key_ids = Delegate("_links", LinkService.signing_key_ids)
    derived_keys = Delegate("_links", LinkService.derived_keys)
    mint_token = Delegate("_links", LinkService.mint_token)
    interrupt_view = Delegate("_links", LinkService.interrupt_view)
    link_for = staticmethod(LinkService.link_for)
    verify_token = Delegate("_links", LinkService.verify_token)
    inspect_token = Delegate("_links", LinkService.inspect_token)
    interrupt_at = Delegate("_answers", AnswerService.interrupt_at)
    resolve = Delegate("_answers", AnswerService.resolve)
    resolve_token = Delegate("_answers", AnswerService.resolve_token)
    resolve_batch = Delegate("_batch", BatchAnswers.resolve_batch)
    create_delegation = Delegate("_delegations", DelegationService.create_delegation)
    delegations = Delegate("_delegations", DelegationService.delegations)
    stand_ins = Delegate("_delegations", DelegationService.stand_ins)
    end_delegation = Delegate("_delegations", DelegationService.end_delegation)
    standing_delegations = Delegate("_delegations", DelegationService.standing_delegations)
    preview_answer = Delegate("_answers", AnswerService.preview_answer)
    preview_cancel = Delegate("_answers", AnswerService.preview_cancel)
    may_answer = Delegate("_answers", AnswerService.may_answer)
    cancel_interrupt = Delegate("_answers", AnswerService.cancel_interrupt)
    open_interrupts = Delegate("_answers", AnswerService.open_interrupts)
    inbox = Delegate("_answers", AnswerService.inbox)
    inbox_count = Delegate("_answers", AnswerService.inbox_count)

    # --- following and reading runs (surfaces that checked visibility) -----------------

    def follow(
        self,
        run_id: str,
        after: int = -1,
        *,
        idle_s: float | None = None,
        seen: RunRecord | None = None,
        page: int = STREAM_PAGE,
    ) -> AsyncGenerator[list[dict[str, Any]]]:
        """A run's committed events after ``after``, live until it ends (see :mod:`openwop_bridge.runtime.follow`).

        The caller has already checked that the run is visible to whoever follows it; ``seen``
        is the record that check read, if it read one just before (the run is not read again).
        ``page``: how many stored events a batch holds at most (a stream holds one batch ready);
        a batch read from the store also holds no more than :data:`~openwop_bridge.runtime.follow.STREAM_PAGE_BYTES`
        as stored (at least one event).
        """
        return self._follower.follow(run_id, after, idle_s=idle_s, seen=seen, page=page)

    async def run_record(self, run_id: str) -> RunRecord | None:
        """A run's record as stored, with no visibility check (for surfaces that made one)."""
        return await self.store.load_run(run_id)

    async def audit(self, run_id: str) -> list[dict[str, Any]]:
        """A run's audit entries, oldest first (for surfaces that checked visibility)."""
        return await self.store.audit(run_id)

    async def audit_page(self, run_id: str, after_id: int = -1, limit: int = 100) -> list[tuple[int, dict[str, Any]]]:
        """A page of a run's audit entries after the one numbered ``after_id``, oldest first, with their numbers
        (for surfaces that checked visibility)."""
        return await self.store.audit_page(run_id, after_id, limit)

    async def run_events(
        self, run_id: str, after: int = -1, limit: int = 1000, *, max_bytes: int | None = None
    ) -> list[dict[str, Any]]:
        """A run's committed events after ``after``, with no visibility check (for surfaces that made one).

        ``max_bytes``: no more events than their stored documents fit in (at least one), so a page
        of large events stays about that size.
        """
        docs, _ = await read_page(self.store, run_id, after, limit, max_bytes)
        return docs

    @property
    def store_shared(self) -> bool:
        """Whether other instances may write to this store (PostgreSQL), so what a surface keeps of it can change
        elsewhere; a store one server owns (SQLite) changes only through this engine."""
        return not self.store.single_instance

    @property
    def store_location(self) -> str:
        """Where the store keeps its data: a ``postgresql://`` URL, a SQLite path, or ``:memory:``."""
        return self.store.location

    async def run_interrupts(self, run_id: str, *, open_only: bool = False) -> list[InterruptRecord]:
        """A run's interrupts, oldest first, with no visibility check (for surfaces that made one)."""
        return await self.store.run_interrupts(run_id, open_only=open_only)

    async def decision_report(
        self, principal: Principal, group_by: GroupBy, from_ms: int, to_ms: int
    ) -> dict[str, Any]:
        """Decision analytics of the caller's tenant (scope ``audit:read``; :mod:`openwop_bridge.runtime.analytics`)."""
        return await decision_report(self.store, principal, group_by, from_ms, to_ms, self.config.decision_rows_cap)

    decision_records = Delegate("_records", DecisionRecords.page)
    decision_record_lines = Delegate("_records", DecisionRecords.stream)
    decision_record_keys = Delegate("_records", DecisionRecords.public_keys)

    async def decision_receipt(self, run_id: str, node_id: str, principal: Principal) -> list[StoredRecord]:
        """The decision record's entries for the latest interrupt at a run-scoped address the principal may see
        (its votes, answers, turns and what closed it), oldest first."""
        record = await self.interrupt_at(run_id, node_id, principal)
        return await self._records.receipt(record)

    async def interrupt_record(self, interrupt_id: str) -> InterruptRecord | None:
        """An interrupt's record as stored, with no visibility check (for surfaces that make their own)."""
        return await self.store.get_interrupt(interrupt_id)

    async def waiting_on(
        self, tenant: str, audience: Audience, *, limit: int, after: tuple[int, str] | None = None
    ) -> list[InterruptRecord]:
        """The open interrupts of ``tenant`` that may wait on a person, found by who they are
        (:class:`~openwop_bridge.core.notices.Audience`), oldest first, with no visibility check."""
        return await self.store.waiting_on(tenant, audience, limit=limit, after=after)

    def adapter_state(self, namespace: str) -> AdapterState:
        """The key-value state an adapter keeps under its own ``namespace``
        (:mod:`openwop_bridge.runtime.adapter_state`)."""
        return AdapterState(self.store, self.clock, namespace)

    @property
    def transient_errors(self) -> tuple[type[BaseException], ...]:
        """Exception types meaning the store is unreachable for now (the host answers them with 503)."""
        return tuple(self.store.transient_errors)

    # --- children (core.subWorkflow) ----------------------------------------------------
