"""Scenario 3, ``agui_roundtrip``: an AG-UI client pauses on an approval and resumes it, over SSE.

A cycle, identical on both sides: ``POST`` a ``RunAgentInput`` for a new
thread and read the SSE response until ``RUN_FINISHED`` with
``outcome: {type: "interrupt", interrupts: [{id, …}]}``; then ``POST`` a new
run on the same thread with ``resume: [{interruptId, status: "resolved",
payload}]`` and read until ``RUN_FINISHED`` with a success outcome.

Bridge: ``openwop-bridge serve`` (its AG-UI plugin serves
``POST /agui/{workflowId}``) with the one-approval workflow. Peer: the
one-interrupt LangGraph graph served by ``ag-ui-langgraph`` on uvicorn
(:mod:`openwop_bridge.bench.agui_peer`). Both are separate processes on loopback,
driven by the same client, cycles alternating.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import time
import uuid
from typing import Any

from openwop_bridge.bench import agui_peer, workflows
from openwop_bridge.bench.client import Connection, HttpError
from openwop_bridge.bench.harness import Bench, measure_cycles
from openwop_bridge.bench.http import bridge_servers
from openwop_bridge.bench.results import Result, Target
from openwop_bridge.bench.servers import Server

NAME = "agui_roundtrip"
TARGET = Target("<=", 0.25, on_ratio=True)
PEER_MODULES = ("ag_ui_langgraph", "fastapi", "aiosqlite", "langgraph.checkpoint.sqlite.aio")


class AguiUnavailableError(RuntimeError):
    """The bridge server does not serve the AG-UI endpoint."""


class AguiClient:
    """Drives AG-UI runs against one endpoint."""

    def __init__(self, port: int, path: str, headers: dict[str, str] | None = None) -> None:
        self.path = path
        self.connection = Connection("127.0.0.1", port, headers)

    @staticmethod
    def run_input(thread_id: str, resume: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """A minimal ``RunAgentInput`` (camelCase, as clients send it)."""
        body: dict[str, Any] = {
            "threadId": thread_id,
            "runId": uuid.uuid4().hex,
            "state": {},
            "messages": [],
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
        if resume is not None:
            body["resume"] = resume
        return body

    async def agui_run(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST one AG-UI run and read its stream to the end; returns ``RUN_FINISHED``."""
        finished: dict[str, Any] | None = None
        async with contextlib.aclosing(self.connection.stream("POST", self.path, body)) as stream:
            async for event in stream:
                doc = event.json()
                kind = doc.get("type")
                if kind == "RUN_ERROR":
                    raise RuntimeError(f"{self.path}: RUN_ERROR {doc.get('code')}: {doc.get('message')}")
                if kind == "RUN_FINISHED":
                    finished = doc
        if finished is None:
            raise RuntimeError(f"{self.path}: the stream ended without RUN_FINISHED")
        return finished

    async def cycle(self) -> float:
        """Run to the interrupt, resume to success; returns the seconds it took."""
        thread_id = uuid.uuid4().hex
        started = time.perf_counter()
        paused = await self.agui_run(self.run_input(thread_id))
        outcome = paused.get("outcome") or {}
        if outcome.get("type") != "interrupt" or not outcome.get("interrupts"):
            raise RuntimeError(f"{self.path}: expected an interrupt outcome, got {outcome!r}")
        answer = workflows.approval_answer()
        resume = [{"interruptId": outcome["interrupts"][0]["id"], "status": "resolved", "payload": answer}]
        done = await self.agui_run(self.run_input(thread_id, resume))
        elapsed = time.perf_counter() - started
        end = (done.get("outcome") or {}).get("type", "success")
        if end != "success":
            raise RuntimeError(f"{self.path}: the resume run finished with {done.get('outcome')!r}")
        return elapsed

    async def close(self) -> None:
        """Close the connection."""
        await self.connection.close()


def peer_missing() -> str | None:
    """Why the peer cannot run here, or None."""
    for name in PEER_MODULES:
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            found = None
        if found is None:
            return f"peer not installed (no module {name}): pip install 'openwop-bridge[bench]'"
    return None


async def check_bridge_serves_agui(client: AguiClient, server: Server) -> None:
    """Fail loudly, with the reason, when the bridge has no AG-UI endpoint."""
    try:
        await client.cycle()
    except HttpError as exc:
        if exc.status not in (404, 405):
            raise
        hints = [line.strip() for line in server.output().splitlines() if "agui" in line.lower()]
        raise AguiUnavailableError(
            f"the bridge does not serve POST {client.path} ({exc.status}); is the AG-UI adapter "
            f"(openwop_bridge.agui, plugin 'agui') installed and not switched off with --no-agui? "
            f"server log: {' | '.join(hints) or '(nothing about agui)'}"
        ) from exc


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Measure ``agui_roundtrip`` against ag-ui-langgraph, alternating."""
    n = bench.scale(300, 20)
    warmup = bench.scale(20, 3)
    bridge = bridge_servers(bench, str(bench.path("agui.db")), "agui")[0]
    missing = peer_missing()
    peer = None
    if missing:
        bench.progress.say("agui", f"WARNING: {missing}; measuring the bridge alone")
    else:
        command = [sys.executable, "-m", "openwop_bridge.bench.agui_peer", "--db", str(bench.path("agui-peer.db"))]
        peer = Server("ag-ui-langgraph", command, bench.path("agui-peer.log"))
    started: list[Server] = []
    clients: list[AguiClient] = []
    try:
        await bridge.start()
        started.append(bridge)
        ours = AguiClient(bridge.port, f"/agui/{workflows.APPROVAL}", bench.auth)
        clients.append(ours)
        await check_bridge_serves_agui(ours, bridge)
        theirs = None
        if peer is not None:
            await peer.start(agui_peer.HEALTH)
            started.append(peer)
            theirs = AguiClient(peer.port, agui_peer.PATH)
            clients.append(theirs)
        bridge_samples, peer_samples = await measure_cycles(
            bench, "agui", NAME, bridge.pid, ours.cycle, theirs.cycle if theirs else None, n=n, warmup=warmup
        )
    finally:
        for client in clients:
            await client.close()
        for server in reversed(started):
            await server.stop()
    return [Result.timed(NAME, bridge_samples, peer_samples, target=TARGET, note=missing)]
