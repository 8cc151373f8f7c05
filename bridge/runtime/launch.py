"""Starting a node activation: a fresh visit or a resumed one, what it already did, and its context.

:func:`activate` marks the node running in the run's state (a new visit emits
``node.started``, a resumed one ``node.resumed`` per settled answer);
:func:`known_interrupts` and :func:`recorded_history` load what earlier
activations of the visit left behind; :func:`node_context` builds the
:class:`~openwop_bridge.runtime.context.NodeContext` the node code runs in;
:func:`run_cancelling` runs a suspended node once more so it sees its run's cancel.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from typing import Any

from openwop_bridge.core.errors import BridgeError, InterruptCancelledError, NodeError
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.core.workflow import WorkflowDefinition, resolve_inputs
from openwop_bridge.runtime.activation import Suspend
from openwop_bridge.runtime.context import ContextHost, NodeContext
from openwop_bridge.runtime.nodes.base import NodeType
from openwop_bridge.store.base import Store

log = logging.getLogger("openwop_bridge.runtime.executor")

#: Makes an event draft: ``(type, payload, node id)``.
Drafter = Callable[[str, Any, str | None], EventDraft]


def activate(
    state: dict[str, Any],
    workflow: WorkflowDefinition,
    node_id: str,
    *,
    resumed: list[InterruptRecord] | None,
    cancelling: bool,
    now: int,
    draft: Drafter,
) -> tuple[dict[str, Any], bool, list[EventDraft]]:
    """Mark the node running; returns its state, whether the visit is fresh, and the events to record."""
    nodes = state["nodes"]
    ns = nodes.get(node_id)
    fresh = not resumed and not cancelling and (ns is None or ns.get("status") not in ("suspended", "running"))
    if fresh:
        previous = ns or {}
        visit = previous.get("visit", -1) + 1
        ns = {
            "status": "running",
            "visit": visit,
            "intBase": previous.get("ints", 0),
            "ints": previous.get("ints", 0),
            "childBase": previous.get("children", 0),
            "children": previous.get("children", 0),
            "emitted": 0,
            "startedAt": now,
        }
        nodes[node_id] = ns
        state["executions"] = state.get("executions", 0) + 1
        type_id = workflow.nodes[node_id].type_id
        payload = {"nodeId": node_id, "typeId": type_id, "attempt": 0, "visit": visit}
        return ns, True, [draft("node.started", payload, node_id)]
    assert ns is not None
    ns["status"] = "running"
    drafts = []
    for rec in resumed or []:
        if rec.status == "resolved":
            value = (rec.resolution or {}).get("resumeValue")
            payload = {"nodeId": node_id, "interruptId": rec.interrupt_id, "resumeValue": value}
            drafts.append(draft("node.resumed", payload, node_id))
    return ns, False, drafts


async def known_interrupts(
    store: Store, run_id: str, node_id: str, consumed: Collection[str], read: list[InterruptRecord] | None = None
) -> list[InterruptRecord]:
    """The node's interrupts so far (``read`` when they were read already), marking those an earlier
    activation consumed (``consumed``, not yet committed)."""
    known = await store.node_interrupts(run_id, node_id) if read is None else read
    for record in known:
        record.consumed = record.consumed or record.interrupt_id in consumed
    return known


async def recorded_history(
    store: Store, run_id: str, node_id: str, ns: dict[str, Any], source_run: str | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The commands this visit already recorded (positional, then emit-once), or a replayed source's."""
    if ns.get("emitted", 0) > 0 or ns.get("once", 0) > 0:
        # Ordered by command number: positional commands first, then the emit-once range.
        recorded = await store.activation_events(run_id, node_id, ns["visit"])
        return recorded[: ns.get("emitted", 0)], recorded[ns.get("emitted", 0) :]
    if source_run is not None:
        return await store.activation_events(source_run, node_id, ns["visit"]), []
    return [], []


def node_context(
    host: ContextHost,
    run: RunRecord,
    state: dict[str, Any],
    node_id: str,
    ns: dict[str, Any],
    now: int,
    *,
    known: list[InterruptRecord],
    history: list[dict[str, Any]],
    once: list[dict[str, Any]],
    cancelling: bool,
    replaying_fork: bool,
    known_complete: bool = True,
) -> NodeContext:
    """The context a node activation runs in: its inputs, variables, upstream results and history."""
    workflow = host.workflow
    node = workflow.nodes[node_id]
    nodes = state["nodes"]
    outputs = {k: v.get("outputs", {}) for k, v in nodes.items() if v.get("status") == "completed"}
    variables = state.get("variables", {})
    upstream = {
        e.source: {k: v for k, v in nodes.get(e.source, {}).items() if k in ("status", "outputs", "error")}
        for e in workflow.incoming.get(node_id, ())
    }
    return NodeContext(
        host,
        run_id=run.run_id,
        tenant=run.tenant,
        workflow_id=run.workflow_id,
        node=node,
        visit=ns["visit"],
        int_base=ns.get("intBase", 0),
        child_base=ns.get("childBase", 0),
        inputs=resolve_inputs(node, variables, outputs),
        variables=variables,
        configurable=run.spec.get("configurable") or {},
        known=known,
        history=history,
        once_history=once,
        started_at_ms=ns.get("startedAt", now),
        replaying_fork=replaying_fork,
        cancelling=cancelling,
        upstream=upstream,
        requested=ns.get("ints", 0) - ns.get("intBase", 0),
        known_complete=known_complete,
    )


async def run_cancelling(node_type: NodeType | None, ctx: NodeContext, grace_s: float) -> list[EventDraft]:
    """Run a suspended node whose run is cancelled (its wait raises InterruptCancelledError); its events to keep."""
    if node_type is not None:
        try:
            await asyncio.wait_for(node_type.run(ctx), grace_s)
        except (Suspend, InterruptCancelledError, NodeError, BridgeError, TimeoutError):
            pass
        except Exception:
            log.exception("node %s raised while being cancelled", ctx.node_id)
    return [d for d in ctx.activation.drafts if d.type not in ("interrupt.requested", "node.suspended")]
