"""LangGraph's own Python client (``langgraph_sdk``) against ``/langgraph`` on real uvicorn.

Everything goes through ``get_client(url=…, api_key=…)``: the client sends its
key as ``x-api-key`` and parses every answer itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.schema import Command

from adapters.langgraph_api import langgraph_routes
from bridge import Engine, KeyRing
from bridge.host.http import create_app
from tests.conftest import KEYS, TOKENS, auth
from tests.server import uvicorn_server


@pytest.fixture
async def lg(engine: Engine) -> AsyncIterator[str]:
    """The host with the LangGraph API on loopback; yields the ``/langgraph`` base URL."""
    app = create_app(
        engine, KeyRing(KEYS.values()), manage_engine=False, keepalive_s=0.2, extra_routes=langgraph_routes(engine)
    )
    async with uvicorn_server(app) as url:
        yield f"{url}/langgraph"


def client(url: str, who: str = "admin") -> Any:
    return get_client(url=url, api_key=TOKENS[who])


async def test_assistants_threads_and_an_approval(lg: str) -> None:
    c = client(lg)
    assistants = await c.assistants.search(limit=100)
    assert "conformance-approval" in {a["assistant_id"] for a in assistants}
    assert (await c.assistants.get("conformance-approval"))["graph_id"] == "conformance-approval"
    thread = await c.threads.create(metadata={"ticket": "T-1"})
    parts = [
        p async for p in c.runs.stream(thread["thread_id"], "conformance-approval", input={}, stream_mode="values")
    ]
    assert parts[0].event == "metadata"
    [last] = [p for p in parts if p.event == "values" and "__interrupt__" in p.data]
    [interrupt] = last.data["__interrupt__"]
    value = interrupt["value"]
    assert value["config"] == {"allow_accept": True, "allow_edit": False, "allow_respond": False, "allow_ignore": True}
    assert value["action_request"]["action"] == "Conformance approval"
    shown = await c.threads.get(thread["thread_id"])
    assert shown["status"] == "interrupted"
    assert [i["id"] for items in shown["interrupts"].values() for i in items] == [interrupt["id"]]
    state = await c.threads.get_state(thread["thread_id"])
    assert state["tasks"][0]["interrupts"][0]["id"] == interrupt["id"]
    found = await c.threads.search(status="interrupted", metadata={"ticket": "T-1"})
    assert [t["thread_id"] for t in found] == [thread["thread_id"]]
    assert await c.threads.search(status="idle", metadata={"ticket": "T-1"}) == []

    # A decision the gate does not offer is refused; the interrupt stays open.
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await c.runs.wait(thread["thread_id"], "conformance-approval", command=Command(resume={"action": "refine"}))
    assert refused.value.response.status_code == 400
    assert (await c.threads.get(thread["thread_id"]))["status"] == "interrupted"

    # Agent Inbox's response shape answers it.
    result = await c.runs.wait(
        thread["thread_id"], "conformance-approval", command=Command(resume=[{"type": "accept", "args": None}])
    )
    assert "__interrupt__" not in result
    done = await c.threads.get(thread["thread_id"])
    assert done["status"] == "idle" and done["interrupts"] == {}
    [run] = await c.runs.list(thread["thread_id"])
    assert (await c.runs.get(thread["thread_id"], run["run_id"]))["status"] == "success"
    assert len(await c.threads.get_history(thread["thread_id"])) == 1


async def test_clarification_with_a_bare_value_and_bearer_auth(lg: str) -> None:
    c = get_client(url=lg, api_key=None, headers=auth("bob"))
    thread = await c.threads.create()
    waiting = await c.runs.wait(thread["thread_id"], "conformance-clarification", input={})
    [interrupt] = waiting["__interrupt__"]
    assert interrupt["value"]["kind"] == "clarification"
    assert interrupt["value"]["questions"][0]["id"] == "q1"
    parts = [
        p
        async for p in c.runs.stream(
            thread["thread_id"], "conformance-clarification", command=Command(resume="blue"), stream_mode="updates"
        )
    ]
    updates = [p.data for p in parts if p.event == "updates"]
    assert updates and not any("__interrupt__" in u for u in updates)
    assert (await c.threads.get(thread["thread_id"]))["status"] == "idle"


async def test_another_tenant_sees_no_thread(lg: str) -> None:
    mine = await client(lg).threads.create()
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await client(lg, "other").threads.get(mine["thread_id"])
    assert caught.value.response.status_code == 404
    assert caught.value.response.json()["error"] == "not_found"
    assert await client(lg, "other").threads.search() == []
    with pytest.raises(httpx.HTTPStatusError) as anonymous:
        await get_client(url=lg, api_key=None).threads.get(mine["thread_id"])
    assert anonymous.value.response.status_code == 401


async def test_quorum_vote_over_langgraph_and_rest_agree(lg: str, engine: Engine) -> None:
    c = client(lg)
    thread = await c.threads.create()
    waiting = await c.runs.wait(thread["thread_id"], "conformance-interrupt-quorum", input={})
    [interrupt] = waiting["__interrupt__"]
    assert interrupt["value"]["openwop"]["votes"]["required"] >= 2
    [run] = await c.runs.list(thread["thread_id"])
    async with httpx.AsyncClient(base_url=lg.removesuffix("/langgraph"), headers=auth("admin")) as rest:
        assert (await rest.get(f"/v1/runs/{run['run_id']}")).json()["interrupt"]["interruptId"] == interrupt["id"]
    # One vote from a LangGraph client leaves it open, on both surfaces.
    after = await c.runs.wait(thread["thread_id"], "conformance-interrupt-quorum", command=Command(resume="accept"))
    assert [i["id"] for i in after["__interrupt__"]] == [interrupt["id"]]
    assert after["__interrupt__"][0]["value"]["openwop"]["votes"]["votes"]


async def test_resume_without_an_open_interrupt_is_refused(lg: str) -> None:
    c = client(lg)
    thread = await c.threads.create()
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await c.runs.wait(thread["thread_id"], "conformance-approval", command=Command(resume="accept"))
    assert caught.value.response.status_code == 409
