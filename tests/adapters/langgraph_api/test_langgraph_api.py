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

from openwop_bridge import Engine, KeyRing
from openwop_bridge.host.app import create_app
from openwop_bridge.langgraph_api import langgraph_routes
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


async def test_served_graph_one_interrupt_edited_from_agent_inbox(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    waiting = await c.runs.wait(thread["thread_id"], "publish", input={"text": "v1"})
    [interrupt] = waiting["__interrupt__"]
    assert interrupt["value"]["config"]["allow_edit"] is True
    assert interrupt["value"]["action_request"]["args"] == {"text": "v1"}
    edit = {"type": "edit", "args": {"action": "publish", "args": {"text": "v2"}}}
    done = await c.runs.wait(thread["thread_id"], "publish", command=Command(resume=[edit]))
    assert "__interrupt__" not in done
    assert done["decision"] == "edit-accept" and done["text"] == "v2"


async def test_served_graph_two_parallel_interrupts_resumed_by_id_map(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    waiting = await c.runs.wait(thread["thread_id"], "fan", input={"topics": ["legal", "finance"]})
    interrupts = waiting["__interrupt__"]
    assert sorted(i["value"]["question"] for i in interrupts) == ["Sign off finance?", "Sign off legal?"]
    state = await c.threads.get_state(thread["thread_id"])
    assert sorted(i["id"] for t in state["tasks"] for i in t["interrupts"]) == sorted(i["id"] for i in interrupts)

    # One bare value for two interrupts, or a value the graph's schema refuses: nothing is answered.
    for bad in ({"ok": True}, {interrupts[0]["id"]: {"ok": "yes"}, interrupts[1]["id"]: {"ok": True}}):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await c.runs.wait(thread["thread_id"], "fan", command=Command(resume=bad))
        assert refused.value.response.status_code == 400
        still = (await c.threads.get(thread["thread_id"]))["interrupts"]
        assert sorted(i["id"] for items in still.values() for i in items) == sorted(i["id"] for i in interrupts)

    answers = {i["id"]: {"ok": i["value"]["question"] == "Sign off legal?"} for i in interrupts}
    done = await c.runs.wait(thread["thread_id"], "fan", command=Command(resume=answers))
    assert "__interrupt__" not in done
    assert sorted((a["topic"], a["ok"]) for a in done["answers"]) == [("finance", False), ("legal", True)]


async def test_served_agent_tool_calls_answered_with_hitl_decisions(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    waiting = await c.runs.wait(
        thread["thread_id"], "agent", input={"messages": [{"role": "user", "content": "launch it"}]}
    )
    calls = {i["value"]["action_request"]["action"]: i for i in waiting["__interrupt__"]}
    assert set(calls) == {"send_email", "delete_file"}
    assert calls["delete_file"]["value"]["config"]["allow_edit"] is False
    order = [i["value"]["action_request"]["action"] for i in waiting["__interrupt__"]]
    decisions = [
        {"type": "approve"} if name == "send_email" else {"type": "reject", "message": "keep it"} for name in order
    ]
    done = await c.runs.wait(thread["thread_id"], "agent", command=Command(resume={"decisions": decisions}))
    assert "__interrupt__" not in done
    assert (await c.threads.get(thread["thread_id"]))["status"] == "idle"


async def test_history_lists_each_runs_state_newest_first_one_at_a_time(lg: str) -> None:
    """``threads/{id}/history`` is written one run's state at a time; ``limit`` keeps the newest."""
    c = client(lg)
    thread = await c.threads.create()
    for n in range(3):
        await c.runs.wait(thread["thread_id"], "conformance-noop", input={"n": n})
    history = await c.threads.get_history(thread["thread_id"])
    assert len(history) == 3
    assert len({h["checkpoint"]["checkpoint_id"] for h in history}) == 3
    started = [(await c.runs.list(thread["thread_id"]))[i]["run_id"] for i in range(3)]
    assert sorted(h["metadata"]["run_id"] for h in history) == sorted(started)
    assert [h["created_at"] for h in history] == sorted((h["created_at"] for h in history), reverse=True)
    assert await c.threads.get_history(thread["thread_id"], limit=2) == history[:2]
    async with httpx.AsyncClient() as raw:
        r = await raw.post(f"{lg}/threads/{thread['thread_id']}/history", headers=auth("admin"), json={"limit": 1})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == history[:1]
