"""A lean HTTP/1.1 client for load generation: keep-alive, JSON bodies, SSE streams.

The benchmark client shares two cores with the server it measures, so every
microsecond it spends parsing is taken from the server. httpx costs several
hundred microseconds of CPU per request; this client writes one buffer and
parses the status line, headers and a ``Content-Length`` or chunked body with
no further machinery. It understands exactly what uvicorn sends and nothing
more (no redirects, no compression, no TLS).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson


class HttpError(RuntimeError):
    """A response the benchmark did not expect (status, body excerpt)."""

    def __init__(self, method: str, path: str, status: int, body: bytes) -> None:
        super().__init__(f"{method} {path} -> {status}: {body[:300].decode('utf-8', 'replace')}")
        self.status = status
        self.body = body


@dataclass(slots=True)
class Response:
    """A complete response."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return orjson.loads(self.body)


@dataclass(slots=True)
class SseEvent:
    """One server-sent event: ``event``, ``data`` and ``id`` fields (comments are dropped)."""

    event: str
    data: str
    id: str | None

    def json(self) -> Any:
        """``data`` parsed as JSON."""
        return orjson.loads(self.data)


class Connection:
    """One keep-alive connection to ``host:port``; requests on it are sequential."""

    def __init__(self, host: str, port: int, headers: Mapping[str, str] | None = None) -> None:
        self.host = host
        self.port = port
        self._base = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is None or self._writer is None or self._writer.is_closing():
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        return self._reader, self._writer

    async def close(self) -> None:
        """Close the socket."""
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except (ConnectionError, OSError):
                pass
        self._reader = self._writer = None

    async def _send(
        self, method: str, path: str, body: Any, headers: Mapping[str, str] | None
    ) -> tuple[asyncio.StreamReader, int, dict[str, str]]:
        reader, writer = await self._open()
        payload = b"" if body is None else orjson.dumps(body)
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self._base}{extra}"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        writer.write(head.encode("latin-1") + b"\r\n" + payload)
        block = await reader.readuntil(b"\r\n\r\n")
        lines = block.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        parsed: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                parsed[name.strip().lower()] = value.strip()
        return reader, status, parsed

    async def _body(self, reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
        if "content-length" in headers:
            return await reader.readexactly(int(headers["content-length"]))
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = [chunk async for chunk in self._chunks(reader)]
            return b"".join(parts)
        data = await reader.read()
        await self.close()
        return data

    @staticmethod
    async def _chunks(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";", 1)[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return
            data = await reader.readexactly(size + 2)
            yield data[:-2]

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: Mapping[str, str] | None = None,
        expect: int | tuple[int, ...] | None = None,
    ) -> Response:
        """Send a request (``body`` is sent as JSON) and read the whole response.

        With ``expect``, any other status raises :class:`HttpError`.
        """
        try:
            reader, status, parsed = await self._send(method, path, body, headers)
            data = await self._body(reader, parsed)
        except BaseException:
            await self.close()
            raise
        if parsed.get("connection", "").lower() == "close":
            await self.close()
        allowed = (expect,) if isinstance(expect, int) else expect
        if allowed is not None and status not in allowed:
            raise HttpError(method, path, status, data)
        return Response(status, parsed, data)

    async def stream(
        self, method: str, path: str, body: Any = None, *, headers: Mapping[str, str] | None = None
    ) -> AsyncGenerator[SseEvent, None]:
        """Send a request and yield the server-sent events of a 200 response until the server ends it.

        A non-200 response raises :class:`HttpError`. Leaving the loop early closes the
        connection (the rest of the stream cannot be skipped on a keep-alive socket).
        """
        finished = False
        try:
            reader, status, parsed = await self._send(
                method, path, body, {"Accept": "text/event-stream", **(headers or {})}
            )
            if status != 200:
                data = await self._body(reader, parsed)
                finished = True
                raise HttpError(method, path, status, data)
            buffer = b""
            source = self._chunks(reader) if parsed.get("transfer-encoding", "").lower() == "chunked" else None
            while True:
                if source is not None:
                    try:
                        chunk = await source.__anext__()
                    except StopAsyncIteration:
                        break
                else:
                    chunk = await reader.read(65536)
                    if not chunk:
                        break
                buffer += chunk.replace(b"\r\n", b"\n")
                while b"\n\n" in buffer:
                    block, buffer = buffer.split(b"\n\n", 1)
                    event = _parse_sse(block)
                    if event is not None:
                        yield event
            finished = source is not None
        finally:
            if not finished:
                await self.close()


def _parse_sse(block: bytes) -> SseEvent | None:
    name, data, event_id = "message", [], None
    for raw in block.decode("utf-8").split("\n"):
        if not raw or raw.startswith(":"):
            continue
        field, _, value = raw.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
        elif field == "id":
            event_id = value
    if not data and event_id is None and name == "message":
        return None
    return SseEvent(name, "\n".join(data), event_id)
