"""Planning one AG-UI request: what it does before its stream opens.

Every plan streams a run's events and state, so each needs ``runs:read``, as
REST does to show them. A plan starts the thread's first (or next) run; answers
or cancels the interrupts named in ``resume`` (every entry is checked before any
is applied, and one bad entry refuses the request); takes a new user message as
the answer to an open conversation turn; or, with nothing to do, re-emits the
open interrupts. On a finished thread only a user message the thread has not
seen starts the next run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import ResumeEntry, RunAgentInput, ToolMessage, UserMessage

from openwop_bridge import BridgeError, ConflictError, Engine, Principal, RunRecord, WorkflowDefinition, kinds
from openwop_bridge.agui import threads
from openwop_bridge.agui.mapping import interrupt_to_agui, resume_payload_to_value


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


def _user_text(message: UserMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(getattr(part, "text", "") for part in content if getattr(part, "type", "") == "text")


class Planner:
    """Plans the AG-UI requests of one engine's threads (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def plan(
        self,
        principal: Principal,
        workflow: WorkflowDefinition,
        agent_input: RunAgentInput,
        binding: threads.ThreadBinding | None,
        run: RunRecord | None,
        open_views: dict[str, dict[str, Any]],
    ) -> Plan:
        """What the request does: continue the thread's run, re-emit how it ended, or start the next one."""
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
        new_thread = binding is None
        if binding is None:
            binding = threads.ThreadBinding(agent_input.thread_id, principal.tenant, workflow.id)
        if isinstance(last, UserMessage):
            binding.started_with.append(last.id)
        # The run and the binding that names it are one transaction.
        run = await threads.bindings(self.engine).start_run(
            principal,
            workflow.id,
            binding,
            create=new_thread,
            inputs=inputs,
            metadata={"agui": {"threadId": agent_input.thread_id}},
        )
        if run is None:
            # Another request bound this new thread first: it keeps the thread, and no run was created here.
            raise ConflictError(f"thread {agent_input.thread_id!r} was started by another request")
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
