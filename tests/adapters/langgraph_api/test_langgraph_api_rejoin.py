"""``langgraph_sdk``'s ``join_stream`` against ``/langgraph``: ``cancel_on_disconnect`` and ``Last-Event-ID``."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.schema import Command

from tests.conftest import TOKENS, auth


def client(url: str, who: str = "admin") -> Any:
    return get_client(url=url, api_key=TOKENS[who])


async def _status_after_disconnect(c: Any, tid: str, rid: str, **kw: Any) -> str:
    """Join the run's stream, read its first part, hang up; the run's status once it settles (or after ~3 s)."""
    stream = c.runs.join_stream(tid, rid, **kw)
    first = await anext(stream)
    assert first.event == "metadata" and first.data["run_id"] == rid
    await stream.aclose()
    status = ""
    for _ in range(60):
        status = (await c.runs.get(tid, rid))["status"]
        if status not in ("pending", "running"):
            break
        await asyncio.sleep(0.05)
    return status


async def test_cancel_on_disconnect_cancels_the_run(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    tid = thread["thread_id"]
    run = await c.runs.create(tid, "conformance-cancellable", input={"delayMs": 60_000})
    assert await _status_after_disconnect(c, tid, run["run_id"], cancel_on_disconnect=True) == "interrupted"
    async with httpx.AsyncClient(base_url=served.removesuffix("/langgraph"), headers=auth("admin")) as h:
        assert (await h.get(f"/v1/runs/{run['run_id']}")).json()["status"] == "cancelled"


async def test_a_stream_started_with_on_disconnect_cancel_cancels_its_run(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    tid = thread["thread_id"]
    stream = c.runs.stream(tid, "conformance-cancellable", input={"delayMs": 60_000}, on_disconnect="cancel")
    first = await anext(stream)
    await stream.aclose()
    status = ""
    for _ in range(60):
        status = (await c.runs.get(tid, first.data["run_id"]))["status"]
        if status not in ("pending", "running"):
            break
        await asyncio.sleep(0.05)
    assert status == "interrupted"


async def test_a_plain_disconnect_leaves_the_run_going(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    tid = thread["thread_id"]
    run = await c.runs.create(tid, "conformance-cancellable", input={"delayMs": 60_000})
    assert await _status_after_disconnect(c, tid, run["run_id"]) in ("pending", "running")
    await c.runs.cancel(tid, run["run_id"], wait=True)


async def test_cancel_on_disconnect_needs_the_right_to_cancel(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    run = await c.runs.create(thread["thread_id"], "conformance-cancellable", input={"delayMs": 60_000})
    reader = client(served, "reader")
    with pytest.raises(httpx.HTTPStatusError) as refused:
        async for _ in reader.runs.join_stream(thread["thread_id"], run["run_id"], cancel_on_disconnect=True):
            pass
    assert refused.value.response.status_code == 403
    assert (await c.runs.get(thread["thread_id"], run["run_id"]))["status"] in ("pending", "running")
    await c.runs.cancel(thread["thread_id"], run["run_id"], wait=True)


async def test_on_disconnect_cancel_from_a_caller_who_may_not_cancel(served: str) -> None:
    """useStream (agent-chat-ui) sends ``on_disconnect: "cancel"`` with every run request: an approver
    without the right to cancel is still served, and hanging up leaves the run going."""
    c, bob = client(served), client(served, "bob")
    thread = await c.threads.create()
    tid = thread["thread_id"]
    await c.runs.wait(tid, "conformance-approval", input={})
    parts = [
        p
        async for p in bob.runs.stream(
            tid, "conformance-approval", command=Command(resume="accept"), on_disconnect="cancel"
        )
    ]
    assert parts[0].event == "metadata" and (await c.threads.get(tid))["status"] == "idle"

    stream = bob.runs.stream(tid, "conformance-cancellable", input={"delayMs": 60_000}, on_disconnect="cancel")
    first = await anext(stream)
    await stream.aclose()
    await asyncio.sleep(0.5)
    assert (await c.runs.get(tid, first.data["run_id"]))["status"] in ("pending", "running")
    await c.runs.cancel(tid, first.data["run_id"], wait=True)


def _messages(parts: list[Any]) -> list[str]:
    return [p.data[0]["content"] for p in parts if p.event == "messages"]


async def test_rejoin_from_last_event_id_sends_what_came_after(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    tid = thread["thread_id"]
    modes = ["messages-tuple", "updates"]
    parts = [p async for p in c.runs.stream(tid, "demo-conversation", input={}, stream_mode=modes)]
    rid = parts[0].data["run_id"]
    said = _messages(parts)
    assert len(said) == 2
    # The parts that carried an id (SSE keeps the last id on the parts after them).
    marked = [i for i in range(1, len(parts)) if parts[i].id is not None and parts[i].id != parts[i - 1].id]
    assert marked, [(p.event, p.id) for p in parts]
    for i in marked:
        again = [p async for p in c.runs.join_stream(tid, rid, stream_mode=modes, last_event_id=parts[i].id)]
        assert _messages(again) == _messages(parts[i + 1 :])
        assert [p.data for p in again if p.event == "updates"] == [
            p.data for p in parts[i + 1 :] if p.event == "updates"
        ]
    # From before the first event: everything again.
    replay = [p async for p in c.runs.join_stream(tid, rid, stream_mode=modes, last_event_id="-1")]
    assert _messages(replay) == said
    # And with no Last-Event-ID, from now: nothing of the past.
    now = [p async for p in c.runs.join_stream(tid, rid, stream_mode=modes)]
    assert _messages(now) == []


@pytest.mark.parametrize("bad", ["soon", "999999", "-2"])
async def test_a_last_event_id_the_run_never_sent_is_refused(served: str, bad: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    run = await c.runs.create(thread["thread_id"], "conformance-approval", input={})
    await c.runs.join(thread["thread_id"], run["run_id"])
    with pytest.raises(httpx.HTTPStatusError) as refused:
        async for _ in c.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id=bad):
            pass
    assert refused.value.response.status_code == 400
    assert refused.value.response.json()["error"] == "validation_error"
