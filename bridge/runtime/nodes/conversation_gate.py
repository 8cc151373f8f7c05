"""``core.conversationGate``: a conversation with a person inside one node.

With ``mockAutoResume`` (the conformance fixtures) the host answers each turn
itself. Without it the node opens with ``config.initialPrompt``, asks
``config.prompts[i]`` at turn *i* (then ``config.prompt``), says
``config.closingMessage`` at the end (validated against ``config.outcomeSchema`` when
set), and closes when the person sends ``close`` or after ``config.turnCount``
exchanges. The conversation's outcome is the node's output.

Run again after an answer, the node goes on from its last exchange
(:meth:`~openwop_bridge.runtime.conversation.Conversation.resume_at_last_turn`) instead
of asking every earlier one again, so turn 100 costs what turn 1 costs.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core import kinds
from openwop_bridge.core.errors import ValidationError
from openwop_bridge.core.workflow import NodeSpec, thaw
from openwop_bridge.runtime.context import NodeContext


def check_conversation_gate(node: NodeSpec) -> list[str]:
    """Config sanity: positive ``turnCount``, a valid ``outcomeSchema``."""
    config = thaw(node.config)
    problems = []
    turns = config.get("turnCount")
    if turns is not None and (not isinstance(turns, int) or isinstance(turns, bool) or turns < 1):
        problems.append("turnCount must be a positive integer")
    prompts = config.get("prompts")
    if prompts is not None and not (isinstance(prompts, list) and all(isinstance(p, str) and p for p in prompts)):
        problems.append("prompts must be a list of non-empty strings")
    if config.get("outcomeSchema") is not None:
        try:
            kinds.compile_schema(config["outcomeSchema"], "outcomeSchema")
        except ValidationError as exc:
            problems.append(exc.message)
    return problems


async def conversation_gate(ctx: NodeContext) -> dict[str, Any]:
    """Holds a conversation (see the module docstring); outputs its outcome."""
    config = ctx.config
    turn_count = config.get("turnCount")
    prompt = str(config.get("prompt") or "Your reply?")
    prompts = [str(p) for p in config.get("prompts") or []]
    closing = str(config.get("closingMessage") or "Thank you, that is everything I needed.")

    def prompt_for(turn: int) -> str:
        return prompts[turn - 1] if turn <= len(prompts) else prompt

    conv = await ctx.conversation(
        title=config.get("title") or ctx.node.name,
        initial_prompt=config.get("initialPrompt")
        or (None if not config.get("mockAutoResume") else "Conformance conversation opened"),
        timeout_ms=config.get("timeoutMs"),
        channel=config.get("channel"),
    )
    if config.get("mockAutoResume"):
        replies: list[Any] = []
        for i in range(1, int(turn_count or 1) + 1):
            replies.append(await conv.exchange(f"{prompt} (turn {i})", auto_answer=f"conformance reply {i}"))
        await conv.close({"replies": replies}, reason="max-turns", message=closing)
        answered = len(replies)
    else:
        # Each turn reads only itself: the node goes on from its last exchange and reads
        # the earlier answers once, when it closes.
        await conv.resume_at_last_turn()
        answered = conv.turn_index
        while not conv.closed:
            if turn_count and answered >= turn_count:
                await conv.close({"replies": await conv.answers()}, reason="max-turns", message=closing)
                break
            await conv.exchange(prompt_for(answered + 1), outcome_schema=config.get("outcomeSchema"))
            if conv.closed:
                break
            answered += 1
    outcome = conv.outcome if conv.outcome is not None else {"replies": await conv.answers()}
    return {
        "conversationId": conv.id,
        "outcome": outcome,
        "turns": answered,
        "closedBy": "user" if conv.closed_by == "peer" else conv.closed_by,
        "reason": conv.close_reason,
    }
