"""The SDK's :class:`RequestHandler` over the engine: SendMessage, GetTask, CancelTask, SubscribeToTask.

- A message without ``taskId`` starts a run of the skill it names (``Message.metadata.openwop.skillId``);
  the task id is the run id.
- A message with ``taskId`` answers the task's open interrupt through :meth:`Engine.resolve`, so the
  answer meets the same validation, roles, quorum and one-winner rules as over REST.
- ``messageId`` is an idempotency key scoped to the caller: a repeat answers with the same task.
- Sending blocks until the task needs input or ends (or :data:`WAIT_S` passes); streaming sends the
  task, then its status and artifact updates, and ends after input-required or a terminal state.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
import uuid
from collections.abc import AsyncGenerator
from typing import Any, NoReturn

import orjson

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import (
    AgentCard,
    Artifact,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    UnsupportedOperationError,
)
from openwop_bridge import Engine, InterruptAlreadyResolvedError, Principal, RunRecord, kinds
from openwop_bridge.a2a.errors import as_a2a_errors
from openwop_bridge.a2a.messages import answer_for, inputs_for, named_interrupt, workflow_for
from openwop_bridge.a2a.tasks import TERMINAL, context_id, interrupt_metadata, outputs_artifact, task_of

#: How long SendMessage waits for the task to need input or end before answering it as it is.
WAIT_S = 30.0
#: After how long without an event a waiting request reads its task again (a run waiting on a child changes its
#: status when the child's does, with no event of its own).
QUIET_S = 0.5
#: How long the first request holds a messageId before a retry may take it over.
IN_FLIGHT_LEASE_MS = 60_000
#: How many parents up an interrupt's run is looked for as the task's own (a child of a child …).
MAX_DEPTH = 32


class EngineRequestHandler(RequestHandler):
    """A2A operations on the engine's runs, under the caller's key (see the module docstring)."""

    def __init__(self, engine: Engine, *, wait_s: float = WAIT_S) -> None:
        self.engine = engine
        self.wait_s = wait_s

    # --- reading ----------------------------------------------------------------------

    @staticmethod
    def principal(context: ServerCallContext) -> Principal:
        """The caller, authenticated before the request was parsed."""
        found: Principal = context.state["principal"]
        return found

    async def visible(self, run_id: str, principal: Principal) -> RunRecord:
        """A run the caller may read, else ``TaskNotFoundError`` (the same for every unreadable task)."""
        with as_a2a_errors():
            principal.require("runs:read")
            return await self.engine.visible_run(run_id, principal)

    async def snapshot(self, run: RunRecord) -> dict[str, Any]:
        """The run's snapshot without links (a task carries no signed links).

        A run waiting on a child that waits for a person reports the child's waiting status and asks
        nothing itself: its task shows (and its messages answer) the open interrupts of its children.
        """
        snap = await self.engine.snapshot_of(run, link=None)
        if str(snap["status"]).startswith("waiting-") and not snap.get("interrupts"):
            waiting = await self.engine.open_interrupts(run.run_id)
            snap["interrupts"] = [self.engine.interrupt_view(r, link=None) for r in waiting]
        return snap

    async def task(self, run_id: str) -> tuple[Task, dict[str, Any]]:
        """The current task of a run and its snapshot."""
        run = await self.engine.run_record(run_id)
        assert run is not None
        snap = await self.snapshot(run)
        return task_of(snap, run.spec), snap

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        """``GetTask``: the run projected as a task."""
        run = await self.visible(params.id, self.principal(context))
        return task_of(await self.snapshot(run), run.spec)

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """``ListTasks`` is not offered."""
        raise UnsupportedOperationError("ListTasks is not offered; list runs with GET /v1/runs")

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        """``CancelTask``: cancel the run (an open approval fails closed); a finished task is ``-32002``."""
        principal = self.principal(context)
        run = await self.visible(params.id, principal)
        if run.terminal:
            raise TaskNotCancelableError(f"the task is already {run.status}")
        with as_a2a_errors():
            await self.engine.cancel_run(run.run_id, principal, "a2a-cancel")
        task, _ = await self.task(run.run_id)
        return task

    # --- sending ----------------------------------------------------------------------

    async def accept(self, message: Message, principal: Principal) -> tuple[str, str | None]:
        """Start or answer, at most once per ``messageId``: the run id and the interrupt answered, if any."""
        ledger = self.engine.idempotency
        scope = orjson.dumps([principal.tenant, principal.id, "a2a SendMessage", message.message_id])
        key_id = hashlib.sha256(scope).hexdigest()
        digest = hashlib.sha256(message.SerializeToString(deterministic=True)).hexdigest()
        owner = secrets.token_hex(8)
        for _ in range(100):
            found = await ledger.begin(key_id, digest, owner, lease_ms=IN_FLIGHT_LEASE_MS)
            if found is None:
                break
            if found.digest != digest:
                raise InvalidParamsError("this messageId was already used for another message")
            if not found.pending and found.body:
                return found.body, None
            await asyncio.sleep(0.05)
        else:
            raise InvalidParamsError("the first message with this messageId is still being handled; retry shortly")
        try:
            run_id, answered = await (
                self.answer(message, principal) if message.task_id else self.start(message, principal)
            )
        except BaseException:
            await ledger.release(key_id, owner)
            raise
        await ledger.finish(key_id, owner, 200, {}, run_id)
        return run_id, answered

    async def start(self, message: Message, principal: Principal) -> tuple[str, None]:
        """A new run of the skill the message names."""
        workflow = workflow_for(self.engine, message)
        inputs = inputs_for(workflow, message)
        ctx = message.context_id or uuid.uuid4().hex
        with as_a2a_errors():
            run = await self.engine.create_run(principal, workflow.id, inputs=inputs, extra={"a2a": {"contextId": ctx}})
        return run.run_id, None

    async def answer(self, message: Message, principal: Principal) -> tuple[str, str | None]:
        """The message answers the task's open interrupt: the one it names, else the first open.

        A named interrupt that is not open on this task is refused and changes nothing: one this task
        already settled is ``-32004`` (``interrupt_already_resolved``), any other id is ``-32602``.
        """
        run = await self.visible(message.task_id, principal)
        if message.context_id and message.context_id != context_id(run.spec, run.run_id):
            raise InvalidParamsError("the message's contextId is not its task's")
        if run.terminal:
            raise UnsupportedOperationError(f"the task is {run.status}: it takes no more messages")
        snap = await self.snapshot(run)
        views: list[dict[str, Any]] = snap.get("interrupts") or []
        named = named_interrupt(message)
        if named is None:
            view = views[0] if views else None
        else:
            view = next((v for v in views if v["interruptId"] == named), None)
            if view is None:
                await self.refuse_named(run, named)
        if view is None:
            raise UnsupportedOperationError("the task is not waiting for input")
        interrupt = interrupt_metadata({"interrupts": [view]})
        assert interrupt is not None
        value = answer_for(interrupt, message)
        with as_a2a_errors():
            if kinds.kind_of(view["kind"]).turn:
                result = await self.engine.resolve(principal, value, run_id=view["runId"], node_id=view["nodeId"])
            else:
                # By id: an answer racing this one cannot make it land on the next interrupt at the node.
                result = await self.engine.resolve(
                    principal, value, run_id=view["runId"], interrupt_id=view["interruptId"]
                )
        return run.run_id, interrupt["interruptId"] if result.get("status") == "resolved" else None

    async def refuse_named(self, run: RunRecord, named: str) -> NoReturn:
        """Refuse an answer naming ``named``, which is not open on ``run``'s task (see :meth:`answer`)."""
        record = await self.engine.interrupt_record(named)
        if record is not None and await self.in_task(record.run_id, run.run_id):
            with as_a2a_errors():
                raise InterruptAlreadyResolvedError(
                    f"interrupt {named!r} is already {record.status}; answer the one the task shows",
                    details={"interruptId": named},
                )
        raise InvalidParamsError(f"no interrupt {named!r} on this task")

    async def in_task(self, run_id: str, task_run_id: str) -> bool:
        """Whether ``run_id`` is the task's run or one of its descendants (children of children, …)."""
        for _ in range(MAX_DEPTH):
            if run_id == task_run_id:
                return True
            found = await self.engine.run_record(run_id)
            if found is None or found.parent_run_id is None:
                return False
            run_id = found.parent_run_id
        return False

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        """``SendMessage``: start or answer, then wait until the task needs input or ends."""
        if params.HasField("configuration") and params.configuration.return_immediately:
            run_id, _ = await self.accept(params.message, self.principal(context))
            task, _ = await self.task(run_id)
            return task
        run_id, answered = await self.accept(params.message, self.principal(context))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.wait_s):
                async for _event in self.updates(run_id, answered):
                    pass
        task, _ = await self.task(run_id)
        return task

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """``SendStreamingMessage``: the task, then its updates until it needs input or ends."""
        run_id, answered = await self.accept(params.message, self.principal(context))
        async for event in self.updates(run_id, answered):
            yield event

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """``SubscribeToTask``: the current task, then its updates; a finished task is ``-32004``."""
        run = await self.visible(params.id, self.principal(context))
        if run.terminal:
            raise UnsupportedOperationError(f"the task is {run.status}: there is nothing to follow")
        async for event in self.updates(run.run_id, None, stop_on_input=False):
            yield event

    async def updates(self, run_id: str, answered: str | None, *, stop_on_input: bool = True) -> AsyncGenerator[Event]:
        """The task, then a status update per change (and the outputs artifact), until input-required or the end.

        ``answered``: an interrupt just answered, still shown until the run moves on; it does not stop the stream.
        ``stop_on_input`` false (a subscriber) stops at input-required only once the first task was sent.
        """
        # Followed from where the run stood before its first task was read: what changes after shows,
        # and the backlog already in that task is not read (nor a snapshot taken for each page of it).
        before = await self.engine.run_record(run_id)
        after = before.next_seq - 1 if before is not None else -1
        status = before.status if before is not None else None
        # Only the task is kept while the stream waits: a run's snapshot can be large.
        task = (await self.task(run_id))[0]
        yield task
        seen = self._mark(task)
        if self._done(task, answered, first=True, stop_on_input=stop_on_input):
            return
        async for batch in self.engine.follow(run_id, after, idle_s=QUIET_S):
            if not batch:
                # Quiet: only the run's row is read, and the task only if its status moved (a child's did).
                run = await self.engine.run_record(run_id)
                if run is None or run.status == status:
                    continue
                status = run.status
            current, artifact = await self._update(run_id)
            mark = self._mark(current)
            if mark == seen:
                continue
            seen = mark
            if artifact is not None:
                yield TaskArtifactUpdateEvent(
                    task_id=run_id, context_id=current.context_id, artifact=artifact, last_chunk=True
                )
            yield TaskStatusUpdateEvent(
                task_id=run_id, context_id=current.context_id, status=current.status, metadata=current.metadata
            )
            if self._done(current, answered, first=False, stop_on_input=True):
                return

    async def _update(self, run_id: str) -> tuple[Task, Artifact | None]:
        """The current task, and the outputs artifact once it completed (the snapshot is not kept)."""
        current, snap = await self.task(run_id)
        completed = current.status.state == TaskState.TASK_STATE_COMPLETED
        return current, outputs_artifact(snap) if completed else None

    @staticmethod
    def _mark(task: Task) -> tuple[int, str]:
        meta = task.metadata.fields.get("openwop")
        interrupt = meta.struct_value.fields.get("interrupt") if meta is not None else None
        interrupt_id = interrupt.struct_value.fields["interruptId"].string_value if interrupt is not None else ""
        return task.status.state, interrupt_id

    def _done(self, task: Task, answered: str | None, *, first: bool, stop_on_input: bool) -> bool:
        state, interrupt_id = self._mark(task)
        if state in TERMINAL:
            return True
        if state != TaskState.TASK_STATE_INPUT_REQUIRED:
            return False
        if answered is not None and interrupt_id == answered:
            return False
        return stop_on_input or not first

    # --- not offered ------------------------------------------------------------------

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Push notifications are not offered."""
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Push notifications are not offered."""
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        """Push notifications are not offered."""
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        """Push notifications are not offered."""
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        """There is no extended card: the public one lists everything."""
        raise ExtendedAgentCardNotConfiguredError
