"""Scenario 5, ``conversation_turn_ratio``: does an exchange get slower as the conversation grows?

One run of a ``core.conversationGate`` with ``turnCount: 100``, answered over
HTTP. The client follows the run's event stream; when turn *i*'s prompt is
suspended (``node.suspended``, reason ``conversation-input``) it answers with
``POST /v1/runs/{id}/interrupts/gate`` and times the exchange from that POST
until the agent's next move is committed: turn *i + 1*'s prompt, or, after turn
100, ``run.completed`` (the node closes the conversation in the same step).

A single turn is a single sample, so several conversations are held one after
the other and the figure is median(turn 100) / median(turn 1) over them.
"""

from __future__ import annotations

import contextlib
import time

from openwop_bridge.bench import workflows
from openwop_bridge.bench.client import Connection
from openwop_bridge.bench.harness import Bench
from openwop_bridge.bench.http import bridge_servers
from openwop_bridge.bench.results import Result, Target, median
from openwop_bridge.bench.servers import Server

NAME = "conversation_turn_ratio"
TARGET = Target("<=", 1.2)
SHOWN_TURNS = (1, 2, 10, 50, 90, 99, 100)


async def converse(bench: Bench, server: Server) -> list[float]:
    """Hold one conversation to its end; returns the exchange latency of each turn (seconds)."""
    commands = Connection("127.0.0.1", server.port, bench.auth)
    events = Connection("127.0.0.1", server.port, bench.auth)
    latencies: list[float] = []
    try:
        created = await commands.request("POST", "/v1/runs", {"workflowId": workflows.CONVERSATION}, expect=201)
        run_id = created.json()["runId"]
        answered_at: float | None = None
        async with contextlib.aclosing(events.stream("GET", f"/v1/runs/{run_id}/events")) as stream:
            async for event in stream:
                prompt = event.event == "node.suspended" and event.json()["payload"].get("reason") == (
                    "conversation-input"
                )
                if answered_at is not None and (prompt or event.event == "run.completed"):
                    latencies.append(time.perf_counter() - answered_at)
                    answered_at = None
                if prompt:
                    turn = len(latencies) + 1
                    answered_at = time.perf_counter()
                    await commands.request(
                        "POST",
                        f"/v1/runs/{run_id}/interrupts/{workflows.GATE}",
                        {"resumeValue": f"answer {turn}"},
                        expect=200,
                    )
                elif event.event in ("run.failed", "run.cancelled"):
                    raise RuntimeError(f"conversation run {run_id} ended with {event.event}: {event.data[:300]}")
    finally:
        await commands.close()
        await events.close()
    if len(latencies) != workflows.CONVERSATION_TURNS:
        raise RuntimeError(f"expected {workflows.CONVERSATION_TURNS} exchanges, measured {len(latencies)}")
    return latencies


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Hold several 100-turn conversations; compare turn 100 with turn 1."""
    conversations = bench.scale(7, 2)
    server = bridge_servers(bench, str(bench.path("conversation.db")), "conversation")[0]
    per_turn: list[list[float]] = [[] for _ in range(workflows.CONVERSATION_TURNS)]
    try:
        await server.start()
        await converse(bench, server)  # warm-up
        for i in range(conversations):
            for turn, latency in enumerate(await converse(bench, server)):
                per_turn[turn].append(latency)
            shown = ", ".join(f"t{t} {_ms(median(per_turn[t - 1]))}" for t in SHOWN_TURNS)
            bench.progress.say("conversation", f"{i + 1}/{conversations} conversations; median ms {shown}")
        if bench.profiling:
            bench.progress.say("conversation", "profiling three more conversations")
            async with bench.profiler.record(NAME, server.pid):
                for _ in range(3):
                    await converse(bench, server)
    finally:
        await server.stop()
    first, before_last, last = median(per_turn[0]), median(per_turn[-2]), median(per_turn[-1])
    ratio = None if first is None or last is None else last / first
    return [
        Result(
            NAME,
            "x",
            ratio,
            n=conversations,
            target=TARGET,
            note=(
                f"turn 100 {_ms(last)} ms / turn 1 {_ms(first)} ms (medians over {conversations} conversations); "
                f"turn 99, the last that only asks the next question, {_ms(before_last)} ms"
            ),
        )
    ]


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.2f}"
