"""The LangGraph API over an :class:`~openwop_bridge.Engine`: assistants, threads, state and runs.

A thread spans the OpenWOP runs started on it (the last is current). A
LangGraph run is an OpenWOP run: ``input`` starts the thread's next run,
``command.resume`` answers its open interrupts (every answer is checked with
the engine's preview before any is applied, so a bad resume changes nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from starlette.requests import Request

from openwop_bridge import (
    BridgeError,
    ConflictError,
    Engine,
    KeyRing,
    NotFoundError,
    Principal,
    RunRecord,
    ValidationError,
)
from openwop_bridge.langgraph_api import shapes, threads
from openwop_bridge.langgraph_api.interrupts import answer_for, resume_entries

MAX_METADATA_KEYS = 64
MAX_SEARCH_IDS = 1000


@dataclass
class Segment:
    """What one run request did: the run to follow, and the event sequence to follow it after."""

    thread: threads.Thread
    run: RunRecord
    cursor: int


def _metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or len(value) > MAX_METADATA_KEYS:
        raise ValidationError(f"metadata must be an object of at most {MAX_METADATA_KEYS} keys")
    return dict(value)


def _ids(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_SEARCH_IDS or not all(isinstance(i, str) for i in value):
        raise ValidationError(f"ids must be a list of at most {MAX_SEARCH_IDS} thread ids")
    return value


class LangGraphService:
    """Thread, state and run operations shared by the routes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @staticmethod
    def principal(request: Request) -> Principal:
        """The caller, from ``x-api-key`` (LangGraph's header) or ``Authorization: Bearer``."""
        ring: KeyRing = request.app.state.keyring
        key = request.headers.get("x-api-key")
        return ring.authenticate(f"Bearer {key}" if key else request.headers.get("authorization"))

    async def thread(self, principal: Principal, thread_id: str) -> threads.Thread:
        """A thread of the caller's tenant, else 404."""
        thread = await threads.load(self.engine, principal.tenant, thread_id)
        if thread is None:
            raise NotFoundError(f"no thread {thread_id!r}")
        return thread

    async def current(
        self, thread: threads.Thread
    ) -> tuple[RunRecord | None, list[dict[str, Any]], list[dict[str, Any]]]:
        """The thread's current run, its open interrupts (as views) and its conversation's turns."""
        run = await self.engine.run_record(thread.run_id) if thread.run_id else None
        return run, await self.open_views(run), await self.turns(run)

    async def turns(self, run: RunRecord | None) -> list[dict[str, Any]]:
        """The turns of a run's conversations (``ConversationTurn`` documents), in order."""
        if run is None or not run.state.get("hasConversation"):
            return []
        channels = await self.engine.channels(run)
        return [
            turn
            for value in channels.values()
            if isinstance(value, list)
            for turn in value
            if isinstance(turn, dict) and "messageId" in turn
        ]

    async def open_views(self, run: RunRecord | None) -> list[dict[str, Any]]:
        """The open, answerable interrupts of a run that waits for them."""
        if run is None or run.terminal:
            return []
        records = await self.engine.open_interrupts(run.run_id)
        return [self.engine.interrupt_view(r, link=None) for r in records]

    def new_thread(self, principal: Principal, thread_id: Any, metadata: Any = None) -> threads.Thread:
        """A thread of the caller's tenant, not stored yet (``thread_id`` None: a new id)."""
        principal.require("runs:create")
        thread_id = thread_id or self.engine.clock.new_id("thread")
        if not isinstance(thread_id, str) or not 0 < len(thread_id) <= 200:
            raise ValidationError("thread_id must be a string of at most 200 characters")
        now = self.engine.clock.now_ms()
        return threads.Thread(thread_id, principal.tenant, now, now, _metadata(metadata))

    async def create_thread(self, principal: Principal, body: Mapping[str, Any]) -> threads.Thread:
        """``POST /threads``: a new thread (or the existing one with ``if_exists: do_nothing``)."""
        thread = self.new_thread(principal, body.get("thread_id"), body.get("metadata"))
        thread_id = thread.thread_id
        if await threads.save(self.engine, thread, create=True):
            return thread
        if body.get("if_exists") == "do_nothing":
            return await self.thread(principal, thread_id)
        raise ConflictError(f"thread {thread_id!r} already exists", details={"threadId": thread_id})

    async def search(self, principal: Principal, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """``POST /threads/search``: by id, newest first, filtered by ``status``, ``metadata``, ``values`` and ``ids``.

        The threads are read page by page from the store; only ``offset + limit`` matches are
        looked for, and only ``limit`` are kept.
        """
        principal.require("runs:read")
        limit, offset = body.get("limit", 10), body.get("offset", 0)
        if not isinstance(limit, int) or not isinstance(offset, int) or not 0 < limit <= 1000 or offset < 0:
            raise ValidationError("limit must be 1-1000 and offset 0 or more")
        wanted, values = _metadata(body.get("metadata")), _metadata(body.get("values"))
        status, ids, order = body.get("status"), _ids(body.get("ids")), body.get("sort_order") or "desc"
        if order not in ("asc", "desc"):
            raise ValidationError("sort_order must be asc or desc")
        found: list[dict[str, Any]] = []
        skipped = 0
        async for thread in threads.listed(self.engine, principal.tenant, descending=order == "desc", ids=ids):
            if any(thread.metadata.get(k) != v for k, v in wanted.items()):
                continue
            if status is None and not values and skipped < offset:  # a match before the page: nothing more to read
                skipped += 1
                continue
            shown = shapes.thread_json(thread, *await self.current(thread))
            if (status is not None and shown["status"] != status) or any(
                shown["values"].get(k) != v for k, v in values.items()
            ):
                continue
            if skipped < offset:
                skipped += 1
                continue
            found.append(shown)
            if len(found) >= limit:
                break
        return found

    async def update_state(self, principal: Principal, thread: threads.Thread, body: Mapping[str, Any]) -> None:
        """``POST /threads/{id}/state``: set the values the thread's next run starts with."""
        principal.require("runs:create")
        run, _, _ = await self.current(thread)
        if run is not None and not run.terminal:
            raise ConflictError("the thread's run is still going; its state changes only through its nodes")
        values = body.get("values")
        if not isinstance(values, Mapping):
            raise ValidationError("values must be an object")
        thread.values = {**shapes.values_of(thread, run), **values}
        await threads.save(self.engine, thread)

    # --- runs ---------------------------------------------------------------------------

    async def start_or_resume(self, principal: Principal, thread: threads.Thread, body: Mapping[str, Any]) -> Segment:
        """A run request: ``command.resume`` answers the open interrupts, else ``input`` starts a run."""
        principal.require("runs:read")
        command = body.get("command")
        if command is not None:
            if not isinstance(command, Mapping) or "resume" not in command:
                raise ValidationError("only command.resume is supported; goto and update are not")
            return await self._resume(principal, thread, command["resume"])
        return await self._start(principal, thread, body)

    async def _start(self, principal: Principal, thread: threads.Thread, body: Mapping[str, Any]) -> Segment:
        assistant = body.get("assistant_id")
        if not isinstance(assistant, str):
            raise ValidationError("assistant_id is required")
        run, _, _ = await self.current(thread)
        if run is not None and not run.terminal:
            raise ConflictError(
                f"thread {thread.thread_id!r} has a run going ({run.run_id}); resume or cancel it first",
                details={"runId": run.run_id},
            )
        given = body.get("input")
        if given is not None and not isinstance(given, Mapping):
            raise ValidationError("input must be an object")
        inputs = {**shapes.values_of(thread, run), **(given or {})}
        metadata = {"langgraph": {"threadId": thread.thread_id, "metadata": _metadata(body.get("metadata"))}}
        # As LangGraph's server does: a thread names the assistant (graph) of its latest run. The
        # thread, naming the new run, is stored in the run's own transaction.
        named = {**thread.metadata, "graph_id": assistant, "assistant_id": assistant}
        now = self.engine.clock.now_ms()
        started = replace(thread, metadata=named, runs=list(thread.runs), values={}, updated_at_ms=now)
        started.stored_form = thread.stored_form  # the run starts only while the thread is still as read
        stored = threads.stored(self.engine)
        new = await stored.start_run(principal, assistant, started, inputs=inputs, metadata=metadata)
        assert new is not None  # only a thread being created can refuse its run
        return Segment(started, new, -1)

    async def _resume(self, principal: Principal, thread: threads.Thread, resume: Any) -> Segment:
        run, views, _ = await self.current(thread)
        if run is None:
            raise ConflictError("the thread has no run to resume")
        by_id = {v["interruptId"]: v for v in views}
        answers: list[tuple[str, Any]] = []
        for interrupt_id, value in resume_entries(resume, views):
            answer = answer_for(by_id[interrupt_id], value)
            try:
                await self.engine.preview_answer(principal, answer, interrupt_id=interrupt_id)
            except BridgeError as exc:
                exc.message = f"interrupt {interrupt_id}: {exc.message}"
                exc.details = {**(exc.details or {}), "interruptId": interrupt_id}
                raise
            answers.append((interrupt_id, answer))
        cursor = run.next_seq - 1
        for interrupt_id, answer in answers:
            await self.engine.resolve(principal, answer, interrupt_id=interrupt_id)
        return Segment(thread, run, cursor)

    async def settled(self, run: RunRecord) -> bool:
        """Whether a run has nothing left to do for now: ended, or waiting on a person."""
        return run.terminal or (not run.needs_work and bool(await self.engine.open_interrupts(run.run_id)))

    async def wait(self, segment: Segment) -> RunRecord:
        """Follow a run until it ends or waits on a person; its latest record."""
        run = segment.run
        async for _ in self.engine.follow(run.run_id, segment.cursor, idle_s=0.25):
            fresh = await self.engine.run_record(run.run_id)
            assert fresh is not None
            run = fresh
            if await self.settled(run):
                break
        fresh = await self.engine.run_record(run.run_id)
        return fresh or run

    async def final_values(self, segment: Segment, run: RunRecord) -> dict[str, Any]:
        """What ``runs.wait`` returns: the values, with ``__interrupt__`` or ``__error__`` when so."""
        values = shapes.shown_values(segment.thread, run, await self.turns(run))
        views = await self.open_views(run)
        if views:
            values["__interrupt__"] = [i for items in shapes.interrupts_by_task(views).values() for i in items]
        if run.status == "failed":
            error = run.state.get("error") or {}
            values["__error__"] = {"error": error.get("code", "run_failed"), "message": error.get("message", "")}
        return values

    async def run_of(self, principal: Principal, thread: threads.Thread, run_id: str) -> RunRecord:
        """One of the thread's runs, else 404."""
        if run_id not in thread.runs:
            raise NotFoundError(f"no run {run_id!r} on thread {thread.thread_id!r}")
        return await self.engine.visible_run(run_id, principal)
