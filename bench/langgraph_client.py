"""Scenario ``langgraph_client_roundtrip``: a ``langgraph_sdk`` client pauses on an interrupt and resumes it.

A cycle, identical on both sides, through LangGraph's own Python client:
``threads.create()``; ``runs.wait()`` on the thread until it returns the state
with one ``__interrupt__``; ``runs.wait(command={"resume": answer})``; then
``threads.get_state()``, which must show the run ended (no ``next`` node, no
task). Bridge: ``openwop-bridge serve`` with the one-approval workflow, whose
``langgraph_api`` plugin serves the LangGraph API at ``/langgraph``. Peer: the
one-interrupt graph of :mod:`openwop_bridge.bench.langgraph_peer` on LangGraph's own
development server, ``langgraph dev`` (package ``langgraph-cli[inmem]``, its
in-memory runtime). Both are separate processes on loopback, cycles alternating.

``langgraph-cli[inmem]`` moves packages the bridge's extras pin (it wants
protobuf below 7; held at 7 it falls back to an old ``langgraph-api`` that
downgrades ``sse-starlette`` and ``cryptography``), so it lives in a venv of
its own: ``make bench-peer`` creates ``.venv-langgraph-dev``, and
``OPENWOP_BENCH_LANGGRAPH_DEV`` may name another ``langgraph`` executable.
Without one the figure is the bridge's alone and says why. The peer runs with
LangSmith tracing, the CLI's analytics and the server's version check off, so
its traffic stays on loopback.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from openwop_bridge.bench import workflows
from openwop_bridge.bench.harness import Bench, measure_cycles
from openwop_bridge.bench.http import bridge_servers
from openwop_bridge.bench.results import Result, Target
from openwop_bridge.bench.servers import Server

NAME = "langgraph_client_roundtrip"
TARGET = Target("<=", 0.25, on_ratio=True)
ROOT = Path(__file__).resolve().parents[1]
#: Where ``make bench-peer`` installs ``langgraph-cli[inmem]``.
PEER_VENV = ROOT / ".venv-langgraph-dev"
PEER_ENV_VAR = "OPENWOP_BENCH_LANGGRAPH_DEV"
PEER_GRAPH = "bench"
#: Everything that could make ``langgraph dev`` reach beyond loopback, switched off.
QUIET_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
}
#: What dominates the peer's figure: each ``runs.wait`` takes about 1 s on ``langgraph dev``
#: (its in-memory runtime polls its run queue, sleeping 0.5 s when idle: ``Runs.next``).
PEER_NOTE = (
    "each runs.wait on langgraph dev takes about 1 s: its in-memory runtime hands runs to its worker "
    "by polling a queue (0.5 s sleeps when idle), so the peer's cycle is mostly that wait"
)
#: Keys that would send traces or licence checks to LangChain's cloud: never passed on.
DROPPED_ENV = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGGRAPH_CLOUD_LICENSE_KEY", "LANGSMITH_ENDPOINT")


class LangGraphClientCycle:
    """One ``langgraph_sdk`` client for one server and assistant."""

    def __init__(self, url: str, assistant: str, api_key: str | None) -> None:
        self.url = url
        self.assistant = assistant
        self.client: LangGraphClient = get_client(url=url, api_key=api_key)

    async def cycle(self) -> float:
        """Create a thread, run to the interrupt, resume, read the state; returns the seconds it took."""
        try:
            return await self._cycle()
        except httpx.HTTPStatusError as exc:
            raise RuntimeError(f"{self.url}: {exc.response.status_code} on {exc.request.url.path}") from exc

    async def _cycle(self) -> float:
        started = time.perf_counter()
        thread_id = (await self.client.threads.create())["thread_id"]
        paused = await self.client.runs.wait(thread_id, self.assistant, input={})
        interrupts = paused.get("__interrupt__") if isinstance(paused, dict) else None
        if not isinstance(interrupts, list) or len(interrupts) != 1:
            raise RuntimeError(f"{self.url}: expected one interrupt, got {paused!r}")
        await self.client.runs.wait(thread_id, self.assistant, command={"resume": workflows.approval_answer()})
        state = await self.client.threads.get_state(thread_id)
        elapsed = time.perf_counter() - started
        if state["next"] or state["tasks"] or not state["values"]:
            raise RuntimeError(f"{self.url}: the thread did not end after the resume: {state!r}")
        return elapsed

    async def close(self) -> None:
        """Close the client's HTTP connections."""
        await self.client.aclose()


def peer_executable() -> Path | None:
    """The ``langgraph`` command to serve the peer with, or None when there is none."""
    candidate = Path(os.environ.get(PEER_ENV_VAR) or PEER_VENV / "bin" / "langgraph")
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


def peer_missing() -> str | None:
    """Why the peer cannot run here, or None."""
    if peer_executable() is not None:
        return None
    where = os.environ.get(PEER_ENV_VAR) or f"{PEER_VENV}/bin/langgraph"
    return f"peer not installed (no langgraph dev at {where}): run `make bench-peer`"


def peer_server(bench: Bench, executable: Path) -> Server:
    """``langgraph dev`` serving the peer graph, from a work folder holding its ``langgraph.json``."""
    folder = bench.path("langgraph-dev")
    folder.mkdir(parents=True, exist_ok=True)
    graph = Path(__file__).with_name("langgraph_peer.py")
    config = {"dependencies": ["."], "graphs": {PEER_GRAPH: f"{graph}:graph"}}
    (folder / "langgraph.json").write_text(json.dumps(config))
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV} | QUIET_ENV
    command = [str(executable), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--config"]
    command.append(str(folder / "langgraph.json"))
    return Server("langgraph dev", command, bench.path("langgraph-dev.log"), env=env, cwd=folder)


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Measure ``langgraph_client_roundtrip`` against ``langgraph dev``, alternating."""
    n, warmup = bench.scale(50, 5), bench.scale(3, 1)
    bridge = bridge_servers(bench, str(bench.path("langgraph-client.db")), "langgraph")[0]
    executable = peer_executable()
    missing = peer_missing()
    if missing:
        bench.progress.say("langgraph", f"WARNING: {missing}; measuring the bridge alone")
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(bridge.stop)  # also stops a server that started but never answered
        await bridge.start()
        ours = LangGraphClientCycle(f"http://127.0.0.1:{bridge.port}/langgraph", workflows.APPROVAL, bench.api_key)
        stack.push_async_callback(ours.close)
        theirs = None
        if executable is not None:
            peer = peer_server(bench, executable)
            stack.push_async_callback(peer.stop)
            await peer.start("/ok", timeout=120)
            theirs = LangGraphClientCycle(f"http://127.0.0.1:{peer.port}", PEER_GRAPH, None)
            stack.push_async_callback(theirs.close)
        bridge_samples, peer_samples = await measure_cycles(
            bench, "langgraph", NAME, bridge.pid, ours.cycle, theirs.cycle if theirs else None, n=n, warmup=warmup
        )
    return [Result.timed(NAME, bridge_samples, peer_samples, target=TARGET, note=missing or PEER_NOTE)]
