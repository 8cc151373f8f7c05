"""The AG-UI adapter over real uvicorn: runs, interrupts out, resumes in, conversations, tool calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from ag_ui.core import Event
from pydantic import TypeAdapter

from openwop_bridge import Engine, NodeContext, Workflow, approval, clarification
from openwop_bridge.agui import agui_routes, mount_agui, threads
from openwop_bridge.core.auth import KeyRing, make_key
from openwop_bridge.host.app import create_app
from openwop_bridge.runtime.tools import approved_tool_call
from tests.conftest import KEYS, auth
from tests.helpers import ADMIN, alice_away, answered_for_alice, event_types, settle, two_sign_offs, unanswered
from tests.server import uvicorn_server

EVENT = TypeAdapter(Event)


class Agui:
    """A tiny AG-UI client over httpx that validates every event with the ag_ui models."""

    def __init__(self, client: httpx.AsyncClient, who: str = "admin") -> None:
        self.client = client
        self.who = who
        self.counter = 0

    async def run(self, workflow: str, thread: str, *, status: int = 200, **body: Any) -> list[dict[str, Any]]:
        self.counter += 1
        payload = {
            "threadId": thread,
            "runId": f"agui-run-{self.counter}",
            "messages": [],
            "protocolVersion": "1.0",
            **body,
        }
        declared = payload["protocolVersion"] is not None
        if not declared:
            del payload["protocolVersion"]  # a client older than 1.0 declares no version
        async with self.client.stream("POST", f"/agui/{workflow}", json=payload, headers=auth(self.who)) as r:
            if r.status_code != 200:
                await r.aread()
                assert r.status_code == status, r.text
                return [r.json()]
            assert status == 200 and r.headers["content-type"].startswith("text/event-stream")
            events = []
            async for line in r.aiter_lines():
                if line.startswith("data: "):
                    doc = json.loads(line[6:])
                    EVENT.validate_python(doc)  # every event is a valid AG-UI 1.0 event
                    events.append(doc)
        assert events[0]["type"] == "RUN_STARTED" and events[0].get("protocolVersion") == ("1.0" if declared else None)
        assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")
        return events


def said(events: list[dict[str, Any]], role: str = "assistant") -> list[str]:
    """Text of the streamed messages with this role, one string per message."""
    roles = {e["messageId"]: e.get("role") for e in events if e["type"] == "TEXT_MESSAGE_START"}
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT" and roles[e["messageId"]] == role]


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def interrupts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outcome = events[-1].get("outcome") or {}
    assert outcome.get("type") == "interrupt", events[-1]
    result: list[dict[str, Any]] = outcome["interrupts"]
    return result


@pytest.fixture
async def agui(engine: Engine) -> AsyncIterator[Agui]:
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False, extra_routes=agui_routes(engine))
    async with uvicorn_server(app) as url, httpx.AsyncClient(base_url=url, timeout=15) as client:
        yield Agui(client)


def _two_gates(engine: Engine) -> None:
    two_sign_offs(engine, "two-gates", ["accept", "reject", "edit-accept"])


async def test_capabilities(agui: Agui, engine: Engine) -> None:
    _two_gates(engine)
    caps = (await agui.client.get("/agui/two-gates/capabilities", headers=auth("admin"))).json()
    assert caps["humanInTheLoop"] == {
        "supported": True,
        "interrupts": True,
        "approvals": True,
        "approveWithEdits": True,
    }
    noop = (await agui.client.get("/agui/conformance-noop/capabilities", headers=auth("admin"))).json()
    assert noop["humanInTheLoop"]["approvals"] is False and noop["humanInTheLoop"]["approveWithEdits"] is False
    assert noop["humanInTheLoop"]["interrupts"] is False and noop["humanInTheLoop"]["supported"] is False
    assert noop["transport"]["resumable"] is False  # a reconnect re-emits; there are no sequence numbers
    plain = (await agui.client.get("/agui/conformance-approval/capabilities", headers=auth("admin"))).json()
    assert plain["humanInTheLoop"]["approvals"] is True and plain["humanInTheLoop"]["approveWithEdits"] is False
    parent = Workflow("parent-of-approval")
    parent.node("child", type_id="core.subWorkflow", config={"workflowId": "conformance-approval"})
    parent.register(engine)
    nested = (await agui.client.get("/agui/parent-of-approval/capabilities", headers=auth("admin"))).json()
    assert nested["humanInTheLoop"]["approvals"] is True and nested["humanInTheLoop"]["interrupts"] is True


async def test_edited_args_on_a_plain_gate_are_the_edited_artifact(agui: Agui, engine: Engine) -> None:
    wf = Workflow("editable")
    wf.node(
        "gate",
        type_id="core.approvalGate",
        config={"title": "Send?", "actions": ["accept", "reject", "edit-accept"], "artifactData": {"x": 1}},
    )
    wf.register(engine)
    [it] = interrupts(await agui.run("editable", "th-edit"))
    resume = [{"interruptId": it["id"], "status": "resolved", "payload": {"approved": True, "editedArgs": {"x": 2}}}]
    done = await agui.run("editable", "th-edit", resume=resume)
    assert done[-1]["outcome"]["type"] == "success"
    record = await engine.store.get_interrupt(it["id"])
    assert record is not None
    value = record.resolution["resumeValue"]
    assert value["action"] == "edit-accept" and value["editedArtifactData"] == {"x": 2}


async def test_approval_round_trip(agui: Agui, engine: Engine) -> None:
    first = await agui.run("conformance-approval", "th-1")
    assert types(first) == [
        "RUN_STARTED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "STATE_SNAPSHOT",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]
    [it] = interrupts(first)
    record = await engine.store.get_interrupt(it["id"])
    assert record is not None and record.status == "pending"
    assert it["reason"] == "confirmation" and it["metadata"]["openwop"]["kind"] == "approval"
    assert [v["properties"]["action"]["const"] for v in it["responseSchema"]["oneOf"]] == ["accept", "reject"]
    state = next(e for e in first if e["type"] == "STATE_SNAPSHOT")["snapshot"]
    assert state["openwop"]["status"] == "waiting-approval"
    second = await agui.run(
        "conformance-approval",
        "th-1",
        resume=[{"interruptId": it["id"], "status": "resolved", "payload": {"action": "accept"}}],
    )
    assert second[-1]["outcome"] == {"type": "success"} and second[0]["runId"] != first[0]["runId"]
    assert second[-1]["result"]["gate"]["decidedBy"] == "alice"


async def test_two_interrupts_answered_in_one_resume(agui: Agui, engine: Engine) -> None:
    _two_gates(engine)
    open_ = interrupts(await agui.run("two-gates", "th-2"))
    assert len(open_) == 2 and len({i["id"] for i in open_}) == 2
    done = await agui.run(
        "two-gates",
        "th-2",
        resume=[
            {"interruptId": open_[0]["id"], "status": "resolved", "payload": {"approved": True}},
            {"interruptId": open_[1]["id"], "status": "resolved", "payload": {"action": "accept"}},
        ],
    )
    assert done[-1]["outcome"]["type"] == "success"


async def test_partial_resume_re_interrupts_with_what_is_left(agui: Agui, engine: Engine) -> None:
    _two_gates(engine)
    legal, finance = interrupts(await agui.run("two-gates", "th-3"))
    again = interrupts(
        await agui.run(
            "two-gates",
            "th-3",
            resume=[{"interruptId": legal["id"], "status": "resolved", "payload": {"approved": True}}],
        )
    )
    assert [i["id"] for i in again] == [finance["id"]]
    done = await agui.run(
        "two-gates",
        "th-3",
        resume=[{"interruptId": finance["id"], "status": "resolved", "payload": {"approved": True}}],
    )
    assert done[-1]["outcome"]["type"] == "success"


async def test_one_invalid_entry_refuses_the_whole_request(agui: Agui, engine: Engine) -> None:
    _two_gates(engine)
    legal, finance = interrupts(await agui.run("two-gates", "th-4"))
    [body] = await agui.run(
        "two-gates",
        "th-4",
        status=400,
        resume=[
            {"interruptId": legal["id"], "status": "resolved", "payload": {"approved": True}},
            {"interruptId": finance["id"], "status": "resolved", "payload": {"action": "edit-accept"}},
        ],
    )
    assert body["error"] == "validation_error" and body["details"]["entry"] == 1
    assert body["details"]["interruptId"] == finance["id"] and "resume[1]" in body["message"]
    for it in (legal, finance):
        assert (await engine.store.get_interrupt(it["id"])).status == "pending"


async def test_unknown_ids_are_ignored_with_a_warning_and_reconnect_reemits(agui: Agui, engine: Engine) -> None:
    [it] = interrupts(await agui.run("conformance-approval", "th-5"))
    run_id = it["metadata"]["openwop"]["runId"]
    before = await event_types(engine, run_id)
    events = await agui.run(
        "conformance-approval",
        "th-5",
        resume=[{"interruptId": "int_nope", "status": "resolved", "payload": {"approved": True}}],
    )
    warning = next(e for e in events if e["type"] == "CUSTOM")
    assert warning["name"] == "openwop.warning" and warning["value"]["interruptId"] == "int_nope"
    assert [i["id"] for i in interrupts(events)] == [it["id"]]
    reconnect = await agui.run("conformance-approval", "th-5")
    assert [i["id"] for i in interrupts(reconnect)] == [it["id"]]
    assert await event_types(engine, run_id) == before  # nothing ran


async def test_older_request_shapes_are_accepted(agui: Agui, engine: Engine) -> None:
    [it] = interrupts(await agui.run("conformance-approval", "th-6"))
    done = await agui.run(
        "conformance-approval", "th-6", resume={"interruptId": it["id"], "payload": {"approved": True}}
    )
    assert done[-1]["outcome"]["type"] == "success"
    [it] = interrupts(await agui.run("conformance-approval", "th-7"))
    done = await agui.run("conformance-approval", "th-7", forwardedProps={"command": {"resume": {"action": "accept"}}})
    assert done[-1]["outcome"]["type"] == "success"


@pytest.mark.parametrize(
    "shape",
    [{"forwardedProps": {"command": {"resume": {"action": "accept"}}}}, {"resume": {"payload": {"approved": True}}}],
)
async def test_a_resume_naming_no_interrupt_sent_twice_answers_only_once(
    agui: Agui, engine: Engine, shape: dict[str, Any]
) -> None:
    wf = Workflow("one-then-another")
    wf.node("a", type_id="core.approvalGate", config={"title": "First?"})
    wf.node("b", type_id="core.approvalGate", after="a", config={"title": "Second?"})
    wf.register(engine)
    [first] = interrupts(await agui.run("one-then-another", "th-idless"))
    answered = await agui.run("one-then-another", "th-idless", runId="client-run-7", **shape)
    [second] = interrupts(answered)
    assert second["id"] != first["id"]
    again = await agui.run("one-then-another", "th-idless", runId="client-run-7", **shape)  # a retry
    assert [i["id"] for i in interrupts(again)] == [second["id"]]
    warning = [e for e in again if e["type"] == "CUSTOM"]
    assert warning and warning[0]["value"]["code"] == "duplicate_resume"
    record = await engine.store.get_interrupt(second["id"])
    assert record is not None and record.open
    done = await agui.run("one-then-another", "th-idless", runId="client-run-8", **shape)  # the next answer
    assert done[-1]["outcome"]["type"] == "success"


async def test_the_same_resume_twice_has_no_second_effect(agui: Agui, engine: Engine) -> None:
    [it] = interrupts(await agui.run("conformance-approval", "th-8"))
    entry = [{"interruptId": it["id"], "status": "resolved", "payload": {"approved": True}}]
    first = await agui.run("conformance-approval", "th-8", resume=entry)
    second = await agui.run("conformance-approval", "th-8", resume=entry)
    assert first[-1]["outcome"]["type"] == second[-1]["outcome"]["type"] == "success"
    assert any(e["type"] == "CUSTOM" for e in second)
    runs = (
        await engine.store.list_runs("default", workflow_id="conformance-approval", status=None, limit=10, cursor=None)
    )[0]
    assert len(runs) == 1  # no second run was started by the repeated resume


async def test_cancelled_entries(agui: Agui, engine: Engine) -> None:
    [it] = interrupts(await agui.run("conformance-approval", "th-9"))
    failed = await agui.run("conformance-approval", "th-9", resume=[{"interruptId": it["id"], "status": "cancelled"}])
    assert failed[-1]["type"] == "RUN_ERROR" and failed[-1]["code"] == "approval_rejected"
    [it] = interrupts(await agui.run("conformance-clarification", "th-10"))
    assert it["reason"] == "input_required"
    cancelled = await agui.run(
        "conformance-clarification", "th-10", resume=[{"interruptId": it["id"], "status": "cancelled"}]
    )
    assert cancelled[-1]["outcome"] == {"type": "cancelled"}


async def test_a_cancel_entry_needs_the_right_to_decide_the_gate(agui: Agui, engine: Engine) -> None:
    wf = Workflow("listed-gate")
    wf.node("gate", type_id="core.approvalGate", config={"title": "Ship?", "approversList": ["opal"]})
    wf.register(engine)
    [it] = interrupts(await agui.run("listed-gate", "th-cancel"))
    as_bob = Agui(agui.client, who="bob")
    refused = await as_bob.run(
        "listed-gate", "th-cancel", status=403, resume=[{"interruptId": it["id"], "status": "cancelled"}]
    )
    assert refused[0]["details"]["entry"] == 0 and "approvers" in refused[0]["message"]
    record = await engine.store.get_interrupt(it["id"])
    assert record is not None and record.open
    as_opal = Agui(agui.client, who="operator")
    failed = await as_opal.run("listed-gate", "th-cancel", resume=[{"interruptId": it["id"], "status": "cancelled"}])
    assert failed[-1]["type"] == "RUN_ERROR" and failed[-1]["code"] == "approval_rejected"
    record = await engine.store.get_interrupt(it["id"])
    assert record is not None and record.resolution["resumeValue"]["reason"] == "cancelled"
    assert record.resolution["resolvedBy"] == "opal"


async def test_a_reply_built_from_the_exchange_response_schema_alone_is_accepted(agui: Agui, engine: Engine) -> None:
    schema = {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}
    wf = Workflow("trip")
    wf.node(
        "talk",
        type_id="core.conversationGate",
        config={"initialPrompt": "Where to?", "prompt": "Next?", "turnCount": 1, "outcomeSchema": schema},
    )
    wf.register(engine)
    [it] = interrupts(await agui.run("trip", "th-form"))
    reply = next(s for s in it["responseSchema"]["anyOf"] if s.get("required") == ["city"])
    assert reply == schema  # the form is built from this alone
    bad = await agui.run(
        "trip", "th-form", status=400, resume=[{"interruptId": it["id"], "status": "resolved", "payload": {"city": 7}}]
    )
    assert bad[0]["error"] == "validation_error"
    done = await agui.run(
        "trip", "th-form", resume=[{"interruptId": it["id"], "status": "resolved", "payload": {"city": "Lisbon"}}]
    )
    assert done[-1]["outcome"]["type"] == "success"
    record = await engine.store.get_interrupt(it["id"])
    assert record is not None and record.resolution["turn"]["content"] == {"city": "Lisbon"}


async def test_quorum_vote_and_ask_end_with_the_same_interrupt(agui: Agui, engine: Engine) -> None:
    [it] = interrupts(await agui.run("conformance-interrupt-quorum", "th-11"))
    again = interrupts(
        await agui.run(
            "conformance-interrupt-quorum",
            "th-11",
            resume=[{"interruptId": it["id"], "status": "resolved", "payload": {"action": "accept"}}],
        )
    )
    assert again[0]["id"] == it["id"] and again[0]["metadata"]["openwop"]["votes"]["accept"] == 1
    wf = Workflow("askable")
    wf.node(
        "gate",
        type_id="core.approvalGate",
        config={"title": "Ship?", "actions": ["accept", "ask"], "description": "Release 2.0 to everyone."},
    )
    wf.register(engine)
    [it] = interrupts(await agui.run("askable", "th-12"))
    asked = await agui.run(
        "askable",
        "th-12",
        resume=[
            {"interruptId": it["id"], "status": "resolved", "payload": {"action": "ask", "question": "Who tested it?"}}
        ],
    )
    assert said(asked, "user") == ["Who tested it?"] and "Release 2.0 to everyone." in said(asked)[0]
    assert interrupts(asked)[0]["id"] == it["id"]
    assert interrupts(asked)[0]["metadata"]["openwop"]["askExchanges"][0]["question"] == "Who tested it?"


async def test_conversation_maps_onto_the_chat_thread(agui: Agui, engine: Engine) -> None:
    wf = Workflow("chatty")
    wf.node(
        "talk",
        type_id="core.conversationGate",
        config={"initialPrompt": "Hi there.", "prompts": ["Where to?", "When?", "Who?"], "turnCount": 3},
    )
    wf.register(engine)
    opened = await agui.run("chatty", "th-13")
    assert said(opened) == ["Hi there.", "Where to?"]
    [it] = interrupts(opened)
    assert it["reason"] == "input_required" and it["message"] == "Where to?"
    messages = [{"id": "u1", "role": "user", "content": "Lisbon"}]
    second = await agui.run("chatty", "th-13", messages=messages)  # a new user message answers the turn
    assert said(second) == ["When?"] and said(second, "user") == ["Lisbon"]
    snapshot = next(e for e in second if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    assert [(m["role"], m["content"]) for m in snapshot] == [
        ("assistant", "Hi there."),
        ("assistant", "Where to?"),
        ("user", "Lisbon"),
        ("assistant", "When?"),
    ]
    replay = await agui.run("chatty", "th-13", messages=messages)  # the same message again: nothing new
    assert said(replay) == [] and said(replay, "user") == []
    [it2] = interrupts(second)
    third = await agui.run(
        "chatty", "th-13", resume=[{"interruptId": it2["id"], "status": "resolved", "payload": {"content": "In May"}}]
    )
    [it3] = interrupts(third)
    done = await agui.run(
        "chatty", "th-13", resume=[{"interruptId": it3["id"], "status": "resolved", "payload": "Two of us"}]
    )
    assert done[-1]["outcome"]["type"] == "success"
    assert done[-1]["result"]["talk"]["outcome"] == {"replies": ["Lisbon", "In May", "Two of us"]}


async def test_closing_without_words_is_a_system_turn(agui: Agui, engine: Engine) -> None:
    wf = Workflow("closable")
    wf.node("talk", type_id="core.conversationGate", config={"initialPrompt": "Hi.", "prompts": ["Where to?"]})
    wf.register(engine)
    [it] = interrupts(await agui.run("closable", "th-close"))
    done = await agui.run(
        "closable",
        "th-close",
        resume=[{"interruptId": it["id"], "status": "resolved", "payload": {"operation": "close"}}],
    )
    assert done[-1]["outcome"]["type"] == "success"
    assert said(done, "user") == [] and said(done, "system") == ["alice closed the conversation"]
    snapshot = next(e for e in done if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    assert snapshot[-1]["role"] == "system" and snapshot[-1]["content"] == "alice closed the conversation"


def _gated_tool(
    engine: Engine,
    workflow_id: str,
    node: str,
    tool: str,
    args: dict[str, Any],
    run: Callable[[dict[str, Any]], Any],
    outputs: tuple[str, ...],
) -> list[dict[str, Any]]:
    """Register ``workflow_id``: one ``node`` that asks a person to approve calling ``tool`` with ``args``
    and, once approved, runs it (``run(args)`` is its result); the node outputs these fields of the
    outcome. The list of the arguments the tool ran with."""
    ran: list[dict[str, Any]] = []
    wf = Workflow(workflow_id)

    @wf.node(node)
    async def call(ctx: NodeContext) -> dict[str, Any]:
        def invoke(called: dict[str, Any]) -> Any:
            ran.append(called)
            return run(called)

        outcome = await approved_tool_call(ctx, tool, args, invoke)
        return {name: getattr(outcome, name) for name in outputs}

    wf.register(engine)
    return ran


async def test_tool_approval_with_edited_arguments(agui: Agui, engine: Engine) -> None:
    sent = _gated_tool(
        engine,
        "mailer",
        "send",
        "send_email",
        {"to": "all@acme.test", "subject": "Hi"},
        lambda args: {"delivered": True, "to": args["to"]},
        ("approved", "result"),
    )
    first = await agui.run("mailer", "th-14")
    kinds = types(first)
    assert (
        kinds.index("TOOL_CALL_START") < kinds.index("TOOL_CALL_ARGS") < kinds.index("TOOL_CALL_END") < len(kinds) - 1
    )
    start = next(e for e in first if e["type"] == "TOOL_CALL_START")
    [it] = interrupts(first)
    assert it["reason"] == "tool_call" and it["toolCallId"] == start["toolCallId"]
    assert it["responseSchema"]["properties"]["editedArgs"]["default"] == {"to": "all@acme.test", "subject": "Hi"}
    done = await agui.run(
        "mailer",
        "th-14",
        resume=[
            {
                "interruptId": it["id"],
                "status": "resolved",
                "payload": {"approved": True, "editedArgs": {"to": "team@acme.test", "subject": "Hi"}},
            }
        ],
    )
    result = next(e for e in done if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == start["toolCallId"]
    assert json.loads(result["content"]) == {"delivered": True, "to": "team@acme.test"}
    assert sent == [{"to": "team@acme.test", "subject": "Hi"}]
    snapshot = next(e for e in done if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    assert [m["role"] for m in snapshot] == ["assistant", "tool"]
    assert snapshot[0]["toolCalls"][0]["id"] == start["toolCallId"]


async def test_rejected_tool_call_does_not_run(agui: Agui, engine: Engine) -> None:
    _gated_tool(
        engine,
        "risky",
        "drop",
        "drop_table",
        {"table": "users"},
        lambda args: pytest.fail("ran"),
        ("approved", "feedback"),
    )
    [it] = interrupts(await agui.run("risky", "th-15"))
    done = await agui.run(
        "risky",
        "th-15",
        resume=[{"interruptId": it["id"], "status": "resolved", "payload": {"approved": False, "feedback": "never"}}],
    )
    assert done[-1]["result"]["drop"] == {"approved": False, "feedback": "never"}
    result = next(e for e in done if e["type"] == "TOOL_CALL_RESULT")
    assert json.loads(result["content"])["rejected"] is True


async def test_finished_thread_starts_the_next_run_with_its_messages(agui: Agui, engine: Engine) -> None:
    seen: list[Any] = []
    wf = Workflow("echo")

    @wf.node("reply")
    async def reply(ctx: NodeContext) -> dict[str, Any]:
        history = ctx.variables.get("messages", [])
        seen.append([m["content"] for m in history])
        ctx.say(f"you said {len(history)} thing(s)")
        return {}

    wf.register(engine)
    first = await agui.run("echo", "th-16", messages=[{"id": "m1", "role": "user", "content": "hello"}])
    assert first[-1]["outcome"]["type"] == "success"
    text = [e for e in first if e["type"].startswith("TEXT_MESSAGE")]
    assert [e["type"] for e in text] == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]
    second = await agui.run(
        "echo",
        "th-16",
        messages=[
            {"id": "m1", "role": "user", "content": "hello"},
            {"id": text[0]["messageId"], "role": "assistant", "content": "you said 1 thing(s)"},
            {"id": "m2", "role": "user", "content": "again"},
        ],
    )
    assert second[-1]["outcome"]["type"] == "success"
    assert seen == [["hello"], ["hello", "you said 1 thing(s)", "again"]]


async def test_reconnecting_to_a_finished_thread_starts_nothing(agui: Agui, engine: Engine) -> None:
    starts: list[int] = []
    wf = Workflow("counted")

    @wf.node("work")
    async def work(ctx: NodeContext) -> dict[str, Any]:
        starts.append(1)
        ctx.say("done")
        return {"n": len(starts)}

    wf.register(engine)
    hello = [{"id": "m1", "role": "user", "content": "hello"}]
    first = await agui.run("counted", "th-re", messages=hello)
    assert first[-1]["outcome"]["type"] == "success" and first[-1]["result"] == {"work": {"n": 1}}
    again = await agui.run("counted", "th-re", messages=hello)  # a reload resends the same messages
    assert again[-1]["outcome"]["type"] == "success" and again[-1]["result"] == {"work": {"n": 1}}
    assert "MESSAGES_SNAPSHOT" in types(again) and said(again) == []
    empty = await agui.run("counted", "th-re")  # no messages at all: nothing new either
    assert empty[-1]["result"] == {"work": {"n": 1}}
    assert starts == [1]
    runs, _ = await engine.store.list_runs("default", workflow_id="counted", status=None, limit=10, cursor=None)
    assert len(runs) == 1
    more = await agui.run("counted", "th-re", messages=[*hello, {"id": "m2", "role": "user", "content": "more"}])
    assert more[-1]["result"] == {"work": {"n": 2}} and starts == [1, 1]


async def test_echoed_state_carries_variables_without_nesting(agui: Agui, engine: Engine) -> None:
    inputs: list[dict[str, Any]] = []
    wf = Workflow("stateful")

    @wf.node("look")
    async def look(ctx: NodeContext) -> dict[str, Any]:
        inputs.append({k: v for k, v in ctx.variables.items() if k != "messages"})
        ctx.set_variable("visits", int(ctx.variables.get("visits", 0)) + 1)
        return {}

    wf.register(engine)
    first = await agui.run("stateful", "th-state", messages=[{"id": "a", "role": "user", "content": "1"}])
    state = next(e for e in first if e["type"] == "STATE_SNAPSHOT")["snapshot"]
    assert state["openwop"]["status"] == "completed" and state["variables"]["visits"] == 1
    for index, text in enumerate(["2", "3"]):
        echoed = {**state, "note": "from the client"}
        nxt = await agui.run(
            "stateful", "th-state", state=echoed, messages=[{"id": f"b{index}", "role": "user", "content": text}]
        )
        state = next(e for e in nxt if e["type"] == "STATE_SNAPSHOT")["snapshot"]
    assert inputs[1] == {"visits": 1, "note": "from the client"}
    assert inputs[2] == {"visits": 2, "note": "from the client"}
    assert state["variables"] == {"visits": 3, "note": "from the client"}


async def test_refusals_before_the_stream(agui: Agui, engine: Engine) -> None:
    anonymous = await agui.client.post(
        "/agui/conformance-approval", json={"threadId": "x", "runId": "y", "messages": []}
    )
    assert anonymous.status_code == 401 and anonymous.json()["error"] == "unauthenticated"
    reader = Agui(agui.client, who="reader")
    [denied] = await reader.run("conformance-approval", "th-17", status=403)
    assert denied["error"] == "forbidden"
    [missing] = await agui.run("no-such-workflow", "th-18", status=404)
    assert missing["error"] == "workflow_not_found"
    [bad] = await agui.run("conformance-approval", "th-19", status=400, messages="nope")
    assert bad["error"] == "validation_error"
    await agui.run("conformance-approval", "th-20")
    [conflict] = await agui.run("conformance-clarification", "th-20", status=409)
    assert conflict["error"] == "conflict"
    other = Agui(agui.client, who="other")
    separate = await other.run("conformance-approval", "th-20")  # same thread id, another tenant: its own thread
    assert (
        interrupts(separate)[0]["metadata"]["openwop"]["runId"]
        != (await agui.run("conformance-approval", "th-20"))[-1]["outcome"]["interrupts"][0]["metadata"]["openwop"][
            "runId"
        ]
    )


async def test_failure_after_the_stream_opened_is_run_error(agui: Agui, engine: Engine) -> None:
    wf = Workflow("broken")

    @wf.node("boom")
    async def boom(ctx: NodeContext) -> dict[str, Any]:
        raise RuntimeError("disk on fire")

    wf.register(engine)
    events = await agui.run("broken", "th-21")
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "node_failed"
    assert "STEP_FINISHED" in types(events)


async def test_clarification_payload_shapes(agui: Agui, engine: Engine) -> None:
    [it] = interrupts(await agui.run("conformance-clarification", "th-22"))
    assert it["responseSchema"]["properties"]["answers"]["required"] == ["q1"]
    done = await agui.run(
        "conformance-clarification",
        "th-22",
        resume=[{"interruptId": it["id"], "status": "resolved", "payload": "teal"}],
    )
    assert done[-1]["result"]["ask"] == {"answers": {"q1": "teal"}}


async def test_mount_one_workflow_in_any_starlette_app(engine: Engine) -> None:
    from starlette.applications import Starlette

    from openwop_bridge.core.auth import Principal

    app = Starlette()
    mount_agui(app, engine, "conformance-approval", path="/my-agent", authenticate=lambda request: Principal("kiosk"))
    async with uvicorn_server(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as client:
        async with client.stream("POST", "/my-agent", json={"threadId": "k1", "runId": "r1", "messages": []}) as r:
            lines = [line async for line in r.aiter_lines() if line.startswith("data: ")]
        assert json.loads(lines[-1][6:])["outcome"]["type"] == "interrupt"
        caps = (await client.get("/my-agent/capabilities")).json()
        assert caps["humanInTheLoop"]["supported"] is True


async def test_answers_from_rest_show_up_in_the_next_agui_run(agui: Agui, engine: Engine) -> None:
    wf = Workflow("mixed")

    @wf.node("n")
    async def n(ctx: NodeContext) -> dict[str, Any]:
        a = await ctx.interrupt(clarification(["Name?"]))
        b = await ctx.interrupt(approval("OK?"))
        return {"name": a["answers"][0]["answer"], "ok": b["action"]}

    wf.register(engine)
    [it] = interrupts(await agui.run("mixed", "th-23"))
    run_id = it["metadata"]["openwop"]["runId"]
    r = await agui.client.post(
        f"/v1/runs/{run_id}/interrupts/n", json={"resumeValue": {"answers": {"q1": "Ada"}}}, headers=auth("bob")
    )
    assert r.status_code == 200
    await settle(engine, run_id)
    [it2] = interrupts(await agui.run("mixed", "th-23"))  # reconnect shows the next question
    assert it2["metadata"]["openwop"]["kind"] == "approval"
    await asyncio.sleep(0)


async def test_threads_of_tenants_whose_names_contain_a_colon_stay_apart(engine: Engine) -> None:
    keys = [
        make_key("key-acme-00001", principal="ann", tenant="acme"),
        make_key("key-acme-eu-01", principal="eve", tenant="acme:eu"),
    ]
    app = create_app(engine, KeyRing(keys), manage_engine=False, extra_routes=agui_routes(engine))
    async with uvicorn_server(app) as url, httpx.AsyncClient(base_url=url, timeout=15) as client:

        async def post(token: str, thread: str, **body: Any) -> tuple[int, str]:
            payload = {"threadId": thread, "runId": "r", "messages": [], "protocolVersion": "1.0", **body}
            r = await client.post(
                "/agui/conformance-approval", json=payload, headers={"Authorization": f"Bearer {token}"}
            )
            return r.status_code, r.text

        status, text = await post("key-acme-eu-01", "x")
        assert status == 200 and '"outcome":{"type":"interrupt"' in text
        eve_interrupt = json.loads(text.rstrip().rsplit("data: ", 1)[1])["outcome"]["interrupts"][0]["id"]
        # Tenant "acme" with thread "eu:x" is a thread of its own, not tenant "acme:eu"'s thread "x".
        status, text = await post("key-acme-00001", "eu:x")
        assert status == 200 and eve_interrupt not in text
        ann_interrupt = json.loads(text.rstrip().rsplit("data: ", 1)[1])["outcome"]["interrupts"][0]["id"]
        assert ann_interrupt != eve_interrupt
        answered = await post(
            "key-acme-00001", "eu:x", resume=[{"interruptId": eve_interrupt, "status": "resolved", "payload": True}]
        )
        assert "unknown_interrupt" in answered[1]
        record = await engine.store.get_interrupt(eve_interrupt)
        assert record is not None and record.open and record.tenant == "acme:eu"


async def test_a_binding_stored_under_the_older_key_is_read_only_by_its_tenant(engine: Engine, agui: Agui) -> None:
    events = await agui.run("conformance-approval", "th-old")
    [it] = interrupts(events)
    binding = await threads.load(engine, "default", "th-old")
    assert binding is not None
    # A binding written before keys were structured: "<tenant>:<threadId>".
    await engine.store.kv_put(threads.NAMESPACE, "default:eu:x", {**binding.as_json(), "threadId": "eu:x"}, 0)
    again = await threads.load(engine, "default", "eu:x")
    assert again is not None and again.runs == binding.runs
    # The same stored key read as tenant "default:eu" with thread "x" is not its binding.
    assert await threads.load(engine, "default:eu", "x") is None
    # Answering through the older binding works.
    resume = [{"interruptId": it["id"], "status": "resolved", "payload": True}]
    done = await agui.run("conformance-approval", "eu:x", resume=resume)
    assert done[-1]["outcome"] == {"type": "success"}


async def test_agui_reveals_a_run_only_to_keys_that_may_read_runs(engine: Engine) -> None:
    keys = [*KEYS.values(), make_key("key-create-only", principal="carl", scopes=["runs:create"])]
    app = create_app(engine, KeyRing(keys), manage_engine=False, extra_routes=agui_routes(engine))
    async with uvicorn_server(app) as url, httpx.AsyncClient(base_url=url, timeout=15) as client:
        headers = {"Authorization": "Bearer key-create-only"}
        rest = await client.get("/v1/runs/nope", headers=headers)
        assert rest.status_code == 403
        payload = {"threadId": "th-carl", "runId": "r", "messages": [], "protocolVersion": "1.0"}
        refused = await client.post("/agui/conformance-approval", json=payload, headers=headers)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"] == "forbidden" and "runs:read" in refused.json()["message"]
        assert await threads.load(engine, "default", "th-carl") is None  # nothing was started
        runs, _ = await engine.store.list_runs(
            "default", workflow_id="conformance-approval", status=None, limit=10, cursor=None
        )
        assert runs == []


async def test_a_client_declaring_no_protocol_version_gets_only_outcomes_older_clients_know(agui: Agui) -> None:
    # Clients before AG-UI 1.0 (CopilotKit 1.75 bundles @ag-ui/client 0.0.59) send no protocolVersion and
    # accept only the success and interrupt outcomes.
    [it] = interrupts(await agui.run("conformance-clarification", "th-old-client", protocolVersion=None))
    cancelled = await agui.run(
        "conformance-clarification",
        "th-old-client",
        protocolVersion=None,
        resume=[{"interruptId": it["id"], "status": "cancelled"}],
    )
    finished = cancelled[-1]
    assert finished["type"] == "RUN_FINISHED" and "outcome" not in finished, finished
    state = next(e for e in cancelled if e["type"] == "STATE_SNAPSHOT")["snapshot"]
    assert state["openwop"]["status"] == "cancelled"
    # A reconnect of a 1.0 client to the same thread gets the 1.0 outcome.
    again = await agui.run("conformance-clarification", "th-old-client")
    assert again[-1]["outcome"] == {"type": "cancelled"}


async def test_a_tool_answer_echoed_as_a_tool_message_is_not_a_second_result(agui: Agui, engine: Engine) -> None:
    ran = _gated_tool(
        engine,
        "lookup",
        "find",
        "search",
        {"q": "invoices"},
        lambda args: {"found": 3, "query": args["q"]},
        ("result",),
    )
    first = await agui.run("lookup", "th-echo", protocolVersion=None)
    [it] = interrupts(first)
    history = next(e for e in first if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    # What CopilotKit's useInterrupt sends: the resume, and the answer as a tool message for the call.
    answer = {"approved": True}
    echo = {"id": "echo-1", "role": "tool", "toolCallId": it["toolCallId"], "content": json.dumps(answer)}
    done = await agui.run(
        "lookup",
        "th-echo",
        protocolVersion=None,
        messages=[*history, echo],
        resume=[{"interruptId": it["id"], "status": "resolved", "payload": answer}],
    )
    assert ran == [{"q": "invoices"}]
    snapshot = next(e for e in done if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    calls = [i for i, m in enumerate(snapshot) if m["role"] == "assistant" and m.get("toolCalls")]
    results = [i for i, m in enumerate(snapshot) if m["role"] == "tool" and m["toolCallId"] == it["toolCallId"]]
    assert len(calls) == 1 and len(results) == 1 and calls[0] < results[0], snapshot
    assert json.loads(snapshot[results[0]]["content"]) == {"found": 3, "query": "invoices"}
    # A later request still carrying the echo does not bring it back.
    later = await agui.run("lookup", "th-echo", messages=[*history, echo])
    snapshot = next(e for e in later if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    assert [m["id"] for m in snapshot if m["role"] == "tool"] == [snapshot[results[0]]["id"]]


async def test_a_request_reads_only_the_events_new_since_the_last_one(
    agui: Agui, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    wf = Workflow("long-chat")
    prompts = [f"Question {i}?" for i in range(8)]
    wf.node("talk", type_id="core.conversationGate", config={"prompts": prompts, "turnCount": len(prompts)})
    wf.register(engine)
    read: list[int] = []
    store_read = engine.store.read_events

    async def counting(run_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        docs = await store_read(run_id, after, limit)
        read.append(len(docs))
        return docs

    monkeypatch.setattr(engine.store, "read_events", counting)
    events = await agui.run("long-chat", "th-long")
    binding = await threads.load(engine, "default", "th-long")
    assert binding is not None and binding.run_id is not None
    messages: list[dict[str, Any]] = []
    for turn in range(len(prompts) - 1):
        assert len(interrupts(events)) == 1
        before = await engine.run_record(binding.run_id)
        assert before is not None
        read.clear()
        messages.append({"id": f"u{turn}", "role": "user", "content": f"Answer {turn}"})
        events = await agui.run("long-chat", "th-long", messages=messages)
        after = await engine.run_record(binding.run_id)
        assert after is not None
        new = after.next_seq - before.next_seq
        # The stream and the messages snapshot read what this request added, not the whole history.
        assert sum(read) <= 2 * new, (turn, read, new, after.next_seq)
        snapshot = next(e for e in events if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
        assert [m["content"] for m in snapshot if m["role"] == "user"] == [m["content"] for m in messages]
        assert [m["content"] for m in snapshot if m["role"] == "assistant"] == prompts[: turn + 2]


async def test_a_run_waiting_on_a_waiting_child_reports_the_childs_status(agui: Agui, engine: Engine) -> None:
    first = await agui.run("conformance-interrupt-parent-child-cancel", "th-parent")
    state = next(e for e in first if e["type"] == "STATE_SNAPSHOT")["snapshot"]
    assert state["openwop"]["status"] == "waiting-approval"
    assert first[-1]["type"] == "RUN_FINISHED"


async def test_separation_of_duties_refuses_the_threads_requester(agui: Agui, engine: Engine) -> None:
    wf = Workflow("sod-agui")
    wf.node("gate", type_id="core.approvalGate", config={"title": "Ship?", "separationOfDuties": True})
    wf.register(engine)
    [it] = interrupts(await agui.run("sod-agui", "th-sod"))
    resume = [{"interruptId": it["id"], "status": "resolved", "payload": {"action": "accept"}}]
    [body] = await agui.run("sod-agui", "th-sod", status=403, resume=resume)
    assert body["error"] == "forbidden" and "separation of duties" in body["message"]
    record = await engine.store.get_interrupt(it["id"])
    assert record is not None and record.status == "pending" and not record.state.get("votes")
    done = await Agui(agui.client, who="bob").run("sod-agui", "th-sod", resume=resume)
    assert done[-1]["outcome"] == {"type": "success"} and done[-1]["result"]["gate"]["decidedBy"] == "bob"


async def test_a_key_bound_gate_refuses_an_agui_resume(agui: Agui, engine: Engine) -> None:
    wf = Workflow("passkey-agui")
    wf.node("gate", type_id="core.approvalGate", config={"title": "Ship?", "assurance": "key-bound"})
    wf.register(engine)
    [it] = interrupts(await agui.run("passkey-agui", "th-passkey"))
    resume = [{"interruptId": it["id"], "status": "resolved", "payload": {"action": "accept"}}]
    [body] = await Agui(agui.client, who="bob").run("passkey-agui", "th-passkey", status=401, resume=resume)
    assert body["error"] == "sender_constraint_missing"
    record = await engine.store.get_interrupt(it["id"])
    assert record is not None and record.status == "pending" and not record.state.get("votes")


async def test_a_delegate_answers_in_the_delegators_place(agui: Agui, engine: Engine) -> None:
    delegation = await alice_away(engine, "away-agui")
    bob = Agui(agui.client, who="bob")
    for payload in ({"action": "accept", "voter": "alice"}, {"approved": True, "voter": "alice"}):
        thread = f"th-away-{len(payload)}-{payload.get('action', 'approved')}"
        [it] = interrupts(await agui.run("away-agui", thread))
        resume = [{"interruptId": it["id"], "status": "resolved", "payload": payload}]
        done = await bob.run("away-agui", thread, resume=resume)
        assert done[-1]["outcome"] == {"type": "success"} and done[-1]["result"]["gate"]["decidedBy"] == "alice"
        await answered_for_alice(engine, it["id"], delegation)
    await engine.end_delegation(ADMIN, delegation)
    [it] = interrupts(await agui.run("away-agui", "th-away-ended"))
    resume = [{"interruptId": it["id"], "status": "resolved", "payload": {"action": "accept", "voter": "alice"}}]
    [body] = await bob.run("away-agui", "th-away-ended", status=401, resume=resume)
    assert body["error"] == "delegation_expired" and body["details"]["delegationId"] == delegation
    await unanswered(engine, it["id"])
