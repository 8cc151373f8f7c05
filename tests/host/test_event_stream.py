"""What an SSE response sends, message by message, on ``/v1`` and on the v2 root routes.

The app is called as ASGI directly, so each ``http.response.body`` message the
server would write is seen as it is sent.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp, Message

from openwop_bridge import Engine
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.host.app import create_app
from tests.conftest import KEYS, auth
from tests.helpers import created_waiting, settle


class Stream:
    """One streaming request to ``app``: the messages it sent, and a way to leave it as a client would."""

    def __init__(self, app: ASGIApp, path: str, headers: dict[str, str]) -> None:
        self.sent: list[Message] = []
        self.left = asyncio.Event()
        self.arrived = asyncio.Event()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path.split("?")[0],
            "raw_path": path.split("?")[0].encode(),
            "query_string": path.partition("?")[2].encode(),
            "root_path": "",
            "headers": [(b"host", b"bridge.test"), *((k.lower().encode(), v.encode()) for k, v in headers.items())],
            "client": ("127.0.0.1", 1),
            "server": ("bridge.test", 80),
        }
        self.task = asyncio.create_task(app(scope, self._receive, self._send))
        self._requested = False

    async def _receive(self) -> Message:
        if not self._requested:
            self._requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self.left.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: Message) -> None:
        self.sent.append(message)
        self.arrived.set()

    @property
    def bodies(self) -> list[Message]:
        """The body messages sent so far."""
        return [m for m in self.sent if m["type"] == "http.response.body"]

    async def until(self, text: bytes, timeout: float = 5.0) -> None:
        """Wait until the body sent so far holds ``text``."""
        async with asyncio.timeout(timeout):
            while text not in b"".join(m.get("body", b"") for m in self.bodies):
                self.arrived.clear()
                await self.arrived.wait()


@pytest.fixture
def app(engine: Engine) -> ASGIApp:
    """The host on ``engine``, called as ASGI (keep-alives far apart, so they do not come between)."""
    return create_app(engine, KeyRing(KEYS.values()), manage_engine=False, keepalive_s=30)


def _events_route(run_id: str, v2: bool) -> tuple[str, dict[str, str]]:
    """The path and headers of a run's event stream on ``/v1`` or (``v2``) the v2 root routes."""
    headers = {"authorization": auth("admin")["Authorization"]}
    if v2:
        return f"/runs/{run_id}/events", {**headers, "openwop-version": "2"}
    return f"/v1/runs/{run_id}/events", headers


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
async def test_the_backlog_and_connected_go_out_together_and_the_run_end_closes_the_body(
    app: ASGIApp, engine: Engine, client: httpx.AsyncClient, v2: bool
) -> None:
    run_id = await created_waiting(client, engine, auth("admin"))
    path, headers = _events_route(run_id, v2)
    stream = Stream(app, path, headers)
    await stream.until(b": connected")
    first = stream.bodies[0]
    assert b"event: node.suspended" in first["body"] and first["body"].endswith(b": connected\n\n")
    assert first["more_body"] is True
    r = await client.post(
        f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
    )
    assert r.status_code == 200, r.text
    await asyncio.wait_for(stream.task, 5)
    last = stream.bodies[-1]
    assert b"event: run.completed" in last["body"] and last["more_body"] is False
    assert all(m["more_body"] for m in stream.bodies[:-1])


async def test_a_client_leaving_ends_the_stream_and_its_subscription(
    app: ASGIApp, engine: Engine, client: httpx.AsyncClient
) -> None:
    run_id = await created_waiting(client, engine, auth("admin"))
    stream = Stream(app, f"/v1/runs/{run_id}/events", {"authorization": auth("admin")["Authorization"]})
    await stream.until(b": connected")
    assert engine.hub.subscriber_count(run_id) == 1
    stream.left.set()
    await asyncio.wait_for(stream.task, 5)
    assert engine.hub.subscriber_count(run_id) == 0
    assert not stream.task.cancelled() and stream.task.exception() is None
    r = await client.post(
        f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
    )
    assert r.status_code == 200
    assert (await settle(engine, run_id)).status == "completed"


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
async def test_opening_a_stream_on_a_waiting_run_reads_the_run_once(
    app: ASGIApp, engine: Engine, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, v2: bool
) -> None:
    run_id = await created_waiting(client, engine, auth("admin"))
    path, headers = _events_route(run_id, v2)
    loads: list[str] = []
    load_run = engine.store.load_run

    async def counted(wanted: str) -> Any:
        loads.append(wanted)
        return await load_run(wanted)

    monkeypatch.setattr(engine.store, "load_run", counted)
    stream = Stream(app, path, headers)
    await stream.until(b": connected")
    assert loads == [run_id]  # the visibility check's read; the follower goes live on it
    monkeypatch.undo()
    r = await client.post(
        f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
    )
    assert r.status_code == 200
    await asyncio.wait_for(stream.task, 5)
    assert b"event: run.completed" in stream.bodies[-1]["body"]


async def test_a_stream_resumed_after_the_end_of_an_ended_run_closes_at_once(
    app: ASGIApp, engine: Engine, client: httpx.AsyncClient
) -> None:
    run_id = await created_waiting(client, engine, auth("admin"))
    r = await client.post(
        f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
    )
    assert r.status_code == 200
    assert (await settle(engine, run_id)).status == "completed"
    last = (await engine.store.read_events(run_id))[-1]["sequence"]
    for after in (last, last - 1):
        headers = {"authorization": auth("admin")["Authorization"], "last-event-id": str(after)}
        stream = Stream(app, f"/v1/runs/{run_id}/events", headers)
        await asyncio.wait_for(stream.task, 5)
        body = b"".join(m["body"] for m in stream.bodies)
        assert body.count(b"event: ") == last - after and stream.bodies[-1]["more_body"] is False
