"""Serving a workflow as an AG-UI agent: ``POST /agui/{workflowId}``.

One request is one AG-UI run, a stretch of the thread's OpenWOP run:

1. Refusals before the stream opens are OpenWOP error envelopes (unknown
   workflow, bad body, missing scope, an invalid resume entry — every entry is
   checked before any is applied, and one bad entry refuses the request).
2. The request is planned (every plan streams a run's events and state, so each
   needs ``runs:read``, as REST does to show them): start the thread's first (or next) run; answer or
   cancel the interrupts named in ``resume``; take a new user message as the
   answer to an open conversation turn; or, with nothing to do, re-emit the open
   interrupts (a reconnect after a reload). On a finished thread only a user
   message the thread has not seen starts the next run; a request bringing
   nothing new re-emits how the last run ended, so a reconnecting client never
   starts a workflow again by accident.
3. The stream follows the run's committed events (:meth:`bridge.Engine.follow`)
   from where this AG-UI run began until the run is idle again: it then finishes with the ``interrupt``
   outcome (every open interrupt), ``success`` (with the run's outputs) or
   ``cancelled``; a failed run ends with ``RUN_ERROR`` and its OpenWOP code.

The protocol is negotiated on the request's ``protocolVersion``: a client that
declares 1.0 or later gets the full 1.0 protocol; one that declares nothing or
an earlier version (clients built on ``@ag-ui/client`` before 1.0, such as
CopilotKit 1.75's) gets only what its schema accepts — its ``RUN_STARTED``
declares no version, and a cancelled run finishes without an outcome (the
``STATE_SNAPSHOT`` before it says ``cancelled``), since those clients know only
the ``success`` and ``interrupt`` outcomes.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    CustomEvent,
    Message,
    MessagesSnapshotEvent,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    ToolMessage,
    UserMessage,
)
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError as PydanticValidationError
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from adapters.agui import threads
from adapters.agui.mapping import interrupt_to_agui, names_no_interrupt, normalize_request, resume_payload_to_value
from adapters.agui.messages import MessagesProjection
from adapters.agui.translate import Translator, results_after_calls
from bridge import (
    BridgeError,
    ConflictError,
    Engine,
    KeyRing,
    Principal,
    RunRecord,
    ValidationError,
    WorkflowDefinition,
    kinds,
)
from bridge.host import read_json

log = logging.getLogger("adapters.agui")

Authenticate = Callable[[Request], Principal]


@dataclass
class Plan:
    """What one AG-UI request does before streaming."""

    run_id: str
    cursor: int
    warnings: list[dict[str, Any]] = field(default_factory=list)
    consumed: set[str] = field(default_factory=set)  # user messages taken as conversation turns


def _inputs_from_state(state: Any) -> dict[str, Any]:
    """A new run's inputs from the client's ``state``.

    Clients echo the last ``STATE_SNAPSHOT`` (``{openwop, variables}``) back:
    its ``variables`` carry over and the ``openwop`` block (the old run's id and
    status) is dropped, so state never nests deeper from run to run. Any other
    keys the client set are inputs as they are.
    """
    if not isinstance(state, Mapping):
        return {}
    inputs = dict(state)
    if "openwop" in inputs:
        inputs.pop("openwop")
        variables = inputs.pop("variables", None)
        if isinstance(variables, Mapping):
            inputs = {**variables, **inputs}
    return inputs


def speaks_1_0(declared: str | None) -> bool:
    """Whether a client's ``protocolVersion`` is 1.0 or later.

    No declaration, or a ``0.x`` one, is an older client. A declaration that
    cannot be read is taken as a newer one (the spec: proceed as for a newer version).
    """
    if declared is None:
        return False
    major = declared.split(".", 1)[0]
    return not major.isdigit() or int(major) >= 1


def _user_text(message: UserMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(getattr(part, "text", "") for part in content if getattr(part, "type", "") == "text")


class AguiService:
    """The AG-UI surface over an :class:`~bridge.runtime.engine.Engine` (see the module docstring)."""

    def __init__(self, engine: Engine, *, authenticate: Authenticate | None = None, poll_s: float = 0.25) -> None:
        self.engine = engine
        self._authenticate = authenticate
        self.poll_s = poll_s

    def principal(self, request: Request) -> Principal:
        """The caller: the given authenticator, or the host app's key ring."""
        if self._authenticate is not None:
            return self._authenticate(request)
        ring: KeyRing = request.app.state.keyring
        return ring.authenticate(request.headers.get("authorization"))

    # --- the request --------------------------------------------------------------------

    async def run(self, request: Request, workflow_id: str) -> Response:
        """Handle ``POST /agui/{workflowId}``."""
        principal = self.principal(request)
        workflow = self.engine.workflow(workflow_id)
        body = await read_json(request)
        raw_thread = body.get("threadId", body.get("thread_id")) if isinstance(body, Mapping) else None
        binding = await threads.load(self.engine, principal.tenant, raw_thread) if isinstance(raw_thread, str) else None
        if binding is not None and binding.workflow_id != workflow_id:
            raise ConflictError(
                f"thread {raw_thread!r} belongs to workflow {binding.workflow_id!r}",
                details={"threadId": raw_thread, "workflowId": binding.workflow_id},
            )
        run = await self.engine.run_record(binding.run_id) if binding and binding.run_id else None
        open_views = await self._open_views(run)
        idless = names_no_interrupt(body)
        repeated = idless and binding is not None and body.get("runId", body.get("run_id")) in binding.idless_resumes
        if repeated:
            # The same request again: its answer went to the interrupt open at the time.
            body = {k: v for k, v in body.items() if k not in ("resume", "forwardedProps", "forwarded_props")}
        try:
            agent_input = RunAgentInput.model_validate(normalize_request(body, list(open_views)))
        except PydanticValidationError as exc:
            problems = [f"{'/'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)]
            raise ValidationError("the body is not a valid RunAgentInput", details={"problems": problems}) from exc
        plan = await self._plan(principal, workflow, agent_input, binding, run, open_views)
        if repeated:
            plan.warnings.append(
                {
                    "code": "duplicate_resume",
                    "message": f"run {agent_input.run_id!r} already delivered this resume; it was not applied again",
                }
            )
        elif idless and agent_input.resume and binding is not None:
            binding.idless_resumes.append(agent_input.run_id)
            await threads.save(self.engine, binding)
        return StreamingResponse(
            self._stream(agent_input, plan, current=speaks_1_0(agent_input.protocol_version)),
            media_type=EventEncoder().get_content_type(),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def _open_views(self, run: RunRecord | None) -> dict[str, dict[str, Any]]:
        if run is None or run.terminal:
            return {}
        return {
            r.interrupt_id: self.engine.interrupt_view(r, link=None)
            for r in await self.engine.open_interrupts(run.run_id)
        }

    async def _plan(
        self,
        principal: Principal,
        workflow: WorkflowDefinition,
        agent_input: RunAgentInput,
        binding: threads.ThreadBinding | None,
        run: RunRecord | None,
        open_views: dict[str, dict[str, Any]],
    ) -> Plan:
        entries = list(agent_input.resume or [])
        if run is not None and (not run.terminal or entries):
            principal.require("runs:read")
            assert binding is not None
            return await self._continue(principal, binding, run, entries, agent_input, open_views)
        if run is not None and binding is not None and self._last_new_user_message(agent_input, binding) is None:
            # A finished thread and nothing new: tell the client again how the run ended.
            principal.require("runs:read")
            return Plan(run.run_id, run.next_seq - 1, [], set(binding.consumed_messages))
        # The stream shows the new run's events, state and outputs: what REST shows only to runs:read.
        principal.require("runs:read")
        return await self._start(principal, workflow, agent_input, binding, entries)

    @staticmethod
    def _last_new_user_message(agent_input: RunAgentInput, binding: threads.ThreadBinding) -> UserMessage | None:
        """The request's last message, when it is a user message the thread has not taken yet."""
        last = agent_input.messages[-1] if agent_input.messages else None
        if not isinstance(last, UserMessage) or binding.has_seen(last.id):
            return None
        return last

    async def _start(
        self,
        principal: Principal,
        workflow: WorkflowDefinition,
        agent_input: RunAgentInput,
        binding: threads.ThreadBinding | None,
        entries: list[ResumeEntry],
    ) -> Plan:
        inputs = _inputs_from_state(agent_input.state)
        inputs["messages"] = [m.model_dump(by_alias=True, mode="json") for m in agent_input.messages]
        last = agent_input.messages[-1] if agent_input.messages else None
        run = await self.engine.create_run(
            principal, workflow.id, inputs=inputs, metadata={"agui": {"threadId": agent_input.thread_id}}
        )
        if binding is None:
            binding = threads.ThreadBinding(agent_input.thread_id, principal.tenant, workflow.id, [run.run_id])
            if isinstance(last, UserMessage):
                binding.started_with.append(last.id)
            if not await threads.save(self.engine, binding, create=True):
                # Another request bound this new thread first: keep its run, cancel ours.
                await self.engine.cancel_run(run.run_id, principal, "thread already bound")
                raise ConflictError(f"thread {agent_input.thread_id!r} was started by another request")
        else:
            binding.runs.append(run.run_id)
            if isinstance(last, UserMessage):
                binding.started_with.append(last.id)
            await threads.save(self.engine, binding)
        warnings = [await self._not_open(e, binding) for e in entries]
        return Plan(run.run_id, -1, warnings)

    @staticmethod
    def _unknown(entry: ResumeEntry) -> dict[str, Any]:
        return {
            "code": "unknown_interrupt",
            "message": f"no open interrupt {entry.interrupt_id!r} on this thread; the entry was ignored",
            "interruptId": entry.interrupt_id,
        }

    async def _not_open(self, entry: ResumeEntry, binding: threads.ThreadBinding) -> dict[str, Any]:
        """The warning for an entry naming no open interrupt: settled on this thread, or unknown."""
        record = await self.engine.interrupt_record(entry.interrupt_id)
        if record is None or record.tenant != binding.tenant or not await self._on_thread(record.run_id, binding):
            return self._unknown(entry)
        code = {"expired": "interrupt_expired", "cancelled": "interrupt_gone"}.get(
            record.status, "interrupt_already_resolved"
        )
        return {
            "code": code,
            "message": f"interrupt {entry.interrupt_id!r} is already {record.status}; the entry was ignored",
            "interruptId": entry.interrupt_id,
            "status": record.status,
        }

    async def _on_thread(self, run_id: str, binding: threads.ThreadBinding) -> bool:
        """Whether a run is one of the thread's runs or a child run of one."""
        while run_id not in binding.runs:
            run = await self.engine.run_record(run_id)
            if run is None or run.parent_run_id is None:
                return False
            run_id = run.parent_run_id
        return True

    async def _continue(
        self,
        principal: Principal,
        binding: threads.ThreadBinding,
        run: RunRecord,
        entries: list[ResumeEntry],
        agent_input: RunAgentInput,
        open_views: dict[str, dict[str, Any]],
    ) -> Plan:
        warnings: list[dict[str, Any]] = []
        actions: list[tuple[str, ResumeEntry, Any]] = []
        before = list(binding.consumed_messages)
        for index, entry in enumerate(entries):
            view = open_views.get(entry.interrupt_id)
            if view is None:
                warnings.append(await self._not_open(entry, binding))
                continue
            try:
                if entry.status == "cancelled":
                    await self.engine.preview_cancel(principal, entry.interrupt_id)
                    actions.append(("cancel", entry, None))
                    binding.consumed_messages.extend(self._echoed_tool_results(agent_input, view, binding))
                    continue
                value = resume_payload_to_value(view, entry.payload)
                await self.engine.preview_answer(principal, value, interrupt_id=entry.interrupt_id)
            except BridgeError as exc:
                exc.message = f"resume[{index}] ({entry.interrupt_id}): {exc.message}"
                exc.details = {**(exc.details or {}), "entry": index, "interruptId": entry.interrupt_id}
                raise
            actions.append(("resolve", entry, value))
            binding.consumed_messages.extend(self._echoed_tool_results(agent_input, view, binding))
            if kinds.kind_of(view["kind"]).turn:
                echoed = self._echoed_user_message(agent_input, value, binding)
                if echoed is not None:
                    # The client showed the answer as a user message too: the turn replaces it.
                    binding.consumed_messages.append(echoed)
        if not entries:
            turn = self._new_turn(agent_input, binding, open_views)
            if turn is not None:
                interrupt_id, message = turn
                principal.require("approvals:respond")
                actions.append(
                    ("resolve", ResumeEntry(interrupt_id=interrupt_id, status="resolved"), _user_text(message))
                )
                binding.consumed_messages.append(message.id)
        if binding.consumed_messages != before:
            await threads.save(self.engine, binding)
        fresh = await self.engine.run_record(run.run_id)
        cursor = (fresh or run).next_seq - 1
        consumed = set(binding.consumed_messages)
        for action, entry, value in actions:
            try:
                if action == "cancel":
                    await self.engine.cancel_interrupt(principal, entry.interrupt_id, "cancelled")
                else:
                    await self.engine.resolve(principal, value, interrupt_id=entry.interrupt_id)
            except BridgeError as exc:
                # Checked above; only a concurrent change gets here (someone else answered first).
                warnings.append({"code": exc.code, "message": exc.message, "interruptId": entry.interrupt_id})
        return Plan(run.run_id, cursor, warnings, consumed)

    @staticmethod
    def _echoed_tool_results(
        agent_input: RunAgentInput, view: Mapping[str, Any], binding: threads.ThreadBinding
    ) -> list[str]:
        """Ids of the request's ``tool`` messages for the call a tool-call interrupt guards.

        Clients such as CopilotKit add the answer to the thread as a result of the
        call; the call's real result comes from the run, so such a message is an
        echo of the answer, not a result.
        """
        call_id = interrupt_to_agui(view).tool_call_id
        if call_id is None:
            return []
        return [
            m.id
            for m in agent_input.messages
            if isinstance(m, ToolMessage) and m.tool_call_id == call_id and m.id not in binding.consumed_messages
        ]

    @staticmethod
    def _echoed_user_message(agent_input: RunAgentInput, value: Any, binding: threads.ThreadBinding) -> str | None:
        """The id of the last user message when it carries the same text as a turn's answer."""
        if not agent_input.messages or not isinstance(agent_input.messages[-1], UserMessage):
            return None
        last = agent_input.messages[-1]
        text: Any = value
        if isinstance(value, Mapping):
            turn = value.get("turn")
            text = turn.get("content") if isinstance(turn, Mapping) else value.get("content")
        if last.id in binding.consumed_messages or not isinstance(text, str) or _user_text(last) != text:
            return None
        return last.id

    @staticmethod
    def _new_turn(
        agent_input: RunAgentInput, binding: threads.ThreadBinding, open_views: dict[str, dict[str, Any]]
    ) -> tuple[str, UserMessage] | None:
        """A user message not yet seen, when the thread waits on a conversation turn."""
        exchange = next((i for i, v in open_views.items() if kinds.kind_of(v["kind"]).turn), None)
        if exchange is None or not agent_input.messages:
            return None
        last = agent_input.messages[-1]
        if not isinstance(last, UserMessage) or last.id in binding.consumed_messages:
            return None
        return exchange, last

    # --- the stream ---------------------------------------------------------------------

    async def _stream(self, agent_input: RunAgentInput, plan: Plan, *, current: bool) -> AsyncIterator[str]:
        encoder = EventEncoder()
        translator = Translator()
        thread_id, agui_run = agent_input.thread_id, agent_input.run_id
        version = PROTOCOL_VERSION if current else None
        yield encoder.encode(RunStartedEvent(thread_id=thread_id, run_id=agui_run, protocol_version=version))
        for warning in plan.warnings:
            yield encoder.encode(CustomEvent(name="openwop.warning", value=warning))
        try:
            projection = await MessagesProjection.load(self.engine, plan.run_id)
            async with aclosing(self._follow(plan, translator, encoder, projection)) as frames:
                async for chunk in frames:
                    yield chunk
            run = await self.engine.run_record(plan.run_id)
            assert run is not None
            ending = [encoder.encode(event) for event in translator.close()]
            ending += [
                chunk async for chunk in self._finish(agent_input, run, plan.consumed, projection, encoder, current)
            ]
            yield "".join(ending)
        except Exception as exc:
            log.exception("AG-UI run %s of thread %s failed", agui_run, thread_id)
            for event in translator.close():
                yield encoder.encode(event)
            code = exc.code if isinstance(exc, BridgeError) else "internal_error"
            yield encoder.encode(RunErrorEvent(message="the run failed on the server; see its log", code=code))

    async def _follow(
        self, plan: Plan, translator: Translator, encoder: EventEncoder, projection: MessagesProjection
    ) -> AsyncGenerator[str]:
        """The run's events from the plan's cursor as AG-UI frames, until the run ends or waits.

        The run is followed the engine's one way (:meth:`bridge.Engine.follow`); the
        events of one batch go out as one write. The stream stops once every
        committed event is out and the run is terminal or idle with open interrupts.
        """
        cursor = plan.cursor
        async with aclosing(self.engine.follow(plan.run_id, plan.cursor, idle_s=self.poll_s)) as batches:
            async for docs in batches:
                frames: list[str] = []
                for doc in docs:
                    cursor = doc["sequence"]
                    projection.feed(doc)
                    frames.extend(encoder.encode(event) for event in translator.feed(doc))
                if frames:
                    yield "".join(frames)
                run = await self.engine.run_record(plan.run_id)
                if run is None or run.next_seq - 1 > cursor:
                    continue
                if run.terminal or (not run.needs_work and await self.engine.open_interrupts(plan.run_id)):
                    return

    async def _finish(
        self,
        agent_input: RunAgentInput,
        run: RunRecord,
        consumed: set[str],
        projection: MessagesProjection,
        encoder: EventEncoder,
        current: bool,
    ) -> AsyncIterator[str]:
        thread_id, agui_run = agent_input.thread_id, agent_input.run_id
        if run.status == "failed":
            error = run.state.get("error") or {"code": "run_failed", "message": "the run failed"}
            yield encoder.encode(RunErrorEvent(message=str(error.get("message")), code=str(error.get("code"))))
            return
        state = {
            "openwop": {"runId": run.run_id, "workflowId": run.workflow_id, "status": run.status},
            "variables": {k: v for k, v in run.state.get("variables", {}).items() if k != "messages"},
        }
        yield encoder.encode(StateSnapshotEvent(snapshot=state))
        yield encoder.encode(MessagesSnapshotEvent(messages=await self._messages(agent_input, projection, consumed)))
        if run.status == "completed":
            outcome: Any = RunFinishedSuccessOutcome()
            finished = RunFinishedEvent(
                thread_id=thread_id, run_id=agui_run, outcome=outcome, result=run.state.get("outputs", {})
            )
        elif run.status == "cancelled":
            # Clients before 1.0 know no cancelled outcome; the state snapshot above tells them.
            cancelled = RunFinishedCancelledOutcome() if current else None
            finished = RunFinishedEvent(thread_id=thread_id, run_id=agui_run, outcome=cancelled)
        else:
            views = [self.engine.interrupt_view(r, link=None) for r in await self.engine.open_interrupts(run.run_id)]
            outcome = RunFinishedInterruptOutcome(interrupts=[interrupt_to_agui(v) for v in views])
            finished = RunFinishedEvent(thread_id=thread_id, run_id=agui_run, outcome=outcome)
        yield encoder.encode(finished)

    async def _messages(
        self, agent_input: RunAgentInput, projection: MessagesProjection, consumed: set[str]
    ) -> list[Message]:
        """The thread's messages: the client's earlier ones, then this run's, each id once.

        Messages the thread took as echoes (a turn's answer shown as a user
        message, a tool call's answer shown as its result) are left out, and each
        tool call has one result, after the call.
        """
        await projection.catch_up(self.engine)
        await projection.save(self.engine)
        derived = projection.messages
        derived_ids = {m.id for m in derived}
        earlier = [m for m in agent_input.messages if m.id not in derived_ids and m.id not in consumed]
        return results_after_calls([*earlier, *derived])
