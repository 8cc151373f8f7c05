"""``langgraph_sdk`` against ``/langgraph``: background runs, join, cancel, rejoin, state and every resume form.

Also the other surfaces: an interrupt of a LangGraph thread answered over
OpenWOP REST shows resolved on the thread, and one answered through LangGraph
shows resolved over REST.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.schema import Command

from openwop_bridge import Engine, KeyRing, Workflow
from openwop_bridge.host.app import create_app
from openwop_bridge.langgraph_api import langgraph_routes
from tests.conftest import KEYS, TOKENS, auth
from tests.helpers import ADMIN, alice_away, answered_for_alice, unanswered
from tests.server import uvicorn_server


@pytest.fixture
async def base(engine: Engine) -> AsyncIterator[str]:
    """The host with the LangGraph API on loopback; yields the host's base URL."""
    app = create_app(
        engine, KeyRing(KEYS.values()), manage_engine=False, keepalive_s=0.2, extra_routes=langgraph_routes(engine)
    )
    async with uvicorn_server(app) as url:
        yield url


def client(base: str, who: str = "admin") -> Any:
    return get_client(url=f"{base}/langgraph", api_key=TOKENS[who])


def open_ids(thread: dict[str, Any]) -> list[str]:
    return [i["id"] for items in thread["interrupts"].values() for i in items]


async def test_background_run_then_join_and_resume_in_the_background(base: str) -> None:
    c = client(base)
    thread = await c.threads.create()
    run = await c.runs.create(thread["thread_id"], "conformance-approval", input={}, metadata={"by": "test"})
    assert run["thread_id"] == thread["thread_id"] and run["metadata"] == {"by": "test"}
    joined = await c.runs.join(thread["thread_id"], run["run_id"])
    [interrupt] = joined["__interrupt__"]
    assert (await c.runs.get(thread["thread_id"], run["run_id"]))["status"] == "interrupted"

    again = await c.runs.create(thread["thread_id"], "conformance-approval", command=Command(resume="accept"))
    assert again["run_id"] == run["run_id"]  # the resume continues the same OpenWOP run
    done = await c.runs.join(thread["thread_id"], run["run_id"])
    assert "__interrupt__" not in done
    assert (await c.runs.get(thread["thread_id"], run["run_id"]))["status"] == "success"
    assert (await c.threads.get(thread["thread_id"]))["status"] == "idle"
    assert interrupt["id"] not in open_ids(await c.threads.get(thread["thread_id"]))


async def test_cancel_a_running_run(base: str) -> None:
    c = client(base)
    thread = await c.threads.create()
    run = await c.runs.create(thread["thread_id"], "conformance-cancellable", input={"delayMs": 60_000})
    assert (await c.runs.get(thread["thread_id"], run["run_id"]))["status"] in ("pending", "running")
    await c.runs.cancel(thread["thread_id"], run["run_id"], wait=True)
    assert (await c.runs.get(thread["thread_id"], run["run_id"]))["status"] == "interrupted"
    assert (await c.threads.get(thread["thread_id"]))["status"] == "idle"
    async with httpx.AsyncClient(base_url=base, headers=auth("admin")) as rest:
        assert (await rest.get(f"/v1/runs/{run['run_id']}")).json()["status"] == "cancelled"
    # The thread takes a new run once the old one is cancelled.
    waiting = await c.runs.wait(thread["thread_id"], "conformance-approval", input={})
    assert waiting["__interrupt__"]


async def test_cancel_needs_the_right_and_another_tenant_sees_no_run(base: str) -> None:
    c = client(base)
    thread = await c.threads.create()
    run = await c.runs.create(thread["thread_id"], "conformance-cancellable", input={"delayMs": 60_000})
    with pytest.raises(httpx.HTTPStatusError) as other:
        await client(base, "other").runs.cancel(thread["thread_id"], run["run_id"])
    assert other.value.response.status_code == 404
    with pytest.raises(httpx.HTTPStatusError) as reader:
        await client(base, "reader").runs.cancel(thread["thread_id"], run["run_id"])
    assert reader.value.response.status_code == 403
    assert (await c.runs.get(thread["thread_id"], run["run_id"]))["status"] in ("pending", "running")
    await c.runs.cancel(thread["thread_id"], run["run_id"], wait=True)


async def test_rejoin_the_stream_of_a_running_run(base: str) -> None:
    c = client(base)
    thread = await c.threads.create()
    run = await c.runs.create(thread["thread_id"], "conformance-cancellable", input={"delayMs": 600})
    parts = [p async for p in c.runs.join_stream(thread["thread_id"], run["run_id"], stream_mode=["values", "updates"])]
    events = [p.event for p in parts]
    assert events[0] == "metadata" and parts[0].data["run_id"] == run["run_id"]
    assert [list(p.data) for p in parts if p.event == "updates"] == [["wait"]]
    assert "error" not in events
    assert (await c.runs.get(thread["thread_id"], run["run_id"]))["status"] == "success"


async def test_rejoin_a_waiting_run_ends_with_its_interrupt(base: str) -> None:
    c = client(base)
    thread = await c.threads.create()
    run = await c.runs.create(thread["thread_id"], "conformance-approval", input={})
    await c.runs.join(thread["thread_id"], run["run_id"])
    parts = [p async for p in c.runs.join_stream(thread["thread_id"], run["run_id"])]
    [last] = [p for p in parts if p.event == "values" and "__interrupt__" in p.data]
    assert [i["id"] for i in last.data["__interrupt__"]] == open_ids(await c.threads.get(thread["thread_id"]))


async def test_update_state_sets_the_next_runs_inputs(base: str) -> None:
    c = client(base)
    thread = await c.threads.create()
    done = await c.threads.update_state(thread["thread_id"], {"delayMs": 10})
    assert done["checkpoint"]["thread_id"] == thread["thread_id"]
    assert (await c.threads.get_state(thread["thread_id"]))["values"] == {"delayMs": 10}
    result = await c.runs.wait(thread["thread_id"], "conformance-cancellable", input={})
    assert "__error__" not in result and result["delayMs"] == 10

    # While a run waits on a person its state changes only through its nodes.
    await c.runs.wait(thread["thread_id"], "conformance-approval", input={})
    with pytest.raises(httpx.HTTPStatusError) as busy:
        await c.threads.update_state(thread["thread_id"], {"x": 1})
    assert busy.value.response.status_code == 409
    assert busy.value.response.json()["error"] == "conflict"
    with pytest.raises(httpx.HTTPStatusError) as bad:
        await c.http.post(f"/threads/{thread['thread_id']}/state", json={"values": [1]})
    assert bad.value.response.status_code in (400, 409)


def _reviewable(engine: Engine) -> None:
    wf = Workflow("reviewable")
    wf.node(
        "gate",
        type_id="core.approvalGate",
        config={"title": "Ship it?", "actions": ["accept", "reject", "refine", "edit-accept"]},
    )
    wf.register(engine)


async def _resolution(engine: Engine, interrupt_id: str) -> dict[str, Any]:
    record = await engine.store.get_interrupt(interrupt_id)
    assert record is not None and not record.open
    return dict(record.resolution or {})


async def test_agent_inbox_response_is_a_refine_and_ignore_a_reject(base: str, engine: Engine) -> None:
    _reviewable(engine)
    c = client(base)
    thread = await c.threads.create()
    [interrupt] = (await c.runs.wait(thread["thread_id"], "reviewable", input={}))["__interrupt__"]
    config = interrupt["value"]["config"]
    assert config == {"allow_accept": True, "allow_edit": True, "allow_respond": True, "allow_ignore": True}
    with pytest.raises(httpx.HTTPStatusError) as empty:
        await c.runs.wait(thread["thread_id"], "reviewable", command=Command(resume=[{"type": "response", "args": ""}]))
    assert empty.value.response.status_code == 400
    assert open_ids(await c.threads.get(thread["thread_id"])) == [interrupt["id"]]

    refined = await c.runs.wait(
        thread["thread_id"],
        "reviewable",
        command=Command(resume=[{"type": "response", "args": "Smaller, please."}]),
        raise_error=False,
    )
    assert refined["__error__"]["error"] == "approval_rejected"  # a refine with no route back ends the run
    answer = (await _resolution(engine, interrupt["id"]))["resumeValue"]
    assert answer["action"] == "refine" and answer["feedback"] == "Smaller, please."

    other = await c.threads.create()
    [second] = (await c.runs.wait(other["thread_id"], "reviewable", input={}))["__interrupt__"]
    result = await c.runs.wait(
        other["thread_id"], "reviewable", command=Command(resume=[{"type": "ignore"}]), raise_error=False
    )
    assert "__interrupt__" not in result and result["__error__"]["error"] == "approval_rejected"
    assert (await c.threads.get(other["thread_id"]))["status"] == "error"
    assert (await _resolution(engine, second["id"]))["resumeValue"]["action"] == "reject"


async def test_rest_answer_shows_resolved_on_the_langgraph_thread(base: str) -> None:
    c = client(base)
    thread = await c.threads.create()
    [interrupt] = (await c.runs.wait(thread["thread_id"], "conformance-approval", input={}))["__interrupt__"]
    [run] = await c.runs.list(thread["thread_id"])
    node = interrupt["value"]["openwop"]["nodeId"]
    async with httpx.AsyncClient(base_url=base, headers=auth("admin")) as rest:
        answered = await rest.post(
            f"/v1/runs/{run['run_id']}/interrupts/{node}", json={"resumeValue": {"action": "accept"}}
        )
        assert answered.status_code < 300, answered.text
    done = await c.runs.join(thread["thread_id"], run["run_id"])
    assert "__interrupt__" not in done
    shown = await c.threads.get(thread["thread_id"])
    assert shown["status"] == "idle" and shown["interrupts"] == {}
    assert (await c.threads.get_state(thread["thread_id"]))["tasks"] == []
    assert (await c.runs.get(thread["thread_id"], run["run_id"]))["status"] == "success"
    # And the LangGraph client can no longer resume it.
    with pytest.raises(httpx.HTTPStatusError) as gone:
        await c.runs.wait(thread["thread_id"], "conformance-approval", command=Command(resume="accept"))
    assert gone.value.response.status_code in (400, 409)


async def test_langgraph_answer_shows_resolved_over_rest(base: str) -> None:
    c = client(base)
    thread = await c.threads.create()
    [interrupt] = (await c.runs.wait(thread["thread_id"], "conformance-approval", input={}))["__interrupt__"]
    [run] = await c.runs.list(thread["thread_id"])
    async with httpx.AsyncClient(base_url=base, headers=auth("admin")) as rest:
        before = (await rest.get(f"/v1/runs/{run['run_id']}")).json()
        assert before["interrupt"]["interruptId"] == interrupt["id"]
        await c.runs.wait(thread["thread_id"], "conformance-approval", command=Command(resume=[{"type": "accept"}]))
        after = (await rest.get(f"/v1/runs/{run['run_id']}")).json()
        assert after["status"] == "completed" and after.get("interrupt") is None
        node = interrupt["value"]["openwop"]["nodeId"]
        again = await rest.post(
            f"/v1/runs/{run['run_id']}/interrupts/{node}", json={"resumeValue": {"action": "accept"}}
        )
        assert again.status_code == 409, again.text


def test_every_route_is_documented_in_a_valid_openapi_document(engine: Engine) -> None:
    from openapi_spec_validator import validate

    from openwop_bridge.host.v1.api import openapi_document
    from openwop_bridge.langgraph_api.openapi import langgraph_openapi

    document = openapi_document([langgraph_openapi()])
    validate(document)
    served = {(route.path, m.lower()) for route in langgraph_routes(engine) for m in route.methods or () if m != "HEAD"}
    documented = {(path, m) for path, ops in document["paths"].items() if path.startswith("/langgraph") for m in ops}
    assert served == documented


async def test_separation_of_duties_refuses_the_threads_requester(base: str, engine: Engine) -> None:
    wf = Workflow("sod-langgraph")
    wf.node("gate", type_id="core.approvalGate", config={"title": "Ship?", "separationOfDuties": True})
    wf.register(engine)
    bob = client(base, "bob")
    thread = await bob.threads.create()
    waiting = await bob.runs.wait(thread["thread_id"], "sod-langgraph", input={})
    [interrupt] = waiting["__interrupt__"]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await bob.runs.wait(thread["thread_id"], "sod-langgraph", command=Command(resume="accept"))
    assert refused.value.response.status_code == 403
    body = refused.value.response.json()
    assert body["error"] == "forbidden" and "separation of duties" in body["message"], body
    assert interrupt["id"] in open_ids(await bob.threads.get(thread["thread_id"]))
    done = await client(base, "admin").runs.wait(thread["thread_id"], "sod-langgraph", command=Command(resume="accept"))
    assert "__interrupt__" not in done
    assert interrupt["id"] not in open_ids(await bob.threads.get(thread["thread_id"]))


async def test_a_key_bound_gate_refuses_a_langgraph_resume(base: str, engine: Engine) -> None:
    wf = Workflow("passkey-langgraph")
    wf.node("gate", type_id="core.approvalGate", config={"title": "Ship?", "assurance": "key-bound"})
    wf.register(engine)
    bob = client(base, "bob")
    thread = await bob.threads.create()
    waiting = await bob.runs.wait(thread["thread_id"], "passkey-langgraph", input={})
    [interrupt] = waiting["__interrupt__"]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await bob.runs.wait(thread["thread_id"], "passkey-langgraph", command=Command(resume="accept"))
    assert refused.value.response.status_code == 401
    assert refused.value.response.json()["error"] == "sender_constraint_missing"
    assert interrupt["id"] in open_ids(await bob.threads.get(thread["thread_id"]))


async def test_a_delegate_answers_in_the_delegators_place(base: str, engine: Engine) -> None:
    delegation = await alice_away(engine, "away-langgraph")
    bob = client(base, "bob")
    resumes = (
        {"action": "accept", "voter": "alice"},  # OpenWOP's own answer
        [{"type": "accept", "args": None, "voter": "alice"}],  # an Agent Inbox response
        {"decisions": [{"type": "approve"}], "voter": "alice"},  # HITL decisions
    )
    for resume in resumes:
        thread = await client(base, "operator").threads.create()
        waiting = await client(base, "operator").runs.wait(thread["thread_id"], "away-langgraph", input={})
        [interrupt] = waiting["__interrupt__"]
        done = await bob.runs.wait(thread["thread_id"], "away-langgraph", command=Command(resume=resume))
        assert "__interrupt__" not in done, done
        await answered_for_alice(engine, interrupt["id"], delegation)
    await engine.end_delegation(ADMIN, delegation)
    thread = await client(base, "operator").threads.create()
    waiting = await client(base, "operator").runs.wait(thread["thread_id"], "away-langgraph", input={})
    [interrupt] = waiting["__interrupt__"]
    for resume in resumes:
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await bob.runs.wait(thread["thread_id"], "away-langgraph", command=Command(resume=resume))
        assert refused.value.response.status_code == 401
        body = refused.value.response.json()
        assert body["error"] == "delegation_expired" and body["details"]["delegationId"] == delegation, body
    await unanswered(engine, interrupt["id"])
