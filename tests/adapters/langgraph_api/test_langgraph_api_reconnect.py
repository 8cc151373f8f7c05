"""``langgraph_sdk`` reconnects to a run's stream on its own when the connection drops.

The client follows the run-stream response's ``Location`` header (a path under
the API's base URL) with ``GET`` and the ``Last-Event-ID`` it last saw. Here the
connection of the first stream is cut on the client's side right after the
first part with an event id.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient

from tests.conftest import TOKENS


class _Cut(httpx.AsyncByteStream):
    """A response body that fails like a dropped connection after its first chunk with an SSE ``id``."""

    def __init__(self, inner: httpx.AsyncByteStream) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            yield chunk
            if b"id: " in chunk:
                raise httpx.ReadError("connection dropped")

    async def aclose(self) -> None:
        await self.inner.aclose()


class CuttingTransport(httpx.AsyncBaseTransport):
    """Loopback HTTP that cuts the first ``POST …/runs/stream`` response; it records every request."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.seen: list[tuple[str, str, str | None]] = []
        self.cut = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append((request.method, request.url.path, request.headers.get("last-event-id")))
        response = await self.inner.handle_async_request(request)
        if request.method == "POST" and request.url.path.endswith("/runs/stream") and not self.cut:
            self.cut = True
            assert isinstance(response.stream, httpx.AsyncByteStream)
            return httpx.Response(response.status_code, headers=response.headers, stream=_Cut(response.stream))
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_dropped_run_stream_is_resumed_where_it_broke(served: str) -> None:
    transport = CuttingTransport()
    http = httpx.AsyncClient(base_url=served, transport=transport, headers={"x-api-key": TOKENS["admin"]})
    async with http:
        c: Any = LangGraphClient(http)
        thread = await c.threads.create()
        tid = thread["thread_id"]
        modes = ["values", "updates"]
        parts = [p async for p in c.runs.stream(tid, "demo-expense-approval", input={}, stream_mode=modes)]
    assert transport.cut
    [(_, path, last_id)] = [s for s in transport.seen if s[0] == "GET" and s[1].endswith("/stream")]
    [run] = [s for s in transport.seen if s[0] == "POST" and s[1].endswith("/runs/stream")]
    rid = parts[0].data["run_id"]
    assert run[1] == f"/langgraph/threads/{tid}/runs/stream"
    assert path == f"/langgraph/threads/{tid}/runs/{rid}/stream" and last_id is not None and int(last_id) >= 0
    # The parts after the drop carry on, in the modes asked for, to the run's interrupt.
    [last] = [p for p in parts if p.event == "values" and "__interrupt__" in p.data]
    assert [p for p in parts if p.event == "updates" and "__interrupt__" in p.data]
    assert last.data["__interrupt__"][0]["value"]["action_request"]["action"] == "Approve expense report EXP-1042"


async def test_the_run_stream_names_where_to_rejoin(served: str) -> None:
    async with httpx.AsyncClient(base_url=served, headers={"x-api-key": TOKENS["admin"]}) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        body = {"assistant_id": "conformance-approval", "input": {}}
        async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
            rid = response.headers["content-location"].rsplit("/", 1)[1]
            assert response.headers["location"] == f"/threads/{tid}/runs/{rid}/stream?stream_mode=values"
            assert response.headers["content-location"] == f"/langgraph/threads/{tid}/runs/{rid}"
            await response.aread()
        modes = "stream_mode=messages-tuple&stream_mode=updates"
        async with http.stream("GET", f"/threads/{tid}/runs/{rid}/stream?{modes}") as rejoined:
            assert rejoined.headers["location"] == f"/threads/{tid}/runs/{rid}/stream?{modes}"
            await rejoined.aread()
        waited = await http.post(f"/threads/{tid}/runs/wait", json={"command": {"resume": {"action": "accept"}}})
        assert waited.headers["location"] == f"/threads/{tid}/runs/{rid}/join"
