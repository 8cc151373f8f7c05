"""``langgraph_sdk`` drives conversations and batched tool-call reviews through ``/langgraph``."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.schema import Command

from openwop_bridge import Engine
from tests.conftest import TOKENS


def client(url: str) -> Any:
    return get_client(url=url, api_key=TOKENS["admin"])


async def test_demo_conversation_turn_by_turn(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    first = await c.runs.wait(thread["thread_id"], "demo-conversation", input={})
    [turn] = first["__interrupt__"]
    assert turn["value"]["kind"] == "conversation.exchange"
    assert turn["value"]["prompt"] == "Where are you travelling, and why?"
    replies = ["Lisbon, for work", "In May, a week", "Two"]
    result = first
    for reply in replies:
        assert len(result["__interrupt__"]) == 1
        result = await c.runs.wait(thread["thread_id"], "demo-conversation", command=Command(resume=reply))
    assert "__interrupt__" not in result
    assert result["outcome"] == {"replies": replies} and result["reason"] == "max-turns"
    assert (await c.threads.get(thread["thread_id"]))["status"] == "idle"


async def test_conversation_closed_early_and_a_bad_turn_refused(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    [turn] = (await c.runs.wait(thread["thread_id"], "demo-conversation", input={}))["__interrupt__"]
    with pytest.raises(httpx.HTTPStatusError) as bad:
        await c.runs.wait(thread["thread_id"], "demo-conversation", command=Command(resume={"operation": "explode"}))
    assert bad.value.response.status_code == 400
    still = (await c.threads.get(thread["thread_id"]))["interrupts"]
    assert [i["id"] for items in still.values() for i in items] == [turn["id"]]
    done = await c.runs.wait(thread["thread_id"], "demo-conversation", command=Command(resume={"operation": "close"}))
    assert "__interrupt__" not in done
    assert (await c.threads.get(thread["thread_id"]))["status"] == "idle"


async def test_served_conversation_graph(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    waiting = await c.runs.wait(thread["thread_id"], "trip", input={})
    for reply in ("Lisbon", "May", "Two"):
        assert len(waiting["__interrupt__"]) == 1
        waiting = await c.runs.wait(thread["thread_id"], "trip", command=Command(resume=reply))
    assert "__interrupt__" not in waiting
    assert waiting["replies"] == ["Lisbon", "May", "Two"]


async def _batch_review(c: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A new thread whose ``batch`` agent waits on its review of two tool calls; the thread and the interrupt."""
    thread = await c.threads.create()
    waiting = await c.runs.wait(
        thread["thread_id"], "batch", input={"messages": [{"role": "user", "content": "launch it"}]}
    )
    [review] = waiting["__interrupt__"]
    return thread, review


async def test_batched_tool_calls_answered_with_hitl_decisions(served: str) -> None:
    c = client(served)
    thread, review = await _batch_review(c)
    # Too few decisions for two calls: refused, still open.
    with pytest.raises(httpx.HTTPStatusError) as short:
        await c.runs.wait(thread["thread_id"], "batch", command=Command(resume={"decisions": [{"type": "approve"}]}))
    assert short.value.response.status_code == 400
    assert (await c.threads.get(thread["thread_id"]))["status"] == "interrupted"
    decisions = [{"type": "approve"}, {"type": "reject", "message": "keep the draft"}]
    done = await c.runs.wait(thread["thread_id"], "batch", command=Command(resume={"decisions": decisions}))
    assert "__interrupt__" not in done
    tools = {m["tool_call_id"]: m["content"] for m in done["messages"] if m["type"] == "tool"}
    assert tools["call_mail"].startswith("sent") and "keep the draft" in tools["call_rm"]
    assert review["id"] not in str((await c.threads.get(thread["thread_id"]))["interrupts"])


async def test_batched_review_in_the_middlewares_own_shape(served: str, engine: Engine) -> None:
    c = client(served)
    thread, review = await _batch_review(c)
    value = review["value"]
    assert [(r["name"], r["args"]) for r in value["action_requests"]] == [
        ("send_email", {"to": "all@acme.test", "subject": "Launch"}),
        ("delete_file", {"path": "/tmp/draft.txt"}),
    ]
    assert all(isinstance(r["description"], str) for r in value["action_requests"])
    assert value["review_configs"] == [
        {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject", "respond"]},
        {"action_name": "delete_file", "allowed_decisions": ["approve", "reject"]},
    ]
    assert value["openwop"]["interruptId"] == review["id"]
    state = await c.threads.get_state(thread["thread_id"])
    assert state["tasks"][0]["interrupts"][0]["value"]["review_configs"] == value["review_configs"]

    # Approving every call is an OpenWOP accept.
    done = await c.runs.wait(
        thread["thread_id"], "batch", command=Command(resume={"decisions": [{"type": "approve"}] * 2})
    )
    assert "__interrupt__" not in done
    record = await engine.store.get_interrupt(review["id"])
    assert record is not None and record.resolution is not None
    answer = record.resolution["resumeValue"]
    assert answer["action"] == "accept" and "editedArtifactData" not in answer
    tools = [m["content"] for m in done["messages"] if m["type"] == "tool"]
    assert [t.startswith(p) for t, p in zip(tools, ("sent", "deleted"), strict=True)] == [True, True]


async def test_batched_review_rejected_whole(served: str, engine: Engine) -> None:
    c = client(served)
    thread, review = await _batch_review(c)
    decisions = [{"type": "reject", "message": "not today"}] * 2
    done = await c.runs.wait(thread["thread_id"], "batch", command=Command(resume={"decisions": decisions}))
    record = await engine.store.get_interrupt(review["id"])
    assert record is not None and record.resolution is not None
    answer = record.resolution["resumeValue"]
    assert (answer["action"], answer["feedback"]) == ("reject", "not today") and "editedArtifactData" not in answer
    tools = {m["tool_call_id"]: m["content"] for m in done["messages"] if m["type"] == "tool"}
    assert "not today" in tools["call_mail"] and "not today" in tools["call_rm"]


async def test_mixed_decisions_on_a_batch_whose_calls_allow_no_edit(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    tid = thread["thread_id"]
    waiting = await c.runs.wait(tid, "strict-batch", input={"messages": [{"role": "user", "content": "launch it"}]})
    [review] = waiting["__interrupt__"]
    assert {tuple(r["allowed_decisions"]) for r in review["value"]["review_configs"]} == {("approve", "reject")}
    # A decision neither call allows is still refused, and the review stays open.
    edit = {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "me@acme.test"}}}
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await c.runs.wait(tid, "strict-batch", command=Command(resume={"decisions": [edit, {"type": "approve"}]}))
    assert refused.value.response.status_code == 400
    assert (await c.threads.get(tid))["status"] == "interrupted"

    decisions = [{"type": "approve"}, {"type": "reject", "message": "keep the draft"}]
    done = await c.runs.wait(tid, "strict-batch", command=Command(resume={"decisions": decisions}))
    assert "__interrupt__" not in done
    tools = {m["tool_call_id"]: m["content"] for m in done["messages"] if m["type"] == "tool"}
    assert tools["call_mail"].startswith("sent") and "keep the draft" in tools["call_rm"]
