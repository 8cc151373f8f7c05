"""The JSON shapes of LangGraph's API (threads, state, runs, assistants) for OpenWOP runs."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from openwop_bridge import RunRecord, WorkflowDefinition
from openwop_bridge.langgraph_api.interrupts import as_interrupt
from openwop_bridge.langgraph_api.messages import with_messages
from openwop_bridge.langgraph_api.threads import Thread

_RUN_STATUS = {"completed": "success", "failed": "error", "cancelled": "interrupted"}


def iso(ms: int) -> str:
    """An ISO-8601 UTC timestamp for epoch milliseconds."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def values_of(thread: Thread, run: RunRecord | None) -> dict[str, Any]:
    """A thread's values: its current run's variables and outputs (else values set with ``update_state``).

    A served graph's node outputs the graph's own state as ``state``: its keys are the values.
    """
    if run is None:
        return dict(thread.values)
    values = dict(run.state.get("variables") or {})
    for outputs in (run.state.get("outputs") or {}).values():
        if isinstance(outputs, dict):
            values.update(outputs)
            if isinstance(outputs.get("state"), dict):
                values.pop("state")
                values.update(outputs["state"])
    return values


def shown_values(thread: Thread, run: RunRecord | None, turns: list[dict[str, Any]]) -> dict[str, Any]:
    """What a client sees: :func:`values_of`, with ``messages`` as LangChain dicts and the conversation's turns."""
    prefix = f"{run.run_id}:input" if run else f"{thread.thread_id}:values"
    return with_messages(values_of(thread, run), turns, prefix)


def thread_status(run: RunRecord | None, views: list[dict[str, Any]]) -> str:
    """``idle``, ``busy``, ``interrupted`` or ``error``."""
    if run is None or run.status in ("completed", "cancelled"):
        return "idle"
    if run.status == "failed":
        return "error"
    return "interrupted" if views else "busy"


def run_status(run: RunRecord, views: list[dict[str, Any]]) -> str:
    """A LangGraph run status for an OpenWOP run."""
    if run.terminal:
        return _RUN_STATUS[run.status]
    if views:
        return "interrupted"
    return "pending" if run.status == "pending" else "running"


def interrupts_by_task(views: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """``{taskId: [{id, value}]}``: the open interrupts by the node (task) that asked them."""
    out: dict[str, list[dict[str, Any]]] = {}
    for view in views:
        out.setdefault(view["nodeId"], []).append(as_interrupt(view))
    return out


def thread_json(
    thread: Thread, run: RunRecord | None, views: list[dict[str, Any]], turns: list[dict[str, Any]]
) -> dict[str, Any]:
    """A LangGraph ``Thread``."""
    return {
        "thread_id": thread.thread_id,
        "created_at": iso(thread.created_at_ms),
        "updated_at": iso(max(thread.updated_at_ms, run.updated_at_ms if run else 0)),
        "state_updated_at": iso(max(thread.updated_at_ms, run.updated_at_ms if run else 0)),
        "metadata": thread.metadata,
        "status": thread_status(run, views),
        "config": {},
        "values": shown_values(thread, run, turns),
        "interrupts": interrupts_by_task(views),
    }


def checkpoint(thread: Thread, run: RunRecord | None) -> dict[str, Any]:
    """A checkpoint reference: the run and how far its event log has come."""
    checkpoint_id = f"{run.run_id}.{run.next_seq}" if run else f"{thread.thread_id}.0"
    return {"thread_id": thread.thread_id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}


def state_json(
    thread: Thread, run: RunRecord | None, views: list[dict[str, Any]], turns: list[dict[str, Any]]
) -> dict[str, Any]:
    """A LangGraph ``ThreadState``: values, the waiting tasks with their interrupts, a checkpoint."""
    by_task = interrupts_by_task(views)
    tasks: list[dict[str, Any]] = [
        {
            "id": task_id,
            "name": task_id,
            "path": [task_id],
            "error": None,
            "interrupts": items,
            "checkpoint": None,
            "state": None,
            "result": None,
        }
        for task_id, items in by_task.items()
    ]
    metadata: dict[str, Any] = {"thread_id": thread.thread_id}
    if run is not None:
        metadata.update(run_id=run.run_id, graph_id=run.workflow_id, openwop_status=run.status)
    return {
        "values": shown_values(thread, run, turns),
        "next": [t["name"] for t in tasks],
        "tasks": tasks,
        "metadata": metadata,
        "created_at": iso(run.updated_at_ms if run else thread.updated_at_ms),
        "checkpoint": checkpoint(thread, run),
        "parent_checkpoint": None,
        "interrupts": [i for items in by_task.values() for i in items],
    }


def _run_metadata(run: RunRecord) -> dict[str, Any]:
    spec = run.spec.get("metadata")
    block = spec.get("langgraph") if isinstance(spec, dict) else None
    given = block.get("metadata") if isinstance(block, dict) else None
    return dict(given) if isinstance(given, dict) else {}


def run_json(thread: Thread, run: RunRecord, views: list[dict[str, Any]]) -> dict[str, Any]:
    """A LangGraph ``Run`` for one OpenWOP run of a thread."""
    return {
        "run_id": run.run_id,
        "thread_id": thread.thread_id,
        "assistant_id": run.workflow_id,
        "created_at": iso(run.created_at_ms),
        "updated_at": iso(run.updated_at_ms),
        "status": run_status(run, views),
        "metadata": _run_metadata(run),
        "multitask_strategy": "reject",
        "kwargs": {},
    }


def assistant_json(workflow: WorkflowDefinition, record: Mapping[str, Any]) -> dict[str, Any]:
    """A LangGraph ``Assistant``: one per workflow, named by the workflow's id; ``record`` holds its
    times and version (:class:`~openwop_bridge.langgraph_api.assistants.Assistants`)."""
    return {
        "assistant_id": workflow.id,
        "graph_id": workflow.id,
        "name": workflow.raw.get("name") or workflow.id,
        "description": workflow.raw.get("description"),
        "config": {},
        "context": {},
        "metadata": {"openwop": {"version": workflow.raw.get("version")}},
        "version": int(record["version"]),
        "created_at": iso(int(record["createdAt"])),
        "updated_at": iso(int(record["updatedAt"])),
    }
