"""Server processes for the HTTP scenarios: spawn, wait until serving, measure, stop.

Servers run in their own process (``python -m openwop_bridge.host.cli serve …``, the same
code as the ``openwop-bridge serve`` console script) with their output in a
log file, so a failure can be shown and the benchmark never measures itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from openwop_bridge.bench.client import Connection


def free_port() -> int:
    """An unused loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerError(RuntimeError):
    """A server that would not start (its log is in the message)."""


class Server:
    """One server process listening on loopback; ``command`` is run with ``--port`` appended.

    ``env`` replaces the inherited environment and ``cwd`` the working folder when given.
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        log: Path,
        *,
        port: int | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.command = list(command)
        self.port = port or free_port()
        self.log = log
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        """The process id (the server must be running)."""
        assert self.proc is not None, "server is not running"
        return self.proc.pid

    def output(self, tail: int = 4000) -> str:
        """The end of the server's log."""
        return self.log.read_text(errors="replace")[-tail:] if self.log.exists() else ""

    async def start(self, health_path: str = "/healthz", timeout: float = 60.0) -> float:
        """Spawn the process and wait until ``health_path`` answers 200; returns the seconds it took."""
        started = time.perf_counter()
        with self.log.open("ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                *self.command,
                "--port",
                str(self.port),
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                env=self.env,
                cwd=self.cwd,
            )
        deadline = started + timeout
        probe = Connection("127.0.0.1", self.port)
        try:
            while True:
                if self.proc.returncode is not None:
                    raise ServerError(f"{self.name} exited with status {self.proc.returncode}:\n{self.output()}")
                with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                    if (await probe.request("GET", health_path)).status == 200:
                        return time.perf_counter() - started
                if time.perf_counter() > deadline:
                    raise ServerError(
                        f"{self.name} did not answer {health_path} within {timeout:.0f} s:\n{self.output()}"
                    )
                await asyncio.sleep(0.005)
        finally:
            await probe.close()

    async def stop(self) -> None:
        """SIGTERM, then SIGKILL after 15 s."""
        proc, self.proc = self.proc, None
        if proc is None or proc.returncode is not None:
            return
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 15)
        except TimeoutError:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()

    def rss_mb(self) -> float:
        """Resident set size now (``VmRSS``), in MiB."""
        return proc_status_kb(self.pid, "VmRSS") / 1024

    def peak_rss_mb(self) -> float:
        """Peak resident set size (``VmHWM``), in MiB."""
        return proc_status_kb(self.pid, "VmHWM") / 1024


def proc_status_kb(pid: int, field: str) -> int:
    """A ``kB`` field of ``/proc/<pid>/status``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(f"{field} not in /proc/{pid}/status")


def bridge_command(db: str, workflows_dir: Path, api_key: str, extra: Sequence[str] = ()) -> list[str]:
    """``openwop-bridge serve`` on ``db`` with the benchmark's workflows and one API key."""
    return [
        sys.executable,
        "-m",
        "openwop_bridge.host.cli",
        "serve",
        "--db",
        db,
        "--no-demo",
        "--workflows",
        str(workflows_dir),
        "--api-key",
        api_key,
        "--log-level",
        "warning",
        # The benchmark is one key creating and following runs as fast as the server goes: no per-key bounds.
        "--max-runs-per-minute",
        str(10**9),
        "--max-streams-per-key",
        str(10**6),
        *extra,
    ]
