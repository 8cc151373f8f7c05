"""Real servers for tests: uvicorn in the test's loop, or a separate process to kill -9."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import uvicorn


@contextlib.asynccontextmanager
async def uvicorn_server(app: Any, **options: Any) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port (``options`` go to its Config); yields the base URL."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, lifespan="on", log_level="warning", access_log=False, **options
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``openwop-bridge serve`` in its own process (so a test can kill -9 it)."""

    def __init__(
        self, db: Path | str, args: Sequence[str] = (), port: int | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.db = str(db)
        self.args = list(args)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[str] | None = None
        self.log = Path(self.db + f".{self.port}.log")

    def start(self, timeout: float = 20.0) -> ServerProcess:
        cmd = [sys.executable, "-m", "openwop_bridge", "serve", "--db", self.db, "--port", str(self.port), *self.args]
        out = self.log.open("a")
        self.proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, text=True, env=self.env, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited early:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=0.5).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"server did not start:\n{self.log.read_text()}")

    def kill9(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)

    def output(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def __enter__(self) -> ServerProcess:
        """Start the server (``with ServerProcess(...) as server:``); it stops when the block ends."""
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_for_status(
    url: str, headers: dict[str, str], run_id: str, statuses: tuple[str, ...], timeout: float = 15
) -> dict[str, Any]:
    """Poll ``GET /v1/runs/{run_id}`` until the run is in one of ``statuses``; its last snapshot."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        snap: dict[str, Any] = httpx.get(f"{url}/v1/runs/{run_id}", headers=headers).json()
        if snap["status"] in statuses:
            return snap
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} stuck in {snap['status']}")
