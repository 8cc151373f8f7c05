"""Helpers for the tests that encode the official v2 conformance scenarios (``conformance/src/scenarios/v2-*``).

The scenarios drive a host as a black box: they create runs over v2, read ids as the
host returned them, percent-encode those ids into paths (``encodeURIComponent``), and
wait on the snapshot's status. These helpers do the same against the host on uvicorn.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from tests.conftest import auth

V2 = {"OpenWOP-Version": "2.0"}
TERMINAL = ("completed", "failed", "cancelled")
#: Event types that are forward execution: none may follow a run's terminal event (events.md §The terminal event).
FORWARD = ("node.started", "node.completed", "node.failed", "node.skipped", "interrupt.requested")


def h(**extra: str) -> dict[str, str]:
    """The scenario driver's headers: the admin key and ``OpenWOP-Version: 2.0``."""
    return {**auth("admin"), **V2, **extra}


def enc(run_id: str) -> str:
    """A bound id as the scenarios put it in a path: ``encodeURIComponent``."""
    return quote(run_id, safe="")


async def create(http: httpx.AsyncClient, workflow_id: str, **body: Any) -> str:
    """``POST /runs`` and the bound ``runId`` it returned (201 asserted)."""
    resp = await http.post("/runs", json={"workflowId": workflow_id, **body}, headers=h())
    assert resp.status_code == 201, resp.text
    run_id: str = resp.json()["runId"]
    return run_id


async def wait_status(
    http: httpx.AsyncClient, run_id: str, wanted: tuple[str, ...], timeout_s: float = 10
) -> dict[str, Any]:
    """The snapshot once its status is one of ``wanted`` (the last one read when the time runs out)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        resp = await http.get(f"/runs/{enc(run_id)}", headers=h())
        snap: dict[str, Any] = resp.json()
        if (resp.status_code == 200 and snap["status"] in wanted) or asyncio.get_running_loop().time() > deadline:
            return snap
        await asyncio.sleep(0.05)


async def created_settled(http: httpx.AsyncClient, workflow_id: str = "conformance-noop", **body: Any) -> str:
    """A run created over v2 and awaited to a terminal status."""
    run_id = await create(http, workflow_id, **body)
    assert (await wait_status(http, run_id, TERMINAL))["status"] in TERMINAL
    return run_id


async def suspended(http: httpx.AsyncClient, workflow_id: str = "conformance-approval") -> str:
    """A run created over v2 and awaited until it waits on its approval gate."""
    run_id = await create(http, workflow_id)
    assert (await wait_status(http, run_id, ("waiting-approval", *TERMINAL)))["status"] == "waiting-approval"
    return run_id


async def poll(http: httpx.AsyncClient, run_id: str, query: str = "") -> httpx.Response:
    """``GET /runs/{runId}/events/poll?timeout=1<query>``."""
    return await http.get(f"/runs/{enc(run_id)}/events/poll?timeout=1{query}", headers=h())


async def events(http: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    """The run's whole log as the poll returns it."""
    resp = await poll(http, run_id)
    assert resp.status_code == 200, resp.text
    docs: list[dict[str, Any]] = resp.json()["events"]
    return docs


@dataclass
class Stream:
    """What a subscription saw: status, frames ``(event, id, data)``, and whether the server closed it."""

    status: int
    frames: list[tuple[str | None, str | None, str]] = field(default_factory=list)
    closed_by_server: bool = False
    body: Any = None

    def ids(self) -> list[int]:
        """The frames' ``id:`` fields as integers (every frame must carry one)."""
        return [int(fid) for _, fid, _ in self.frames if fid is not None]

    def docs(self) -> list[dict[str, Any]]:
        """The events the frames carry, a batch frame's array flattened."""
        out: list[dict[str, Any]] = []
        for _, _, data in self.frames:
            parsed = json.loads(data)
            out.extend(parsed if isinstance(parsed, list) else [parsed])
        return out


async def subscribe(http: httpx.AsyncClient, path: str, timeout_s: float = 8, **headers: str) -> Stream:
    """Read an SSE stream until the server closes it (or ``timeout_s``), as the scenarios' ``subscribe`` does."""
    seen = Stream(0)

    async def read() -> None:
        async with http.stream("GET", path, headers=h(Accept="text/event-stream", **headers)) as resp:
            seen.status = resp.status_code
            if resp.status_code != 200:
                seen.body = json.loads(await resp.aread())
                return
            event: str | None = None
            fid: str | None = None
            data: list[str] = []
            async for line in resp.aiter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("id:"):
                    fid = line[3:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif line == "" and data:
                    seen.frames.append((event, fid, "\n".join(data)))
                    event, fid, data = None, None, []
            seen.closed_by_server = True

    try:
        await asyncio.wait_for(read(), timeout_s)
    except TimeoutError:
        pass
    return seen


def code_of(resp: httpx.Response) -> str | None:
    """The error envelope's code, if the body is one."""
    try:
        body = resp.json()
    except ValueError:
        return None
    return body.get("error") if isinstance(body, dict) else None
