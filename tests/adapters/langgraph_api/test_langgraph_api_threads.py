"""``langgraph_sdk`` against ``/langgraph``: threads know their assistant, and an approval reads well in an inbox.

LangGraph's server puts ``graph_id`` and ``assistant_id`` in the metadata of a
thread a run is made on; agent-chat-ui lists a person's threads by searching
for them (``metadata: {graph_id}``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.schema import Command

from tests.conftest import TOKENS


def client(url: str, who: str = "admin") -> Any:
    return get_client(url=url, api_key=TOKENS[who])


async def test_a_run_puts_its_assistant_in_the_threads_metadata(served: str) -> None:
    c = client(served)
    thread = await c.threads.create(metadata={"ticket": "T-7"})
    assert thread["metadata"] == {"ticket": "T-7"}
    await c.runs.wait(thread["thread_id"], "conformance-approval", input={})
    shown = await c.threads.get(thread["thread_id"])
    assert shown["metadata"] == {
        "ticket": "T-7",
        "graph_id": "conformance-approval",
        "assistant_id": "conformance-approval",
    }
    other = await c.threads.create()
    await c.runs.wait(other["thread_id"], "conformance-clarification", input={})

    # agent-chat-ui's thread list: the threads of one assistant.
    found = await c.threads.search(metadata={"graph_id": "conformance-approval"}, limit=100)
    assert [t["thread_id"] for t in found] == [thread["thread_id"]]
    found = await c.threads.search(metadata={"assistant_id": "conformance-clarification"}, limit=100)
    assert [t["thread_id"] for t in found] == [other["thread_id"]]


async def test_a_thread_made_by_its_first_run_carries_its_assistant(served: str) -> None:
    c = client(served)
    await c.runs.wait("t-made-by-run", "conformance-approval", input={}, if_not_exists="create")
    shown = await c.threads.get("t-made-by-run")
    assert shown["metadata"] == {"graph_id": "conformance-approval", "assistant_id": "conformance-approval"}


async def test_an_approval_without_an_artifact_shows_no_null_artifact(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    result = await c.runs.wait(thread["thread_id"], "demo-governed-release", input={})
    [interrupt] = result["__interrupt__"]
    value = interrupt["value"]
    assert value["action_request"] == {"action": "Promote build 2026.11.21-3 to production", "args": {}}
    assert value["description"]


async def test_a_refused_run_on_a_missing_thread_leaves_no_thread(served: str) -> None:
    c = client(served)
    for bad in (
        {"command": Command(resume={"action": "accept"})},  # nothing to resume on a new thread
        {"input": {}, "stream_mode": ["no-such-mode"]},
    ):
        try:
            await c.runs.create("t-refused", "conformance-approval", if_not_exists="create", **bad)
        except httpx.HTTPStatusError as exc:
            assert exc.response.status_code in (400, 409), exc.response.text
        else:
            raise AssertionError(f"accepted {bad}")
    missing = await c.threads.search(ids=["t-refused"])
    assert missing == []
    try:
        await c.threads.get("t-refused")
    except httpx.HTTPStatusError as exc:
        assert exc.response.status_code == 404
    else:
        raise AssertionError("the refused run left its thread")


async def test_a_thread_whose_run_waits_on_a_waiting_child_is_interrupted(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    run = await c.runs.create(thread["thread_id"], "conformance-interrupt-parent-child-cancel", input={})
    for _ in range(500):
        shown = await c.threads.get(thread["thread_id"])
        if shown["status"] == "interrupted":
            break
        await asyncio.sleep(0.01)
    assert shown["status"] == "interrupted"
    state = await c.threads.get_state(thread["thread_id"])
    assert state["metadata"]["openwop_status"] == "waiting-approval"
    assert (await c.runs.get(thread["thread_id"], run["run_id"]))["status"] == "interrupted"
