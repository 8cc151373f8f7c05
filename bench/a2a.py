"""Scenario 4, ``a2a_roundtrip``: an A2A client starts a task, sees it need input, answers, sees it done.

A cycle, through ``a2a-sdk``'s own client (resolved once from the agent card):
``SendMessage`` naming the one-approval workflow in ``metadata.openwop.skillId``
answers with the task at ``TASK_STATE_INPUT_REQUIRED``; a second ``SendMessage``
on the task with the approval as a data part answers with it
``TASK_STATE_COMPLETED``. Bridge only: ``openwop-bridge serve`` with its A2A
plugin, on loopback, beside ``http_roundtrip``'s REST cycle.
"""

from __future__ import annotations

import time
import uuid

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest, Task, TaskState
from google.protobuf import json_format, struct_pb2

from openwop_bridge.bench import workflows
from openwop_bridge.bench.harness import Bench, alternate
from openwop_bridge.bench.http import bridge_servers
from openwop_bridge.bench.results import Result, Target
from openwop_bridge.bench.servers import Server

NAME = "a2a_roundtrip"
TARGET = Target("<=", 10.0)


class A2aClient:
    """The SDK's client for one bridge, sending the bench key on every call."""

    def __init__(self, http: httpx.AsyncClient, client: Client) -> None:
        self.http = http
        self.client = client

    @classmethod
    async def connect(cls, port: int, headers: dict[str, str]) -> A2aClient:
        """Resolve the card and build the client from it."""
        http = httpx.AsyncClient(headers=headers, timeout=30)
        card = await A2ACardResolver(http, f"http://127.0.0.1:{port}").get_agent_card()
        return cls(http, ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card))

    async def send(self, message: Message) -> Task:
        """One ``SendMessage``; the task it answers with."""
        async for reply in self.client.send_message(SendMessageRequest(message=message)):
            return reply.task
        raise RuntimeError("SendMessage answered nothing")

    async def cycle(self) -> float:
        """Start, see input required, answer, see it completed; returns the seconds it took."""
        started = time.perf_counter()
        meta = struct_pb2.Struct()
        meta.update({"openwop": {"skillId": workflows.APPROVAL}})
        task = await self.send(Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, metadata=meta))
        if task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
            raise RuntimeError(f"expected input-required, got {TaskState.Name(task.status.state)}")
        answer = Part(data=json_format.ParseDict(workflows.approval_answer(), struct_pb2.Value()))
        done = await self.send(
            Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, task_id=task.id, parts=[answer])
        )
        elapsed = time.perf_counter() - started
        if done.status.state != TaskState.TASK_STATE_COMPLETED:
            raise RuntimeError(f"expected completed, got {TaskState.Name(done.status.state)}")
        return elapsed

    async def close(self) -> None:
        """Close the client and its HTTP connections."""
        await self.client.close()
        await self.http.aclose()


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Measure ``a2a_roundtrip`` (sequential cycles, the bridge alone)."""
    n = bench.scale(300, 20)
    warmup = bench.scale(20, 3)
    bridge = bridge_servers(bench, str(bench.path("a2a.db")), "a2a")[0]
    started: list[Server] = []
    client: A2aClient | None = None
    try:
        await bridge.start()
        started.append(bridge)
        client = await A2aClient.connect(bridge.port, bench.auth)
        bench.progress.say("a2a", f"{warmup} warm-up + {n} cycles")
        samples, _ = await alternate(bench, "a2a", client.cycle, None, n=n, warmup=warmup)
        if bench.profiling:
            bench.progress.say("a2a", f"profiling {n} cycles")
            async with bench.profiler.record(NAME, bridge.pid):
                for _ in range(n):
                    await client.cycle()
    finally:
        if client is not None:
            await client.close()
        for server in reversed(started):
            await server.stop()
    return [Result.timed(NAME, samples, target=TARGET)]
