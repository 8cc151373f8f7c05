"""The engine: the public Python API of the bridge.

It owns the workflow registry, starts executors for runs that have work,
applies answers and cancellations as guarded transactions, fires deadlines,
mints signed links and builds read models. The HTTP host and both adapters
call only this class.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import secrets
from collections.abc import AsyncGenerator, Iterable, Mapping
from dataclasses import replace
from typing import Any

from bridge.core import exchange, kinds, run_state
from bridge.core.auth import SYSTEM, Principal
from bridge.core.cancellation import run_cancel_decision
from bridge.core.clock import Clock, SystemClock
from bridge.core.errors import (
    CapabilityRefusedError,
    ForbiddenError,
    NotFoundError,
    RunNotFoundError,
    ValidationError,
    WorkflowNotFoundError,
)
from bridge.core.events import ENGINE_VERSION, EventDraft
from bridge.core.records import RunRecord
from bridge.core.resolution import AnswerCheck, timeout_decision
from bridge.core.tokens import (
    TokenSigner,
)
from bridge.core.views import run_snapshot
from bridge.core.workflow import WorkflowDefinition, initial_variables, thaw
from bridge.runtime.answers import Answers, AskService, RecordingAskService
from bridge.runtime.config import EngineConfig
from bridge.runtime.context import NodeContext
from bridge.runtime.executor import RunExecutor
from bridge.runtime.follow import RunFollower
from bridge.runtime.hub import EventHub
from bridge.runtime.nodes import default_registry
from bridge.runtime.nodes.base import NodeRegistry
from bridge.runtime.telemetry import interrupt_requested, interrupt_resolving, run_span
from bridge.runtime.timers import TimerService
from bridge.store.base import CommitResult, MutationResult, RunCommit, Store

log = logging.getLogger("bridge.runtime.engine")


class Engine(Answers):
    """An OpenWOP host engine over a :class:`~bridge.store.base.Store`."""

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
        #: Approval answer checks by name (``data.answerCheck``); see :data:`bridge.core.resolution.AnswerCheck`.
        self.answer_checks: dict[str, AnswerCheck] = {}
        self.ask_service: AskService = ask_service or RecordingAskService()
        self.instance_id = instance_id or f"inst_{secrets.token_hex(6)}"
        self.hub = EventHub()
        self._follower = RunFollower(store, self.hub)
        self.signer: TokenSigner | None = None
        self._token_secrets = list(token_secrets)
        self._workflows: dict[str, WorkflowDefinition] = {}
        self._executors: dict[str, RunExecutor] = {}
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

    def workflows(self) -> list[WorkflowDefinition]:
        """Every registered workflow, by id."""
        return [self._workflows[k] for k in sorted(self._workflows)]

    def uses_conversation(self, workflow: WorkflowDefinition) -> bool:
        """True when some node of the workflow holds conversations."""
        for node in workflow.nodes.values():
            node_type = self.node_types.get(node.type_id)
            if node_type is not None and node_type.uses_conversation:
                return True
            if node.type_id == "core.interrupt" and str(node.config.get("kind", "")).startswith("conversation"):
                return True
        return False

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
                self._start_executor(run_id)
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
                if shared and not self._token_secrets:
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
            self._start_executor(run_id)

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
            self._start_executor(run_id)

    def _start_executor(self, run_id: str, claimed: RunRecord | None = None) -> None:
        """Execute a run here: ``claimed`` is its record when this instance already leased it."""
        if self._stopping:
            return
        executor = RunExecutor(self, run_id)
        self._executors[run_id] = executor
        task = asyncio.create_task(self._own(executor, claimed), name=f"run:{run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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

    def _after_mutation(self, result: MutationResult) -> None:
        run = result.run
        if run is None:
            return
        self.hub.publish(run.run_id, result.events)
        if result.claimed:
            # Leased to this instance by the mutation itself: an executor still registered
            # here is past its release (its epoch is stale now), so a new one takes over.
            self._start_executor(run.run_id, claimed=run)
        elif run.needs_work and not run.terminal:
            executor = self._executors.get(run.run_id)
            if executor is not None:
                # Claiming, running or releasing here: an executor whose release committed
                # has already left the registry by the time this runs (futures resolve in
                # commit order), so a registered one always sees this wake-up.
                executor.notify()
            elif run.owner is None or run.owner == self.instance_id:
                self._start_executor(run.run_id)
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
            self._after_mutation(result)
        return fired

    async def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until no executor is active (tests and benchmarks)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self._executors:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"executors still active: {sorted(self._executors)}")
            await asyncio.sleep(0.005)

    # --- runs -----------------------------------------------------------------------

    async def create_run(
        self,
        principal: Principal,
        workflow_id: str,
        *,
        inputs: Mapping[str, Any] | None = None,
        configurable: Mapping[str, Any] | None = None,
        tags: list[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        tenant: str | None = None,
        replay_of: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> RunRecord:
        """Start a run of a workflow; returns once the run is durably created."""
        principal.require("runs:create")
        workflow = self.workflow(workflow_id)
        if tenant is not None and tenant != principal.tenant and principal.tenant != "*":
            raise ForbiddenError("this key cannot create runs for another tenant")
        if not self.conversation_enabled and self.uses_conversation(workflow):
            raise CapabilityRefusedError(
                "conversationPrimitive",
                f"workflow {workflow_id!r} uses the conversation primitive, which this host does not offer; "
                "use a clarification interrupt for multi-turn input instead",
            )
        configurable = dict(configurable or {})
        schema = workflow.raw.get("configurableSchema")
        if schema:
            kinds.validate_against(thaw(schema), configurable, "configurable")
        threshold = configurable.get("escalationThreshold")
        if threshold is not None and kinds.finite_confidence(threshold) is None:
            raise ValidationError("configurable.escalationThreshold must be a number between 0 and 1")
        inputs = dict(inputs or {})
        variables = initial_variables(workflow, inputs)
        now = self.clock.now_ms()
        run_tenant = principal.tenant if principal.tenant != "*" else (tenant or "default")
        run_spec: dict[str, Any] = {
            "inputs": inputs,
            "configurable": configurable,
            "tags": list(tags or []),
            "metadata": dict(metadata or {}),
            "principal": principal.id,
        }
        if replay_of:
            run_spec["replayOf"] = replay_of
        if extra:
            run_spec.update(extra)
        run = RunRecord(
            run_id=self.clock.new_id("run"),
            tenant=run_tenant,
            workflow_id=workflow_id,
            status="pending",
            created_at_ms=now,
            updated_at_ms=now,
            # Leased to this instance from the start: no separate claim transaction.
            owner=self.instance_id,
            lease_until_ms=now + self.config.lease_ms,
            epoch=1,
            spec=run_spec,
            state={
                "variables": variables,
                "nodes": {},
                "tokens": {},
                "ready": list(workflow.entry_nodes),
                "executions": 0,
            },
        )
        docs = await self.store.create_run(run, [self._run_started(run)])
        self.hub.publish(run.run_id, docs)
        self._start_executor(run.run_id, claimed=replace(run, state=copy.deepcopy(run.state)))
        return run

    def _run_started(self, run: RunRecord) -> EventDraft:
        payload: dict[str, Any] = {
            "workflowId": run.workflow_id,
            "inputs": run.spec.get("inputs", {}),
            "transport": run.spec.get("transport", "rest"),
            "engineVersion": ENGINE_VERSION,
            "owner": {"tenant": run.tenant, "principal": run.spec.get("principal") or "anonymous"},
        }
        for name in ("tags", "metadata"):
            if run.spec.get(name):
                payload[name] = run.spec[name]
        if run.spec.get("replayOf"):
            payload["replayOf"] = run.spec["replayOf"]
        if run.parent_run_id:
            payload["parentRunId"] = run.parent_run_id
            payload["parentNodeId"] = run.parent_node_id
        return EventDraft(self.clock.new_id("evt"), "run.started", payload, run.created_at_ms)

    async def visible_run(self, run_id: str, principal: Principal) -> RunRecord:
        """A run the principal's tenant may see, else 404."""
        run = await self.store.load_run(run_id)
        if run is None or principal.tenant not in (run.tenant, "*"):
            raise RunNotFoundError(f"no run {run_id!r}")
        return run

    async def snapshot(self, run_id: str, principal: Principal, *, base_url: str = "") -> dict[str, Any]:
        """The ``RunSnapshot`` of a run, with signed links for its open interrupts."""
        principal.require("runs:read")
        run = await self.visible_run(run_id, principal)
        return await self.snapshot_of(run, base_url=base_url, link=self.link_for(principal))

    async def snapshot_of(self, run: RunRecord, *, base_url: str = "", link: str | None = "resolve") -> dict[str, Any]:
        """The snapshot of an already-loaded run (no access check); open interrupts carry ``link`` links."""
        open_records = [] if run.terminal else await self.store.run_interrupts(run.run_id, open_only=True)
        open_records = [r for r in open_records if r.kind not in ("conversation.start", "conversation.close")]
        views = [self.interrupt_view(r, base_url=base_url, link=link) for r in open_records]
        channels = await self.channels(run)
        children = await self.store.child_runs(run.run_id)
        status = await self.reported_status(run)
        return run_snapshot(run, open_views=views, channels=channels, children=children, status=status)

    async def reported_status(self, run: RunRecord, depth: int = 0) -> str:
        """The status a run reports: a run that only waits on a child waiting for a person
        reports the child's waiting status (``waiting-approval``, …), through nested children."""
        if run.status != "running" or depth > 32:
            return run.status
        for child_id in run_state.child_waits(run.state):
            child = await self.store.load_run(child_id)
            if child is None or child.terminal:
                continue
            status = await self.reported_status(child, depth + 1)
            if status.startswith("waiting-"):
                return status
        return run.status

    async def channels(self, run: RunRecord) -> dict[str, Any]:
        """The run's channels: declared defaults plus conversation turns folded by messageId."""
        workflow = self._workflows.get(run.workflow_id)
        out: dict[str, Any] = {}
        if workflow is not None:
            for name, decl in workflow.channels.items():
                out[name] = [] if decl.get("reducer") == "message" else thaw(decl.get("default"))
        if run.state.get("hasConversation") or any(isinstance(v, list) for v in out.values()):
            docs = await self.store.events_of_types(run.run_id, exchange.FOLD_EVENT_TYPES)
            out.update(exchange.fold_channels(docs))
        return out

    async def cancel_run(
        self, run_id: str, principal: Principal, reason: str | None = None, *, parent_run_id: str | None = None
    ) -> dict[str, Any]:
        """Cancel a run (idempotent on terminal runs); cascades to its active children."""
        if parent_run_id is None:
            principal.require("runs:cancel")
        now = self.clock.now_ms()
        result = await self.store.mutate_run(
            run_id, run_cancel_decision(principal, now, reason, parent_run_id=parent_run_id), now, claim=self.claim
        )
        self._after_mutation(result)
        assert result.run is not None
        if result.result.get("changed"):
            await self.cancel_children(run_id)  # at once; the run's executor repeats it durably
        return {"runId": run_id, "status": result.run.status}

    async def cancel_children(self, run_id: str) -> None:
        """Cancel a run's active children that propagate cancellation (idempotent)."""
        for child in await self.store.child_runs(run_id):
            if not child.terminal and child.spec.get("propagateCancellation", True):
                await self.cancel_run(child.run_id, SYSTEM, "parent-cancelled", parent_run_id=run_id)

    async def fork_run(
        self, run_id: str, principal: Principal, mode: str = "replay", from_seq: int | None = None
    ) -> RunRecord:
        """Start a replay of a run: answers come from the source's log, nobody is asked again.

        A replay re-runs the source from its start, so the only point it forks
        from is ``fromSeq`` 0.
        """
        if mode != "replay":
            raise ValidationError("fork mode must be 'replay'", details={"supportedModes": ["replay"]})
        if from_seq not in (None, 0):
            raise ValidationError(
                "a replay fork re-runs the source from its start: fromSeq must be 0", details={"supportedFromSeq": [0]}
            )
        source = await self.visible_run(run_id, principal)
        workflow = self.workflow(source.workflow_id)
        opaque = [
            n.id
            for n in workflow.nodes.values()
            if (t := self.node_types.get(n.type_id)) is not None and not t.replayable
        ]
        if opaque:
            raise ValidationError(
                "this workflow cannot be replayed: its nodes "
                f"{', '.join(opaque)} call out to something the log does not record",
                details={"nodes": opaque},
            )
        return await self.create_run(
            principal,
            source.workflow_id,
            inputs=source.spec.get("inputs"),
            configurable=source.spec.get("configurable"),
            tags=source.spec.get("tags"),
            metadata=source.spec.get("metadata"),
            tenant=source.tenant,
            replay_of=source.run_id,
        )

    async def list_runs(
        self,
        principal: Principal,
        *,
        workflow_id: str | None = None,
        status: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> tuple[list[RunRecord], str | None]:
        """Runs of the caller's tenant, newest first."""
        principal.require("runs:read")
        return await self.store.list_runs(
            principal.tenant, workflow_id=workflow_id, status=status, limit=limit, cursor=cursor
        )

    async def events(
        self, run_id: str, principal: Principal, after: int = -1, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Committed events of a run after a sequence number."""
        principal.require("runs:read")
        await self.visible_run(run_id, principal)
        return await self.store.read_events(run_id, after, limit)

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

    # --- children (core.subWorkflow) ----------------------------------------------------

    async def find_child(self, parent_run_id: str, node_id: str, visit: int, ordinal: int) -> str | None:
        """A child already started by this node activation."""
        return await self.store.find_child(parent_run_id, node_id, visit, ordinal)

    def prepare_child(
        self, parent: RunRecord, ctx: NodeContext, workflow_id: str, inputs: Mapping[str, Any], ordinal: int
    ) -> tuple[RunRecord, list[EventDraft]]:
        """The child run record and first event, committed with the parent's step."""
        workflow = self.workflow(workflow_id)
        now = self.clock.now_ms()
        variables = initial_variables(workflow, inputs)
        run = RunRecord(
            run_id=self.clock.new_id("run"),
            tenant=parent.tenant,
            workflow_id=workflow_id,
            status="pending",
            created_at_ms=now,
            updated_at_ms=now,
            spec={
                "inputs": dict(inputs),
                "configurable": parent.spec.get("configurable") or {},
                "principal": parent.spec.get("principal"),
                "propagateCancellation": bool(ctx.config.get("propagateCancellation", True)),
                "transport": "rest",
            },
            state={
                "variables": variables,
                "nodes": {},
                "tokens": {},
                "ready": list(workflow.entry_nodes),
                "executions": 0,
            },
            parent_run_id=parent.run_id,
            parent_node_id=ctx.node_id,
            parent_visit=ctx.visit,
            child_ordinal=ordinal,
        )
        return run, [self._run_started(run)]
