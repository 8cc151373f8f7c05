"""``langgraph_sdk`` reads a run's messages through ``/langgraph``: ``values.messages`` and the message modes.

Every message dict is read back with LangChain's own ``convert_to_messages``,
as a LangGraph frontend would turn it into a message object.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_messages
from langgraph_sdk import get_client
from langgraph_sdk.schema import Command

from tests.conftest import TOKENS


def client(url: str) -> Any:
    return get_client(url=url, api_key=TOKENS["admin"])


async def _parts(c: Any, thread_id: str, assistant: str, modes: list[str], **kw: Any) -> list[Any]:
    return [p async for p in c.runs.stream(thread_id, assistant, stream_mode=modes, **kw)]


def _tuples(parts: list[Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for p in parts:
        if p.event == "messages":
            message, metadata = p.data
            out.append((message, metadata))
    return out


async def test_conversation_turns_are_messages(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    tid = thread["thread_id"]
    first = await _parts(c, tid, "demo-conversation", ["values", "messages-tuple"], input={})
    prompt = "Where are you travelling, and why?"
    sent = _tuples(first)
    opening = "Hi! I will ask you three short questions about your trip."
    assert [m["content"] for m, _ in sent] == [opening, prompt]
    assert all(m["type"] == "ai" for m, _ in sent)
    [run] = await c.runs.list(tid)
    assert all(meta["run_id"] == run["run_id"] and meta["thread_id"] == tid for _, meta in sent)
    assert all(isinstance(meta["langgraph_node"], str) for _, meta in sent)
    last_values = [p.data for p in first if p.event == "values"][-1]
    assert [m["content"] for m in last_values["messages"]][-1] == prompt
    assert isinstance(convert_to_messages(last_values["messages"])[-1], AIMessage)

    second = await _parts(c, tid, "demo-conversation", ["values", "messages-tuple"], command=Command(resume="Lisbon"))
    sent_now = _tuples(second)
    # Only what this run request added: the reply and the next prompt, each once.
    assert [(m["type"], m["content"]) for m, _ in sent_now] == [("human", "Lisbon"), ("ai", "When, and for how long?")]
    assert len({m["id"] for m, _ in sent + sent_now}) == len(sent) + len(sent_now)
    state = await c.threads.get_state(tid)
    shown = convert_to_messages(state["values"]["messages"])
    assert [type(m) for m in shown[-3:]] == [AIMessage, HumanMessage, AIMessage]
    assert shown[-2].content == "Lisbon" and shown[-3].content == prompt
    assert [m.id for m in shown][-2:] == [m["id"] for m, _ in sent_now]


async def test_served_agent_messages_in_langgraph_shape(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    tid = thread["thread_id"]
    asked = await _parts(
        c, tid, "batch", ["values", "messages-tuple"], input={"messages": [{"role": "user", "content": "launch it"}]}
    )
    [(said, _)] = _tuples(asked)
    assert (said["type"], said["content"]) == ("ai", "Sending it now.")
    assert [c["id"] for c in said["tool_calls"]] == ["call_mail", "call_rm"]
    waiting = [p.data for p in asked if p.event == "values"][-1]
    assert isinstance(convert_to_messages(waiting["messages"])[0], HumanMessage)

    decisions = [{"type": "approve"}, {"type": "reject", "message": "keep the draft"}]
    done = await _parts(c, tid, "batch", ["values", "messages-tuple"], command=Command(resume={"decisions": decisions}))
    added = _tuples(done)
    assert [m["type"] for m, _ in added] == ["tool", "tool", "ai"]
    assert {m["tool_call_id"] for m, _ in added[:2]} == {"call_mail", "call_rm"}
    final = [p.data for p in done if p.event == "values"][-1]
    messages = convert_to_messages(final["messages"])
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage, ToolMessage, AIMessage]
    call = messages[1]
    assert isinstance(call, AIMessage)
    assert [(t["id"], t["name"]) for t in call.tool_calls] == [("call_mail", "send_email"), ("call_rm", "delete_file")]
    assert call.tool_calls[0]["args"] == {"to": "all@acme.test", "subject": "Launch"}
    assert len({m.id for m in messages}) == 5 and all(m.id for m in messages)


async def test_messages_mode_sends_metadata_then_complete_messages(served: str) -> None:
    c = client(served)
    thread = await c.threads.create()
    parts = await _parts(c, thread["thread_id"], "demo-conversation", ["messages"], input={})
    events = [p.event for p in parts if p.event.startswith("messages")]
    assert events and events[0] == "messages/metadata" and "messages/complete" in events
    completes = [m for p in parts if p.event == "messages/complete" for m in p.data]
    metadata = {k for p in parts if p.event == "messages/metadata" for k in p.data}
    assert {m["id"] for m in completes} == metadata
    assert completes[-1]["content"] == "Where are you travelling, and why?"
