"""A run as LangGraph's SSE stream: ``metadata``, then ``values`` / ``updates`` / message parts, then the interrupts.

The stream follows the run's committed events from where the request began
(or from the ``Last-Event-ID`` a client reconnects with) until the run ends or
waits on a person. ``values`` parts carry the thread's values whenever they
change, with ``messages`` as LangChain message dicts; ``updates`` parts carry
each completed node's outputs as ``{nodeId: outputs}``. The message modes send
each message the run adds (see :mod:`openwop_bridge.langgraph_api.messages`) once:
``messages-tuple`` as a ``messages`` part ``[message, metadata]``, ``messages``
as ``messages/metadata`` then ``messages/complete``. A run that waits ends
its stream with the open interrupts under ``__interrupt__`` (in ``values`` and
``updates``); a failed run ends it with an ``error`` part. Other stream modes
are accepted and send nothing.

Every part that ends a batch of events carries the sequence number of the
batch's last event as its SSE ``id``; a client that reconnects with it as
``Last-Event-ID`` is sent what came after it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from openwop_bridge import Engine, RunRecord, ValidationError
from openwop_bridge.langgraph_api import shapes
from openwop_bridge.langgraph_api.messages import MessageFold, messages_of
from openwop_bridge.langgraph_api.service import LangGraphService, Segment

log = logging.getLogger("openwop_bridge.langgraph_api")

MODES = frozenset(
    {"values", "updates", "messages", "messages-tuple", "custom", "events", "debug", "tasks", "checkpoints"}
)
Part = tuple[str, Any]


def stream_modes(value: Any) -> set[str]:
    """The requested stream modes (``values`` when none)."""
    modes = [value] if isinstance(value, str) else list(value or ["values"])
    unknown = [m for m in modes if m not in MODES]
    if unknown or len(modes) > len(MODES):
        raise ValidationError(
            f"unknown stream_mode {unknown[0] if unknown else modes!r}", details={"known": sorted(MODES)}
        )
    return set(modes)


def frame(event: str, data: Any, event_id: int | None = None) -> str:
    """One SSE frame (with an ``id`` line when given)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'), default=str)}\n\n"


def frames(parts: list[Part], event_id: int | None) -> str:
    """Several parts; the last carries ``event_id``."""
    return "".join(frame(e, d, event_id if i == len(parts) - 1 else None) for i, (e, d) in enumerate(parts))


class MessageParts:
    """The message-mode parts of a stream: each message the run adds after the stream's start, once."""

    def __init__(self, run: RunRecord, thread_id: str, modes: set[str]) -> None:
        self.fold = MessageFold(run.run_id)
        self.modes = modes
        self.base = {"run_id": run.run_id, "thread_id": thread_id, "assistant_id": run.workflow_id}
        self.base["graph_id"] = run.workflow_id
        inputs = (run.state.get("variables") or {}).get("messages")
        self.seen = {m["id"] for m in messages_of(inputs, f"{run.run_id}:input")}

    async def catch_up(self, engine: Engine, run_id: str, cursor: int) -> None:
        """Take in the messages of the events up to ``cursor`` (already sent, or there before the stream)."""
        after = -1
        while after < cursor:
            docs = await engine.run_events(run_id, after, limit=500)
            for doc in docs:
                if doc["sequence"] > cursor:
                    return
                self.seen.update(m["id"] for m in self.fold.feed(doc))
            if not docs:
                return
            after = docs[-1]["sequence"]

    def parts(self, doc: Mapping[str, Any]) -> list[Part]:
        """The parts for one committed event."""
        out: list[Part] = []
        for message in self.fold.feed(doc):
            if message["id"] in self.seen:
                continue
            self.seen.add(message["id"])
            node = str((doc.get("payload") or {}).get("nodeId") or "")
            metadata = {
                **self.base,
                "langgraph_node": node,
                "langgraph_step": doc["sequence"],
                "langgraph_checkpoint_ns": "",
                "checkpoint_ns": "",
                "tags": [],
            }
            if "messages-tuple" in self.modes:
                out.append(("messages", [message, metadata]))
            if "messages" in self.modes:
                out.append(("messages/metadata", {message["id"]: {"metadata": metadata}}))
                out.append(("messages/complete", [message]))
        return out


async def run_stream(service: LangGraphService, segment: Segment, modes: set[str]) -> AsyncIterator[str]:
    """The SSE frames of one run request (see the module docstring)."""
    engine, run = service.engine, segment.run
    start = segment.cursor if segment.cursor >= 0 else None
    yield frame("metadata", {"run_id": run.run_id, "thread_id": segment.thread.thread_id, "attempt": 1}, start)
    try:
        talk = MessageParts(run, segment.thread.thread_id, modes) if modes & {"messages", "messages-tuple"} else None
        if talk is not None:
            await talk.catch_up(engine, run.run_id, segment.cursor)
        shown = shapes.shown_values(segment.thread, run, await service.turns(run))
        if "values" in modes:
            yield frame("values", shown)
        cursor = segment.cursor
        async for docs in engine.follow(run.run_id, segment.cursor, idle_s=0.5):
            fresh = await engine.run_record(run.run_id)
            assert fresh is not None
            run = fresh
            settled = await service.settled(run)
            if settled:
                # The run may have settled with events this batch does not hold yet: take them too.
                docs = [*docs, *await engine.run_events(run.run_id, docs[-1]["sequence"] if docs else cursor)]
            parts = _event_parts(docs, modes, talk)
            values = shapes.shown_values(segment.thread, run, await service.turns(run))
            if "values" in modes and values != shown:
                parts.append(("values", values))
            shown = values
            cursor = docs[-1]["sequence"] if docs else cursor
            yield frames(parts, cursor if docs else None) if parts else ": keep-alive\n\n"
            if settled:
                break
        yield "".join([chunk async for chunk in _ending(service, segment, modes)])
    except Exception:
        log.exception("LangGraph stream of run %s failed", run.run_id)
        yield frame("error", {"error": "internal_error", "message": "the stream failed on the server; see its log"})


def _event_parts(docs: list[dict[str, Any]], modes: set[str], talk: MessageParts | None) -> list[Part]:
    """The ``updates`` and message parts of a batch of committed events."""
    parts: list[Part] = []
    for doc in docs:
        if "updates" in modes and doc["type"] == "node.completed":
            parts.append(("updates", {doc["payload"]["nodeId"]: doc["payload"].get("outputs", {})}))
        if talk is not None:
            parts += talk.parts(doc)
    return parts


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
        values = shapes.shown_values(segment.thread, run, await service.turns(run))
        yield frame("values", {**values, "__interrupt__": interrupts})
    if "updates" in modes:
        yield frame("updates", {"__interrupt__": interrupts})
