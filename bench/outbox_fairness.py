"""One tenant's webhook latency while another holds a backlog: ``python -m openwop_bridge.bench.outbox_fairness
[PORT]``.

A ``serve`` is started (SQLite, in a temporary folder, loopback webhooks admitted, two API keys: tenant-a
and tenant-b) with this interpreter, so it runs whatever ``openwop_bridge`` the interpreter imports. Tenant-a
subscribes a local receiver to ``run.started``; it creates ten runs, one at a time, and each delivery's
latency (from the start of its ``POST /v1/runs`` to the delivery's arrival) and each ``POST``'s are
recorded. Then tenant-b subscribes eight times to an address that refuses connections and creates runs
until about 4,000 deliveries are queued, and tenant-a's fifteen runs are measured again. Medians,
minimums and maximums are printed; a delivery that has not arrived after 30 s counts as ``inf``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

KEY_A, KEY_B = "key-tenant-a-0001", "key-tenant-b-0001"
V2 = {"OpenWOP-Version": "2.0", "Content-Type": "application/json"}
#: Deliveries tenant-b queues.
BACKLOG = 4_000
#: Subscriptions of tenant-b on the refusing address, and the event types each asks for.
B_SUBSCRIPTIONS = 8
B_EVENTS = ["run.started", "interrupt.requested", "node.started"]
WORKFLOW = "demo-expense-approval"


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Receiver:
    """Tenant-a's receiver: when the ``run.started`` delivery of each run arrived."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}

    async def hook(self, request: Request) -> Response:
        body = await request.json()
        self.arrived.setdefault(str(body.get("runId", "")), time.perf_counter())
        return Response(status_code=204)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/hook", self.hook, methods=["POST"])])


def summary(xs: list[float]) -> str:
    """``median … min … max …`` of ``xs`` in seconds."""
    xs = sorted(xs)
    return f"median {statistics.median(xs):.3f}s  min {xs[0]:.3f}s  max {xs[-1]:.3f}s"


async def measure(http: httpx.AsyncClient, rec: Receiver, runs: int) -> tuple[list[float], list[float]]:
    """Tenant-a's delivery and ``POST /v1/runs`` latencies over ``runs`` runs, one at a time."""
    delivered, posted = [], []
    for _ in range(runs):
        started = time.perf_counter()
        resp = await http.post("/v1/runs", json={"workflowId": WORKFLOW}, headers={"Authorization": f"Bearer {KEY_A}"})
        posted.append(time.perf_counter() - started)
        resp.raise_for_status()
        bound = "tenant-a/" + resp.json()["runId"].replace("_", "-", 1)
        for _ in range(3_000):
            if bound in rec.arrived:
                break
            await asyncio.sleep(0.01)
        delivered.append(rec.arrived.get(bound, float("inf")) - started)
        await asyncio.sleep(0.2)
    return delivered, posted


async def main(port: int) -> None:
    """Run the measurement against a ``serve`` on ``port``."""
    rec = Receiver()
    rec_port, refusing = free_port(), free_port()
    server = uvicorn.Server(uvicorn.Config(rec.app(), host="127.0.0.1", port=rec_port, log_level="error"))
    serving = asyncio.create_task(server.serve())
    folder = Path(tempfile.mkdtemp())
    keys = ["--api-key", f"a={KEY_A}@tenant-a", "--api-key", f"b={KEY_B}@tenant-b"]
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "openwop_bridge", "serve", "--port", str(port), "--db", str(folder / "fair.db")),
        *(*keys, "--webhook-allow-loopback"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            for _ in range(200):
                with contextlib.suppress(httpx.HTTPError):
                    await http.get("/v1/workflows", headers={"Authorization": f"Bearer {KEY_A}"})
                    break
                await asyncio.sleep(0.1)
            a, b = {"Authorization": f"Bearer {KEY_A}", **V2}, {"Authorization": f"Bearer {KEY_B}", **V2}
            hook = {"url": f"http://127.0.0.1:{rec_port}/hook", "events": ["run.started"]}
            (await http.post("/webhooks", json=hook, headers=a)).raise_for_status()
            alone = await measure(http, rec, 10)
            for _ in range(B_SUBSCRIPTIONS):
                refused = {"url": f"http://127.0.0.1:{refusing}/x", "events": B_EVENTS}
                (await http.post("/webhooks", json=refused, headers=b)).raise_for_status()
            runs = BACKLOG // (B_SUBSCRIPTIONS * len(B_EVENTS)) + 1
            slots = asyncio.Semaphore(16)

            async def one() -> None:
                async with slots:
                    auth = {"Authorization": f"Bearer {KEY_B}"}
                    resp = await http.post("/v1/runs", json={"workflowId": WORKFLOW}, headers=auth)
                    while resp.status_code == 429:  # the key's run rate: wait as told
                        await asyncio.sleep(float(resp.headers.get("Retry-After", "1")))
                        resp = await http.post("/v1/runs", json={"workflowId": WORKFLOW}, headers=auth)
                    resp.raise_for_status()

            await asyncio.gather(*(one() for _ in range(runs)))
            print(f"tenant-b: {runs} runs, {runs * B_SUBSCRIPTIONS * len(B_EVENTS)} deliveries to a refusing address")
            await asyncio.sleep(2)
            loaded = await measure(http, rec, 15)
            print("alone:   delivery", summary(alone[0]), "| POST /v1/runs", summary(alone[1]))
            print("backlog: delivery", summary(loaded[0]), "| POST /v1/runs", summary(loaded[1]))
    finally:
        proc.terminate()
        await proc.wait()
        server.should_exit = True
        await serving


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else free_port()))
