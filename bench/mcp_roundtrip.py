"""``mcp_roundtrip``: an MCP client calls the approval workflow's tool, is asked, answers, and gets the result.

A cycle: ``tools/call`` on ``bench-approval`` through the official ``mcp`` SDK's
``Client`` in its default mode (MCP 2026-07-28): the bridge returns an
``InputRequiredResult`` holding the gate's form ``elicitation/create``; the
client's elicitation callback accepts; the SDK retries the call with the answer
and the sealed ``requestState``; the bridge resolves the gate and returns the
run's outputs. One client session serves every cycle. Bridge:
``openwop-bridge serve`` (its MCP plugin serves ``POST /mcp``) with the
benchmark workflows, on loopback. There is no peer.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from openwop_bridge.bench import workflows
from openwop_bridge.bench.harness import Bench, alternate
from openwop_bridge.bench.http import bridge_servers
from openwop_bridge.bench.results import Result

NAME = "mcp_roundtrip"


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Measure ``mcp_roundtrip`` (call → input required → answer → result) on one session."""
    import httpx2
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={})

    n = bench.scale(200, 10)
    warmup = bench.scale(20, 3)
    bridge = bridge_servers(bench, str(bench.path("mcp.db")), "mcp")[0]
    await bridge.start()
    try:
        async with contextlib.AsyncExitStack() as stack:
            http = await stack.enter_async_context(httpx2.AsyncClient(headers=bench.auth, timeout=30))
            url = f"http://127.0.0.1:{bridge.port}/mcp"
            client = await stack.enter_async_context(
                Client(streamable_http_client(url, http_client=http), elicitation_callback=accept)
            )
            if client.protocol_version != "2026-07-28":
                raise RuntimeError(f"the SDK client negotiated {client.protocol_version}, not 2026-07-28")

            async def cycle() -> float:
                started = time.perf_counter()
                result = await client.call_tool(workflows.APPROVAL, {})
                elapsed = time.perf_counter() - started
                if result.is_error:
                    raise RuntimeError(f"{workflows.APPROVAL} ended with an error: {result.content!r}")
                return elapsed

            bench.progress.say("mcp", f"{warmup} warm-up + {n} cycles")
            samples, _ = await alternate(bench, "mcp", cycle, None, n=n, warmup=warmup)
    finally:
        await bridge.stop()
    return [Result.timed(NAME, samples)]
