"""Running a compiled LangGraph graph as one OpenWOP node.

Every (re-)execution of the node reads the graph's checkpoint: pending LangGraph
interrupts are registered as OpenWOP interrupts (idempotently, keyed by run,
node and LangGraph interrupt id, each at its own address ``<node>:<task>.<id>``),
answered ones are handed back with ``Command(resume={interrupt_id: value, …})``
under strict resume, and the node suspends on the rest. Resolving one of several
pending interrupts resumes exactly that one. Assistant messages and tool calls
the graph produces are emitted as ``output.chunk`` / ``agent.toolCalled`` /
``agent.toolReturned`` events (once each), so AG-UI frontends see them stream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from langgraph.errors import UnknownInterruptError
from langgraph.types import Command
from openwop_bridge import InterruptHandle, InterruptTimeoutError, NodeContext, NodeError, kinds
from openwop_bridge.langgraph import payloads
from openwop_bridge.langgraph.checkpoints import Checkpoints
from openwop_bridge.langgraph.helpers import CLOSED
from openwop_bridge.langgraph.messages import chat_input, message_text, to_json

STRICT_RESUME = "__pregel_strict_resume"

InputMapper = Callable[[NodeContext], Mapping[str, Any]]


def default_input(ctx: NodeContext) -> dict[str, Any]:
    """The graph's first input: the run's variables, with chat messages in LangChain form."""
    values = dict(ctx.variables)
    if isinstance(values.get("messages"), list):
        values["messages"] = chat_input(values["messages"])
    return values


def thread_config(ctx: NodeContext) -> dict[str, Any]:
    """The LangGraph config of this node activation: its own thread, strict resume, the run's configurable."""
    configurable = {k: v for k, v in ctx.configurable.items() if isinstance(k, str)}
    configurable.update({"thread_id": f"openwop:{ctx.run_id}:{ctx.node_id}:{ctx.visit}", STRICT_RESUME: True})
    # The threshold in force (the run's, else the host's), so escalate_if_low_confidence agrees with the engine.
    configurable["escalationThreshold"] = ctx.escalation_threshold()
    return {"configurable": configurable}


@dataclass
class GraphNode:
    """The node type that runs one compiled graph."""

    graph: Any
    checkpoints: Checkpoints
    input_mapper: InputMapper = default_input

    async def __call__(self, ctx: NodeContext) -> dict[str, Any]:
        graph = await self.checkpoints.bind(self.graph)
        config = thread_config(ctx)
        state = await graph.aget_state(config)
        step: Any = None if state.created_at else dict(self.input_mapper(ctx))
        state = await self.drive(ctx, graph, config, step)
        return {"state": to_json(state.values)}

    async def drive(
        self, ctx: NodeContext, graph: Any, config: dict[str, Any], step: Any, *, report: bool = True
    ) -> Any:
        """Run ``step`` (None: nothing new) and every resume after it until the graph has no
        pending interrupt; returns its state. Suspends the node on interrupts not yet answered."""
        state: Any = None if step is not None else await graph.aget_state(config)
        while True:
            if step is not None:
                if isinstance(step, Command):
                    # The answers are marked taken before the graph gets them: after a crash
                    # once the graph has checkpointed them, a recorded answer that is no longer
                    # pending is known to be delivered, not stale.
                    await ctx.checkpoint()
                try:
                    await graph.ainvoke(step, config, durability="sync")
                except UnknownInterruptError as exc:
                    raise NodeError(
                        f"LangGraph refused the answer: {exc}",
                        code="langgraph_unknown_interrupt",
                        details={"reason": exc.reason, "pendingIds": list(exc.pending_ids)},
                    ) from exc
                state = await graph.aget_state(config)
            if report:
                self._report(ctx, state.values)
            pending = [(task.name, itr) for task in state.tasks for itr in task.interrupts]
            stale = self._stale(ctx, {itr.id for _, itr in pending})
            if stale:
                # Answers recorded here whose LangGraph interrupts are gone (the graph moved on
                # without them): strict resume turns them into an error instead of losing them.
                step = Command(resume=stale)
                continue
            if not pending:
                return state
            resumes: dict[str, Any] = {}
            handles: list[InterruptHandle] = []
            for task_name, itr in pending:
                answer = await self._register(ctx, task_name, itr)
                if isinstance(answer, InterruptHandle):
                    handles.append(answer)
                else:
                    resumes[itr.id] = answer[0]
            if not resumes:
                ctx.wait_any(handles)  # nothing answered yet: suspend on all of them
            step = Command(resume=resumes)

    @staticmethod
    def _stale(ctx: NodeContext, pending_ids: set[str]) -> dict[str, Any]:
        prefix = f"{ctx.run_id}:{ctx.node_id}:lg:"
        return {
            r.key[len(prefix) :]: (r.resolution or {}).get("resumeValue")
            for r in ctx.known_interrupts()
            if r.key.startswith(prefix)
            and r.status == "resolved"
            and not r.consumed  # taken by this node (now or earlier) counts as delivered
            and r.key[len(prefix) :] not in pending_ids
            and kinds.kind_of(r.kind).answerable
        }

    async def _register(self, ctx: NodeContext, task_name: str, itr: Any) -> InterruptHandle | tuple[Any]:
        """Register one LangGraph interrupt; an answer (as a 1-tuple) when it is already settled."""
        mapped = payloads.map_interrupt(itr.value, itr.response_schema)
        key = f"{ctx.run_id}:{ctx.node_id}:lg:{itr.id}"
        where = payloads.address(task_name, itr.id)
        kind = mapped.payload["kind"]
        if kind.startswith("conversation."):
            return await self._conversation(ctx, mapped, itr.value[payloads.MARKER], key, where)
        extra: dict[str, Any] | None = None
        if mapped.family == "per_call" and mapped.tool_call is not None:
            call = mapped.tool_call
            ctx.emit_once(
                "agent.toolCalled",
                {
                    "agentId": ctx.agent_id,
                    "toolName": call["name"],
                    "callId": call["toolCallId"],
                    "inputs": call["args"],
                },
                f"call:{call['toolCallId']}",
            )
        if kind == kinds.LOW_CONFIDENCE.name:
            data = mapped.payload["data"]
            ctx.emit_once(
                "agent.decided",
                {"agentId": data["agentId"], "decision": data.get("decision"), "confidence": data["observed"]},
                f"decided:{itr.id}",
            )
            extra = {"agentId": data["agentId"], "threshold": data["threshold"], "observed": data["observed"]}
        handle = await ctx.request({**mapped.payload, "key": key}, address=where, extra=extra)
        if handle.settled:
            return (self._value(ctx, mapped, handle),)
        return handle

    @staticmethod
    def _value(ctx: NodeContext, mapped: payloads.Mapped, handle: InterruptHandle) -> Any:
        """The graph's resume value for a settled OpenWOP interrupt (approvals fail closed on timeout)."""
        record = handle.record
        if kinds.kind_of(mapped.payload["kind"]).fails_closed and record.status == "expired":
            answer: Any = (record.resolution or {}).get("resumeValue") or {"action": "reject", "reason": "timeout"}
            if mapped.family in ("per_call", "batched"):
                answer = {"action": "reject", "feedback": "the approval timed out"}
            return payloads.resume_for_graph(mapped, answer)
        if record.status == "expired":
            raise InterruptTimeoutError(f"interrupt {record.key!r} timed out")
        return payloads.resume_for_graph(mapped, handle.result())

    async def _conversation(
        self, ctx: NodeContext, mapped: payloads.Mapped, spec: Mapping[str, Any], key: str, where: str
    ) -> InterruptHandle | tuple[Any]:
        """A helper conversation turn (or close) folded into one OpenWOP conversation."""
        conversation = spec.get("conversation") or {}
        data = mapped.payload["data"]
        graph_id = str(conversation.get("id") or data.get("conversationId") or "main")
        conv = await ctx.conversation(
            title=conversation.get("title"),
            initial_prompt=conversation.get("initialPrompt"),
            key=f"{ctx.run_id}:{ctx.node_id}:conv:{graph_id}",
            conversation_id=f"conv:{ctx.run_id}:{ctx.node_id}:{graph_id}",
        )
        if mapped.payload["kind"] == kinds.CONVERSATION_CLOSE.name:
            conv.turn_index = int(conversation.get("turn") or 0)
            await conv.close(
                conversation.get("outcome"), reason=data.get("reason"), message=conversation.get("message"), key=key
            )
            return ({"closed": True},)
        conv.turn_index = int(data.get("turnIndex") or 1) - 1
        handle = await conv.request_exchange(
            str(data["prompt"]), outcome_schema=data.get("outcomeSchema"), key=key, address=where
        )
        if not handle.settled:
            return handle
        if conv.closed and conv.closed_by == "peer":
            return ({CLOSED: True, "outcome": conv.outcome},)
        return (handle.result(),)

    @staticmethod
    def _report(ctx: NodeContext, values: Any) -> None:
        """Emit the graph's assistant text and tool calls, once each."""
        messages = values.get("messages") if isinstance(values, Mapping) else None
        for message in messages or []:
            if isinstance(message, AIMessage):
                for call in message.tool_calls:
                    if call.get("id"):
                        ctx.emit_once(
                            "agent.toolCalled",
                            {
                                "agentId": ctx.agent_id,
                                "toolName": call["name"],
                                "callId": call["id"],
                                "inputs": to_json(call["args"]),
                            },
                            f"call:{call['id']}",
                        )
                text = message_text(message)
                if text and message.id:
                    ctx.emit_once(
                        "output.chunk",
                        {
                            "nodeId": ctx.node_id,
                            "runId": ctx.run_id,
                            "chunk": text,
                            "isLast": True,
                            "channel": f"lg:{message.id}",
                        },
                        f"msg:{message.id}",
                    )
            elif isinstance(message, ToolMessage) and message.tool_call_id:
                ctx.emit_once(
                    "agent.toolReturned",
                    {
                        "agentId": ctx.agent_id,
                        "toolName": message.name or "tool",
                        "callId": message.tool_call_id,
                        "outcome": to_json(message.content),
                        "status": "ok" if message.status == "success" else "error",
                    },
                    f"ret:{message.tool_call_id}",
                )
