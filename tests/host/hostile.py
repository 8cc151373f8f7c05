"""Hostile webhook receivers on loopback for the isolation tests: one that takes a request and never answers, one
that drips its answer a byte at a time."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field


@dataclass
class Hostile:
    """A TCP server on 127.0.0.1: ``hang`` never answers; ``drip`` answers one byte every ``every`` seconds."""

    mode: str
    every: float = 1.0
    port: int = 0
    #: Connections accepted so far, and those still open.
    accepted: int = 0
    open: int = 0
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self.open += 1
        self.writers.append(writer)
        try:
            await reader.readuntil(b"\r\n\r\n")  # the request's head; its body is never needed
            if self.mode == "drip":
                answer = (
                    b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n{"challenge":"'
                )
                for byte in answer + b"x" * 60:
                    writer.write(bytes([byte]))
                    await writer.drain()
                    await asyncio.sleep(self.every)
            await reader.read()  # until the bridge gives up and closes
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self.open -= 1
            writer.close()


@contextlib.asynccontextmanager
async def hostile(mode: str, every: float = 1.0) -> AsyncIterator[Hostile]:
    """A :class:`Hostile` receiver, served until the block ends (then every connection it holds is closed)."""
    host = Hostile(mode, every)
    server = await asyncio.start_server(host.handle, "127.0.0.1", 0)
    host.port = server.sockets[0].getsockname()[1]
    try:
        yield host
    finally:
        server.close()
        for writer in host.writers:
            writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5)
