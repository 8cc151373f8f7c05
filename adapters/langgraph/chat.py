"""A conversation between a person and a LangGraph chat agent, as one OpenWOP node.

Each human turn becomes a ``HumanMessage`` (with the turn's messageId as its id)
on the agent's own LangGraph thread; the agent's reply becomes the next agent
turn (the next exchange's prompt). The conversation closes when the person sends
``close``, when the agent ends its reply with the close marker or calls an
``end_conversation`` tool, or after ``max_turns``. Re-running the node never
re-invokes the agent for a turn already on its thread. When the agent pauses
itself (a ``HumanInTheLoopMiddleware`` tool review, an ``interrupt()``), that
becomes an OpenWOP interrupt of this node like in any served graph, answered
before the agent's reply becomes the next turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from openwop_bridge import NodeContext
from openwop_bridge.langgraph.checkpoints import Checkpoints
from openwop_bridge.langgraph.messages import message_text, to_json
from openwop_bridge.langgraph.runner import GraphNode, thread_config

END_TOOL = "end_conversation"


@dataclass
class ChatNode:
    """The node type holding a conversation with one chat agent graph."""

    agent: Any
    checkpoints: Checkpoints
    greeting: str = "Hello! How can I help?"
    title: str | None = None
    close_marker: str = "[done]"
    max_turns: int | None = None

    @property
    def _runner(self) -> GraphNode:
        return GraphNode(self.agent, self.checkpoints)

    def _closes(self, reply: AIMessage) -> tuple[bool, Any, str]:
        text = message_text(reply)
        for call in reply.tool_calls:
            if call["name"] == END_TOOL:
                return True, to_json(call["args"].get("outcome", call["args"])), text or "Goodbye."
        stripped = text.rstrip()
        if self.close_marker and stripped.endswith(self.close_marker):
            return True, None, stripped[: -len(self.close_marker)].rstrip() or "Goodbye."
        return False, None, text

    async def __call__(self, ctx: NodeContext) -> dict[str, Any]:
        graph = await self.checkpoints.bind(self.agent)
        config = thread_config(ctx)
        conv = await ctx.conversation(title=self.title or ctx.node.name)
        prompt, turns, outcome = self.greeting, 0, None
        # Named keys: the agent's own interrupts come between turns only while pending, so
        # the turns cannot be told apart by their position when the node runs again.
        keys = f"{ctx.run_id}:{ctx.node_id}:{ctx.visit}:chat"
        while True:
            if self.max_turns is not None and turns >= self.max_turns:
                await conv.close(
                    {"turns": turns},
                    reason="max-turns",
                    message="We have reached the end of this conversation.",
                    key=f"{keys}:close",
                )
                break
            answer = await conv.exchange(prompt, key=f"{keys}:turn:{turns}")
            if conv.closed:
                outcome = conv.outcome
                break
            turns += 1
            human_id = f"{conv.id}:{turns}:user"
            state = await graph.aget_state(config)
            messages = list(state.values.get("messages", [])) if state.created_at else []
            step: Any = None
            if not any(m.id == human_id for m in messages):
                text = answer if isinstance(answer, str) else str(answer)
                step = {"messages": [HumanMessage(content=text, id=human_id)]}
            # The agent's own interrupts (a gated tool call, a question) become OpenWOP
            # interrupts of this node, answered before its reply becomes the next turn.
            state = await self._runner.drive(ctx, graph, config, step, report=False)
            messages = list(state.values["messages"])
            after = messages[[m.id for m in messages].index(human_id) + 1 :]
            reply = next((m for m in reversed(after) if isinstance(m, AIMessage)), None)
            if reply is None:
                prompt = "(no reply)"
                continue
            done, agent_outcome, text = self._closes(reply)
            if done:
                outcome = agent_outcome if agent_outcome is not None else {"turns": turns}
                await conv.close(outcome, reason="agent-closed", message=text, key=f"{keys}:close")
                break
            prompt = text or "(no reply)"
        return {"conversationId": conv.id, "outcome": outcome, "turns": turns, "closedBy": conv.closed_by}
