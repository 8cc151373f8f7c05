"""The step an executor is building: what its next commit carries, and outcomes applied to the run's state.

A :class:`Step` gathers the events, new and consumed interrupts, closed
interrupts and child runs of the run's next commit. :meth:`Step.apply` turns
node outcomes into the run's new state: the one place that state changes
after a node settles; graph decisions come from :mod:`openwop_bridge.core.graph`.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core import graph, kinds, run_state
from openwop_bridge.core.clock import Clock
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.core.statuses import InterruptStatus, RunStatus
from openwop_bridge.core.workflow import WorkflowDefinition
from openwop_bridge.runtime.activation import Activation
from openwop_bridge.runtime.context import NodeContext
from openwop_bridge.runtime.outcome import Outcome
from openwop_bridge.store.base import ChildStart


class Step:
    """What the next commit carries, and why the run must end (failure, a cancelled node, a divergence)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.events: list[EventDraft] = []
        self.new_interrupts: list[InterruptRecord] = []
        self.consume: list[str] = []
        self.close: dict[str, InterruptStatus] = {}
        self.children: list[ChildStart] = []
        self.failure: dict[str, Any] | None = None
        self.node_cancelled: dict[str, Any] | None = None
        self.diverged: dict[str, Any] | None = None

    @property
    def ending(self) -> bool:
        """True once a node's outcome ends the run."""
        return self.failure is not None or self.node_cancelled is not None or self.diverged is not None

    def draft(self, type_: str, payload: Any, node_id: str | None = None) -> EventDraft:
        """A new event draft, stamped now."""
        return EventDraft(self.clock.new_id("evt"), type_, payload, self.clock.now_ms(), node_id=node_id)

    def record(self, type_: str, payload: Any, node_id: str | None = None) -> None:
        """Add an event to the step."""
        self.events.append(self.draft(type_, payload, node_id))

    def drain(
        self,
    ) -> tuple[list[EventDraft], list[InterruptRecord], list[str], dict[str, InterruptStatus], list[ChildStart]]:
        """Hand over what the step gathered (events, new, consumed and closed interrupts, children) and start anew."""
        taken = self.events, self.new_interrupts, self.consume, self.close, self.children
        self.events, self.new_interrupts, self.consume, self.close, self.children = [], [], [], {}, []
        return taken

    def close_open_interrupts(self, state: dict[str, Any], status: InterruptStatus) -> None:
        """Close every interrupt the run still has open, with ``status``."""
        for interrupt_id in run_state.open_interrupt_ids(state):
            self.close[interrupt_id] = status

    def check_limit(self, state: dict[str, Any], limit: int) -> None:
        """Fail the run once it ran more than ``limit`` node executions."""
        if state.get("executions", 0) > limit and self.failure is None:
            self.failure = {
                "error": {"code": "recursion_limit_exceeded", "message": f"more than {limit} node executions"},
                "failedNodeId": None,
            }

    def end(self, state: dict[str, Any], workflow: WorkflowDefinition, duration_ms: int) -> RunStatus:
        """Record how the run ends (failed, cancelled by a node, or completed); returns its final status."""
        self.close_open_interrupts(state, "cancelled")
        if self.diverged is not None:
            state["error"] = self.diverged["error"]
            self.record("run.failed", {**self.diverged, "durationMs": duration_ms})
            return "failed"
        if self.failure is not None:
            state["error"] = self.failure["error"]
            payload = {"error": self.failure["error"], "durationMs": duration_ms}
            if self.failure.get("failedNodeId"):
                payload["failedNodeId"] = self.failure["failedNodeId"]
            self.record("run.failed", payload)
            return "failed"
        if self.node_cancelled is not None:
            payload = {"reason": "interrupt-cancelled", "cancelledBy": "system", "durationMs": duration_ms}
            self.record("run.cancelled", payload)
            return "cancelled"
        outputs = run_state.run_outputs(state, workflow)
        state["outputs"] = outputs
        self.record("run.completed", {"outputs": outputs, "durationMs": duration_ms})
        return "completed"

    def cancel(self, state: dict[str, Any], cancel: dict[str, Any], duration_ms: int) -> None:
        """Record the run's cancel (``cancel``: its request): every running or suspended node ends cancelled."""
        reason = cancel.get("reason", "cancelled")
        for node_id, ns in state["nodes"].items():
            if ns.get("status") in ("running", "suspended"):
                ns["status"] = "cancelled"
                ns.pop("waits", None)
                self.record("node.cancelled", {"nodeId": node_id, "reason": reason}, node_id)
        state["ready"] = []
        kept = ("reason", "cancelledBy", "cancelledBySubject", "parentRunId")
        payload: dict[str, Any] = {k: v for k, v in cancel.items() if k in kept and v}
        payload["durationMs"] = duration_ms
        self.record("run.cancelled", payload)

    def fail_internally(self, state: dict[str, Any]) -> None:
        """Record the run's failure after a defect of the executor."""
        error = {"code": "internal_error", "message": "the executor failed; see the server log"}
        self.record("run.failed", {"error": error})
        state["error"] = dict(error)
        self.close_open_interrupts(state, "cancelled")

    def take(self, state: dict[str, Any], ctx: NodeContext) -> None:
        """Move what a context produced into the step."""
        act: Activation = ctx.activation
        ns = state["nodes"][ctx.node_id]
        self.events.extend(act.drafts)
        act.drafts = []
        if any(kinds.kind_of(r.kind).opens_conversation for r in act.new_interrupts):
            # Turns fold into a messages channel even when the workflow declares none.
            state["hasConversation"] = True
        self.new_interrupts.extend(act.new_interrupts)
        act.new_interrupts = []
        self.consume.extend(act.consumed)
        act.consumed = []
        if act.variables:
            state.setdefault("variables", {}).update(act.variables)
            act.variables = {}
        ns["emitted"] = max(ns.get("emitted", 0), act.emitted)
        if act.once:
            ns["once"] = max(ns.get("once", 0), act.once)
        ns["ints"] = max(ns.get("ints", 0), ns.get("intBase", 0) + act.ordinals)
        ns["children"] = max(ns.get("children", 0), ns.get("childBase", 0) + act.children)

    def apply(
        self, state: dict[str, Any], workflow: WorkflowDefinition, outcomes: list[Outcome], source_run: str
    ) -> None:
        """Turn settled activations into the run's new state (``source_run``: the run a replay follows)."""
        nodes = state["nodes"]
        tokens: dict[str, bool] = state.setdefault("tokens", {})
        targets: list[str] = []
        for o in outcomes:
            node_id = o.ctx.node_id
            self.take(state, o.ctx)
            ns = nodes[node_id]
            ns.pop("waits", None)
            if o.kind == "completed":
                ns["status"] = "completed"
                ns["outputs"] = o.outputs
                payload = {"nodeId": node_id, "outputs": o.outputs, "durationMs": max(o.duration_ms, 0)}
                self.record("node.completed", payload, node_id)
                targets += graph.settle(workflow, tokens, node_id, graph.COMPLETED, o.outputs, o.route)
            elif o.kind == "failed":
                assert o.error is not None
                ns["status"] = "failed"
                ns["error"] = o.error
                self.record("node.failed", {"nodeId": node_id, "error": o.error, "attempts": 1}, node_id)
                if graph.failure_is_handled(workflow, node_id):
                    targets += graph.settle(workflow, tokens, node_id, graph.FAILED)
                elif self.failure is None:
                    self.failure = {"error": o.error, "failedNodeId": node_id}
            elif o.kind == "suspended":
                ns["status"] = "suspended"
                ns["waits"] = self._waits(o)
            elif o.kind == "cancelled":
                ns["status"] = "cancelled"
                reason = (o.error or {}).get("message", "cancelled")
                self.record("node.cancelled", {"nodeId": node_id, "reason": reason}, node_id)
                self.node_cancelled = self.node_cancelled or {"reason": "interrupt-cancelled", "nodeId": node_id}
            elif o.kind == "diverged":
                self._diverge(node_id, ns, o, source_run)
        for skipped in run_state.propagate(state, workflow, targets):
            self.record("node.skipped", {"nodeId": skipped, "reason": "trigger rule not met"}, skipped)

    def _diverge(self, node_id: str, ns: dict[str, Any], o: Outcome, source_run: str) -> None:
        """A replay's node did not do what the source did: the node fails and the run will fail with it."""
        assert o.error is not None
        ns["status"] = "failed"
        ns["error"] = o.error
        self.diverged = {"error": o.error, "failedNodeId": node_id}
        payload = {
            "sourceRunId": source_run,
            "atSequence": 0,
            "divergenceKind": "output",
            "nodeId": node_id,
            "message": o.error["message"],
        }
        self.record("replay.diverged", payload, node_id)
        self.record("node.failed", {"nodeId": node_id, "error": o.error, "attempts": 1}, node_id)

    def _waits(self, o: Outcome) -> list[dict[str, Any]]:
        known = {r.interrupt_id: r for r in (*o.ctx.known_interrupts(), *self.new_interrupts)}
        return run_state.wait_entries(o.waits, known, o.ctx.node_id)
