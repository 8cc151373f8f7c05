"""Runs: create, fork, cancel, children, and the one place a run's first state is built.

A run is created durably with its ``run.started`` event (and the adapter state
its creator writes with it), already leased to this instance, and its executor
starts at once. A child run (``core.subWorkflow``) is
built the same way and committed with its parent's step. Cancelling a run is a
guarded transaction (:func:`openwop_bridge.core.decisions.cancel.run_cancel_decision`) that
cascades to the children that propagate cancellation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from openwop_bridge.core import kinds, separation
from openwop_bridge.core.auth import SYSTEM, Principal, subject_ref
from openwop_bridge.core.decisions.cancel import run_cancel_decision
from openwop_bridge.core.errors import (
    CapabilityRefusedError,
    ForbiddenError,
    RateLimitedError,
    RunNotFoundError,
    ValidationError,
)
from openwop_bridge.core.events import ENGINE_VERSION, EventDraft
from openwop_bridge.core.quota import RunRateBuckets
from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.core.run_state import RunState
from openwop_bridge.core.workflow import WorkflowDefinition, thaw
from openwop_bridge.runtime.context import NodeContext
from openwop_bridge.runtime.kernel import Kernel
from openwop_bridge.store.base import KvWrite


def _visible(run: RunRecord | None, run_id: str, principal: Principal) -> RunRecord:
    """``run`` if the principal's tenant may see it, else 404."""
    if run is None or principal.tenant not in (run.tenant, "*"):
        raise RunNotFoundError(f"no run {run_id!r}")
    return run


class RunService:
    """Creating, forking, cancelling and listing runs (see the module docstring)."""

    def __init__(self, kernel: Kernel) -> None:
        self._k = kernel
        rate = kernel.config.run_rate
        self._rates = RunRateBuckets(rate) if rate is not None else None

    def uses_conversation(self, workflow: WorkflowDefinition) -> bool:
        """True when some node of the workflow holds conversations."""
        for node in workflow.nodes.values():
            node_type = self._k.node_types.get(node.type_id)
            if node_type is not None and node_type.uses_conversation:
                return True
            if node.type_id == "core.interrupt" and str(node.config.get("kind", "")).startswith("conversation"):
                return True
        return False

    def new_run(
        self,
        workflow: WorkflowDefinition,
        tenant: str,
        inputs: Mapping[str, Any],
        spec: dict[str, Any],
        now: int,
        **fields: Any,
    ) -> RunRecord:
        """A pending run record of ``workflow`` in its initial state (the one builder of a run's first state)."""
        return RunRecord(
            run_id=self._k.clock.new_id("run"),
            tenant=tenant,
            workflow_id=workflow.id,
            status="pending",
            created_at_ms=now,
            updated_at_ms=now,
            spec=spec,
            state=RunState.initial(workflow, inputs).to_dict(),
            **fields,
        )

    def _check_create(
        self, principal: Principal, workflow: WorkflowDefinition, tenant: str | None, configurable: dict[str, Any]
    ) -> None:
        """Refuse what a new run may not be: another tenant's, a missing capability, a bad configuration."""
        if tenant is not None and tenant != principal.tenant and principal.tenant != "*":
            raise ForbiddenError("this key cannot create runs for another tenant")
        if not self._k.config.conversation_enabled and self.uses_conversation(workflow):
            raise CapabilityRefusedError(
                "conversationPrimitive",
                f"workflow {workflow.id!r} uses the conversation primitive, which this host does not offer; "
                "use a clarification interrupt for multi-turn input instead",
            )
        schema = workflow.raw.get("configurableSchema")
        if schema:
            kinds.validate_against(thaw(schema), configurable, "configurable")
        threshold = configurable.get("escalationThreshold")
        if threshold is not None and kinds.finite_confidence(threshold) is None:
            raise ValidationError("configurable.escalationThreshold must be a number between 0 and 1")

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
        with_state: Callable[[RunRecord], Sequence[KvWrite]] | None = None,
    ) -> RunRecord:
        """Start a run of a workflow; returns once the run is durably created.

        ``with_state`` is given the new run (not stored yet) and returns adapter-state
        writes (:meth:`openwop_bridge.runtime.adapter_state.AdapterState.write`) that commit in
        the run's own transaction: they exist exactly when the run does. One of them
        ``only_if_absent`` whose key is taken raises
        :class:`~openwop_bridge.core.errors.KeyTakenError`, and no run is created.
        """
        principal.require("runs:create")
        workflow = self._k.workflow(workflow_id)
        configurable = dict(configurable or {})
        self._check_create(principal, workflow, tenant, configurable)
        now = self._k.clock.now_ms()
        self._spend(principal, now)
        inputs = dict(inputs or {})
        run_spec: dict[str, Any] = {
            "inputs": inputs,
            "configurable": configurable,
            "tags": list(tags or []),
            "metadata": dict(metadata or {}),
            "principal": principal.id,
        }
        owner = subject_ref(principal)
        if owner is not None:
            run_spec["subject"] = owner  # who the owner is at their identity provider (v2's owner.subject)
        if replay_of:
            run_spec["replayOf"] = replay_of
        if extra:
            run_spec.update(extra)
            if run_spec.get("subject") is None:
                run_spec.pop("subject", None)  # an owner known by key only (a fork of such a run) has no subject
        run_tenant = principal.run_tenant(tenant)
        # Leased to this instance from the start: no separate claim transaction.
        run = self.new_run(
            workflow,
            run_tenant,
            inputs,
            run_spec,
            now,
            owner=self._k.instance_id,
            lease_until_ms=now + self._k.config.lease_ms,
            epoch=1,
        )
        return await self._insert(run, list(with_state(run)) if with_state is not None else [])

    def _spend(self, principal: Principal, now: int) -> None:
        """Count a run created by ``principal`` against its rate, else ``429 rate_limited`` (engine runs are free)."""
        if self._rates is None or principal is SYSTEM:
            return
        wait_s = self._rates.take(f"{principal.tenant}\x00{principal.id}", now)
        if wait_s is not None:
            rate = self._rates.rate
            raise RateLimitedError(
                f"this key creates runs faster than {rate.per_minute} a minute (bursts of {rate.burst}); "
                f"retry in {wait_s}s",
                wait_s,
                details={"perMinute": rate.per_minute, "burst": rate.burst},
            )

    async def _insert(self, run: RunRecord, writes: list[KvWrite]) -> RunRecord:
        """Insert a new run with its ``run.started`` and ``writes``: through its executor's first commit,
        or alone while the engine is stopping."""
        events = [self.run_started(run)]
        created = self._k.start_new_run(run, events, writes)
        # One transaction inserts the run and its steps up to its first suspension (or its end).
        if created is not None and await created:
            return run
        # The engine is stopping (or stopped the executor before its first commit): store the run
        # alone; the next start runs it.
        docs = await self._k.store.create_run(run, events, writes)
        self._k.hub.publish(run.run_id, docs)
        return run

    def run_started(self, run: RunRecord) -> EventDraft:
        """The ``run.started`` event of a new run."""
        payload: dict[str, Any] = {
            "workflowId": run.workflow_id,
            "inputs": run.spec.get("inputs", {}),
            "transport": run.spec.get("transport", "rest"),
            "engineVersion": ENGINE_VERSION,
            "owner": {"tenant": run.tenant, "principal": run.spec.get("principal") or "anonymous"},
        }
        if isinstance(run.spec.get("subject"), dict):
            # Beside v1's closed owner block, which names the principal only (v2 spells it owner.subject).
            payload["ownerSubject"] = run.spec["subject"]
        for name in ("tags", "metadata"):
            if run.spec.get(name):
                payload[name] = run.spec[name]
        if run.spec.get("replayOf"):
            payload["replayOf"] = run.spec["replayOf"]
        if run.parent_run_id:
            payload["parentRunId"] = run.parent_run_id
            payload["parentNodeId"] = run.parent_node_id
        return EventDraft(self._k.clock.new_id("evt"), "run.started", payload, run.created_at_ms)

    async def visible_run(self, run_id: str, principal: Principal) -> RunRecord:
        """A run the principal's tenant may see, else 404."""
        return _visible(await self._k.store.load_run(run_id), run_id, principal)

    async def visible_run_at(
        self, run_id: str, node_id: str, principal: Principal
    ) -> tuple[RunRecord, InterruptRecord | None]:
        """:meth:`visible_run` and the latest interrupt at its address ``node_id``, read together."""
        run, record = await self._k.store.run_and_interrupt_at(run_id, node_id)
        return _visible(run, run_id, principal), record

    async def cancel_run(
        self, run_id: str, principal: Principal, reason: str | None = None, *, parent_run_id: str | None = None
    ) -> dict[str, Any]:
        """Cancel a run (idempotent on terminal runs); cascades to its active children."""
        if parent_run_id is None:
            principal.require("runs:cancel")
        await self._k.joint_settled(run_id)
        now = self._k.clock.now_ms()
        result = await self._k.store.mutate_run(
            run_id,
            run_cancel_decision(principal, now, reason, self._k.clock.new_id, parent_run_id=parent_run_id),
            now,
            claim=self._k.claim,
        )
        self._k.after_mutation(result)
        assert result.run is not None
        if result.result.get("changed"):
            await self.cancel_children(run_id)  # at once; the run's executor repeats it durably
        return {"runId": run_id, "status": result.run.status}

    async def cancel_children(self, run_id: str) -> None:
        """Cancel a run's active children that propagate cancellation (idempotent)."""
        for child in await self._k.store.child_runs(run_id):
            if not child.terminal and child.spec.get("propagateCancellation", True):
                await self.cancel_run(child.run_id, SYSTEM, "parent-cancelled", parent_run_id=run_id)

    async def fork_run(
        self, run_id: str, principal: Principal, mode: str = "replay", from_seq: int | None = None
    ) -> RunRecord:
        """Start a replay of a run: answers come from the source's log, nobody is asked again.

        A replay re-runs the source from its start, so the only point it forks
        from is ``fromSeq`` 0. The fork's owner is the source's, whoever forks it (runs.md §fork: copied
        verbatim); who forked it is ``forkedBy``.
        """
        if mode != "replay":
            raise ValidationError("fork mode must be 'replay'", details={"supportedModes": ["replay"]})
        if from_seq not in (None, 0):
            raise ValidationError(
                "a replay fork re-runs the source from its start: fromSeq must be 0", details={"supportedFromSeq": [0]}
            )
        source = await self.visible_run(run_id, principal)
        workflow = self._k.workflow(source.workflow_id)
        opaque = [
            n.id
            for n in workflow.nodes.values()
            if (t := self._k.node_types.get(n.type_id)) is not None and not t.replayable
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
            extra={
                "requesters": separation.carried_requesters(source.spec),
                "principal": source.spec.get("principal") or principal.id,
                "subject": source.spec.get("subject"),
                "forkedBy": principal.id,
            },
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
        return await self._k.store.list_runs(
            principal.tenant, workflow_id=workflow_id, status=status, limit=limit, cursor=cursor
        )

    async def events(
        self, run_id: str, principal: Principal, after: int = -1, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Committed events of a run after a sequence number."""
        principal.require("runs:read")
        await self.visible_run(run_id, principal)
        return await self._k.store.read_events(run_id, after, limit)

    # --- children (core.subWorkflow) ----------------------------------------------------

    async def find_child(self, parent_run_id: str, node_id: str, visit: int, ordinal: int) -> str | None:
        """A child already started by this node activation."""
        return await self._k.store.find_child(parent_run_id, node_id, visit, ordinal)

    def prepare_child(
        self, parent: RunRecord, ctx: NodeContext, workflow_id: str, inputs: Mapping[str, Any], ordinal: int
    ) -> tuple[RunRecord, list[EventDraft]]:
        """The child run record and first event, committed with the parent's step."""
        workflow = self._k.workflow(workflow_id)
        now = self._k.clock.now_ms()
        spec = {
            "inputs": dict(inputs),
            "configurable": parent.spec.get("configurable") or {},
            "principal": parent.spec.get("principal"),
            **({"subject": parent.spec["subject"]} if parent.spec.get("subject") else {}),
            "propagateCancellation": bool(ctx.config.get("propagateCancellation", True)),
            "transport": "rest",
        }
        run = self.new_run(
            workflow,
            parent.tenant,
            inputs,
            spec,
            now,
            parent_run_id=parent.run_id,
            parent_node_id=ctx.node_id,
            parent_visit=ctx.visit,
            child_ordinal=ordinal,
        )
        return run, [self.run_started(run)]
