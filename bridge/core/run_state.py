"""The run's state document, read and advanced without side effects.

The executor keeps one JSON document per run (``nodes``, ``tokens``,
``ready``, ``variables`` …) and commits it with each transaction. These
functions answer questions about it — what status the run reports, which node
it waits at, what it outputs — and move trigger-rule tokens through the graph;
the executor turns what they report into events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openwop_bridge.core import graph
from openwop_bridge.core.kinds import CUSTOM, waiting_status
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.core.statuses import RunStatus
from openwop_bridge.core.workflow import WorkflowDefinition, initial_variables

LIVE = ("running", "suspended")
SETTLED = ("completed", "failed", "skipped", "cancelled")
#: The keys every run state document has from its creation on.
CORE_KEYS = ("variables", "nodes", "tokens", "ready", "executions")


@dataclass
class RunState:
    """The typed form of a run's state document.

    ``variables`` are the workflow's variables; ``nodes`` each node's state by id
    (status, visits, waits, outcome …); ``tokens`` the trigger-rule tokens per
    node; ``ready`` the nodes due to start; ``executions`` how many node
    activations the run has made. Keys the executor adds later (``outputs``,
    ``error``, ``hasConversation`` …) travel in ``extra``.
    """

    variables: dict[str, Any]
    ready: list[str]
    nodes: dict[str, Any] = field(default_factory=dict)
    tokens: dict[str, Any] = field(default_factory=dict)
    executions: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def initial(cls, workflow: WorkflowDefinition, inputs: Mapping[str, Any]) -> RunState:
        """The state a new run of ``workflow`` starts with: its variables, its entry nodes ready."""
        return cls(variables=initial_variables(workflow, inputs), ready=list(workflow.entry_nodes))

    def to_dict(self) -> dict[str, Any]:
        """The JSON document the store keeps."""
        return {
            "variables": self.variables,
            "nodes": self.nodes,
            "tokens": self.tokens,
            "ready": self.ready,
            "executions": self.executions,
            **self.extra,
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> RunState:
        """The typed form of a stored document."""
        return cls(
            variables=dict(doc.get("variables", {})),
            ready=list(doc.get("ready", [])),
            nodes=dict(doc.get("nodes", {})),
            tokens=dict(doc.get("tokens", {})),
            executions=int(doc.get("executions", 0)),
            extra={k: v for k, v in doc.items() if k not in CORE_KEYS},
        )


def suspended_nodes(state: dict[str, Any]) -> list[str]:
    """Ids of the nodes that wait for something."""
    return [n for n, ns in state["nodes"].items() if ns.get("status") == "suspended"]


def _human_waits(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        w
        for ns in state["nodes"].values()
        if ns.get("status") == "suspended"
        for w in ns.get("waits", [])
        if "kind" in w
    ]


def run_status(state: dict[str, Any], *, busy: bool) -> RunStatus:
    """The status a live run reports: ``running`` or the waiting status of its oldest interrupt."""
    nodes = state["nodes"]
    if busy or state.get("ready") or any(ns.get("status") == "running" for ns in nodes.values()):
        return "running"
    waits = _human_waits(state)
    if not waits:
        return "running"
    return waiting_status(min(waits, key=lambda w: w.get("at", 0))["kind"])


def child_waits(state: dict[str, Any]) -> list[str]:
    """The child runs a quiescent run waits on, oldest wait first (none while it has work or a question)."""
    nodes = state["nodes"]
    if state.get("ready") or any(ns.get("status") == "running" for ns in nodes.values()) or _human_waits(state):
        return []
    waits = [
        w for ns in nodes.values() if ns.get("status") == "suspended" for w in ns.get("waits", []) if w.get("child")
    ]
    return [str(w["child"]) for w in sorted(waits, key=lambda w: w.get("at", 0))]


def reported_status(state: dict[str, Any], own: RunStatus, children: Mapping[str, RunStatus]) -> RunStatus:
    """The status a run reports and is stored with: ``own`` (its :func:`run_status`), except that a running run
    that only waits on children reports the waiting status of the first of them (oldest wait first) that
    waits for a person (``children``: child run id → its stored status, itself reported so, through nesting)."""
    if own != "running":
        return own
    for child in child_waits(state):
        status = children.get(child)
        if status is not None and status.startswith("waiting-"):
            return status
    return own


def current_node(state: dict[str, Any]) -> str | None:
    """The node of the oldest open interrupt, if any."""
    waits = _human_waits(state)
    return min(waits, key=lambda w: w.get("at", 0))["nodeId"] if waits else None


def open_interrupt_ids(state: dict[str, Any]) -> list[str]:
    """Interrupts that live nodes still wait on."""
    return [
        wait["id"]
        for ns in state["nodes"].values()
        if ns.get("status") in LIVE
        for wait in ns.get("waits", [])
        if "kind" in wait
    ]


def run_outputs(state: dict[str, Any], workflow: WorkflowDefinition) -> dict[str, Any]:
    """The outputs of a completed run: those of its completed sink nodes."""
    return {
        node_id: ns.get("outputs", {})
        for node_id, ns in state["nodes"].items()
        if ns.get("status") == "completed" and not workflow.outgoing.get(node_id)
    }


def propagate(state: dict[str, Any], workflow: WorkflowDefinition, targets: list[str]) -> list[str]:
    """Evaluate the trigger rules of ``targets``: queue runnable nodes, skip blocked ones.

    Returns the ids of the nodes it skipped, in order; skipping settles their
    outgoing edges too, so the skip may travel down the graph.
    """
    nodes = state["nodes"]
    tokens = state["tokens"]
    ready: list[str] = state.setdefault("ready", [])
    skipped: list[str] = []
    queue = list(dict.fromkeys(targets))
    while queue:
        node_id = queue.pop(0)
        status = nodes.get(node_id, {}).get("status")
        if status in LIVE or node_id in ready:
            continue
        verdict = graph.evaluate(workflow, tokens, node_id)
        if verdict is graph.Verdict.WAIT:
            continue
        graph.consume(workflow, tokens, node_id)
        if verdict is graph.Verdict.RUN and not workflow.nodes[node_id].disabled:
            ready.append(node_id)
            continue
        if status in SETTLED:
            # A blocked edge reaching a node that already settled (the back edge
            # of a loop that has ended) changes nothing; skipping it again would
            # chase the cycle forever.
            continue
        prev = nodes.get(node_id, {})
        nodes[node_id] = {**prev, "status": "skipped", "visit": prev.get("visit", -1) + 1}
        skipped.append(node_id)
        queue += graph.settle(workflow, tokens, node_id, graph.SKIPPED)
    return skipped


def wait_entries(wait_ids: list[str], interrupts: Mapping[str, InterruptRecord], node_id: str) -> list[dict[str, Any]]:
    """What a suspended node's state records of each thing it waits on (an interrupt or a child run)."""
    entries: list[dict[str, Any]] = []
    for wid in wait_ids:
        if wid.startswith("child:"):
            entries.append({"id": wid, "child": wid.split(":", 1)[1]})
            continue
        rec = interrupts.get(wid)
        entries.append(
            {
                "id": wid,
                "kind": rec.kind if rec else CUSTOM.name,
                "at": rec.requested_at_ms if rec else 0,
                "nodeId": rec.node_id if rec else node_id,
            }
        )
    return entries


def execution_limit(spec: dict[str, Any], default: int) -> int:
    """The node-execution cap of a run: the server's, lowered by ``configurable.recursionLimit``."""
    requested = (spec.get("configurable") or {}).get("recursionLimit")
    if isinstance(requested, int) and requested > 0:
        return min(default, requested)
    return default
