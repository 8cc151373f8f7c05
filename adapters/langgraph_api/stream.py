"""A run as LangGraph's SSE stream: ``metadata``, then ``values`` / ``updates`` parts, then the interrupts.

The stream follows the run's committed events from where the request began
until the run ends or waits on a person. ``values`` parts carry the thread's
values whenever they change; ``updates`` parts carry each completed node's
outputs as ``{nodeId: outputs}``. A run that waits ends its stream with the
open interrupts under ``__interrupt__`` (in both modes); a failed run ends it
with an ``error`` part. Other stream modes are accepted and send nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from adapters.langgraph_api import shapes
from adapters.langgraph_api.service import LangGraphService, Segment
from bridge import ValidationError

log = logging.getLogger("adapters.langgraph_api")

MODES = frozenset(
    {"values", "updates", "messages", "messages-tuple", "custom", "events", "debug", "tasks", "checkpoints"}
)


def stream_modes(value: Any) -> set[str]:
    """The requested stream modes (``values`` when none)."""
    modes = [value] if isinstance(value, str) else list(value or ["values"])
    unknown = [m for m in modes if m not in MODES]
    if unknown or len(modes) > len(MODES):
        raise ValidationError(
            f"unknown stream_mode {unknown[0] if unknown else modes!r}", details={"known": sorted(MODES)}
        )
    return set(modes)


def frame(event: str, data: Any) -> str:
    """One SSE frame."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'), default=str)}\n\n"


async def run_stream(service: LangGraphService, segment: Segment, modes: set[str]) -> AsyncIterator[str]:
    """The SSE frames of one run request (see the module docstring)."""
    engine, run = service.engine, segment.run
    yield frame("metadata", {"run_id": run.run_id, "thread_id": segment.thread.thread_id, "attempt": 1})
    try:
        shown = shapes.values_of(segment.thread, run)
        if "values" in modes:
            yield frame("values", shown)
        async for docs in engine.follow(run.run_id, segment.cursor, idle_s=0.5):
            parts: list[str] = []
            if "updates" in modes:
                parts += [
                    frame("updates", {doc["payload"]["nodeId"]: doc["payload"].get("outputs", {})})
                    for doc in docs
                    if doc["type"] == "node.completed"
                ]
            fresh = await engine.run_record(run.run_id)
            assert fresh is not None
            run = fresh
            values = shapes.values_of(segment.thread, run)
            if "values" in modes and values != shown:
                parts.append(frame("values", values))
            shown = values
            yield "".join(parts) if parts else ": keep-alive\n\n"
            if await service.settled(run):
                break
        yield "".join([chunk async for chunk in _ending(service, segment, modes)])
    except Exception:
        log.exception("LangGraph stream of run %s failed", run.run_id)
        yield frame("error", {"error": "internal_error", "message": "the stream failed on the server; see its log"})


async def _ending(service: LangGraphService, segment: Segment, modes: set[str]) -> AsyncIterator[str]:
    run = await service.engine.run_record(segment.run.run_id)
    assert run is not None
    if run.status == "failed":
        error = run.state.get("error") or {}
        yield frame("error", {"error": error.get("code", "run_failed"), "message": error.get("message", "")})
        return
    views = await service.open_views(run)
    if not views:
        return
    interrupts = [i for items in shapes.interrupts_by_task(views).values() for i in items]
    if "values" in modes:
        yield frame("values", {**shapes.values_of(segment.thread, run), "__interrupt__": interrupts})
    if "updates" in modes:
        yield frame("updates", {"__interrupt__": interrupts})
