"""Projecting a run onto an A2A task (the interop map's ``a2a.taskState`` and ``fields`` rows)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2

from a2a.types import Artifact, Message, Part, Role, Task, TaskState, TaskStatus
from openwop_bridge import kinds

WIRE_STATE = {
    "pending": TaskState.TASK_STATE_SUBMITTED,
    "running": TaskState.TASK_STATE_WORKING,
    "paused": TaskState.TASK_STATE_WORKING,
    "cancelling": TaskState.TASK_STATE_WORKING,
    "waiting-approval": TaskState.TASK_STATE_INPUT_REQUIRED,
    "waiting-input": TaskState.TASK_STATE_INPUT_REQUIRED,
    "waiting-external": TaskState.TASK_STATE_INPUT_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}
FINAL = {
    TaskState.TASK_STATE_INPUT_REQUIRED,
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
}
TERMINAL = FINAL - {TaskState.TASK_STATE_INPUT_REQUIRED}
OUTPUTS_ARTIFACT = "outputs"


def struct(value: Mapping[str, Any]) -> struct_pb2.Struct:
    """A JSON object as a protobuf ``Struct``."""
    return json_format.ParseDict(dict(value), struct_pb2.Struct())


def data_part(value: Any) -> Part:
    """A data part carrying a JSON value."""
    return Part(data=json_format.ParseDict(value, struct_pb2.Value()))


def context_id(spec: Mapping[str, Any], run_id: str) -> str:
    """The task's ``contextId``: the one it was started with, else the run id (a run started over REST)."""
    return str((spec.get("a2a") or {}).get("contextId") or run_id)


def answer_schema(kind: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The schema an answer must meet: the declared ``resumeSchema``, else the one the kind advertises."""
    known = kinds.REGISTRY.get(kind)
    return known.response_schema(payload) if known is not None else dict(payload.get("resumeSchema") or {})


def interrupt_metadata(snapshot: Mapping[str, Any]) -> dict[str, Any] | None:
    """``metadata.openwop.interrupt`` of a waiting run: what a person reads and the answer's schema."""
    views = snapshot.get("interrupts") or []
    if not views:
        return None
    view = views[0]
    payload = view.get("payload") or {}
    out: dict[str, Any] = {
        "kind": view["kind"],
        "interruptId": view["interruptId"],
        "nodeId": view["nodeId"],
        "title": view.get("title"),
        "resumeSchema": answer_schema(view["kind"], payload),
    }
    data = payload.get("data") or {}
    for name in ("prompt", "description", "questions", "actions"):
        found = data.get(name, payload.get(name))
        if found is not None:
            out[name] = found
    if view.get("votes"):
        out["votes"] = view["votes"]
    return {k: v for k, v in out.items() if v is not None}


def task_of(snapshot: Mapping[str, Any], spec: Mapping[str, Any], *, with_artifacts: bool = True) -> Task:
    """The A2A task of a run snapshot (``RunSnapshot``) and its spec."""
    run_id = str(snapshot["runId"])
    ctx = context_id(spec, run_id)
    state = WIRE_STATE.get(str(snapshot["status"]), TaskState.TASK_STATE_WORKING)
    interrupt = interrupt_metadata(snapshot) if state == TaskState.TASK_STATE_INPUT_REQUIRED else None
    if state == TaskState.TASK_STATE_INPUT_REQUIRED and interrupt is None:
        # Answered a moment ago: the run is about to go on, and nobody is asked anything.
        state = TaskState.TASK_STATE_WORKING
    task = Task(id=run_id, context_id=ctx, status=TaskStatus(state=state))
    openwop: dict[str, Any] = {"runId": run_id, "workflowId": snapshot["workflowId"], "status": snapshot["status"]}
    if interrupt is not None:
        openwop["interrupt"] = interrupt
        text = str(interrupt.get("prompt") or interrupt.get("title") or interrupt["kind"])
        task.status.message.CopyFrom(
            Message(
                message_id=f"{run_id}:{interrupt['interruptId']}",
                context_id=ctx,
                task_id=run_id,
                role=Role.ROLE_AGENT,
                parts=[Part(text=text)],
                metadata=struct({"openwop": {"interrupt": interrupt}}),
            )
        )
    if state == TaskState.TASK_STATE_FAILED and snapshot.get("error"):
        openwop["error"] = snapshot["error"]
    task.metadata.CopyFrom(struct({"openwop": openwop}))
    if with_artifacts and state == TaskState.TASK_STATE_COMPLETED:
        task.artifacts.append(outputs_artifact(snapshot))
    return task


def outputs_artifact(snapshot: Mapping[str, Any]) -> Artifact:
    """The run's final outputs as one artifact (a data part)."""
    return Artifact(artifact_id=OUTPUTS_ARTIFACT, name="outputs", parts=[data_part(snapshot.get("outputs") or {})])
