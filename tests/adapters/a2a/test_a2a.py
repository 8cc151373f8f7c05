"""The bridge as an A2A 1.0 agent, driven only through the official ``a2a-sdk`` client on real uvicorn.

The card is resolved by the SDK's resolver, each client is built by its ``ClientFactory`` from the
card alone, and its auth interceptor sends the key the card's security scheme names.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import jsonschema
import orjson
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.client.client import ClientCallContext
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import (
    InvalidParamsError,
    InvalidRequestError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf import json_format, struct_pb2
from openapi_spec_validator import validate as validate_spec

from openwop_bridge import Engine, KeyRing, kinds, load_workflow
from openwop_bridge.a2a import a2a_routes
from openwop_bridge.a2a.discovery import a2a_facet
from openwop_bridge.host import build_parser, build_server
from openwop_bridge.host.app import create_app
from openwop_bridge.host.discovery import validate_discovery
from tests.conftest import KEYS, TOKENS, auth
from tests.helpers import ADMIN, alice_away, answered_for_alice, unanswered
from tests.server import uvicorn_server

INPUT = TaskState.TASK_STATE_INPUT_REQUIRED


class Key(CredentialService):
    """One API key for every scheme the card asks for."""

    def __init__(self, token: str) -> None:
        self.token = token

    async def get_credentials(self, security_scheme_name: str, context: ClientCallContext | None) -> str | None:
        return self.token


class Agent:
    """The served bridge: its URL, a plain HTTP client, and SDK clients per key."""

    def __init__(self, url: str, http: httpx.AsyncClient, card: AgentCard) -> None:
        self.url = url
        self.http = http
        self.card = card

    def client(self, who: str = "admin", *, streaming: bool = False) -> Client:
        config = ClientConfig(httpx_client=self.http, streaming=streaming)
        return ClientFactory(config).create(self.card, interceptors=[AuthInterceptor(Key(TOKENS.get(who, who)))])


@pytest.fixture
async def agent(engine: Engine) -> AsyncIterator[Agent]:
    app = create_app(
        engine,
        KeyRing(KEYS.values()),
        manage_engine=False,
        keepalive_s=0.2,
        extra_routes=a2a_routes(engine),
        facets=[a2a_facet],
    )
    async with uvicorn_server(app) as url, httpx.AsyncClient(timeout=10) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        yield Agent(url, http, card)


def message(
    *parts: Part, skill: str | None = None, task_id: str = "", context_id: str = "", **openwop: Any
) -> SendMessageRequest:
    meta: dict[str, Any] = dict(openwop)
    if skill is not None:
        meta["skillId"] = skill
    msg = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=list(parts), task_id=task_id)
    if context_id:
        msg.context_id = context_id
    if meta:
        msg.metadata.CopyFrom(json_format.ParseDict({"openwop": meta}, struct_pb2.Struct()))
    return SendMessageRequest(message=msg)


def data(value: Any) -> Part:
    return Part(data=json_format.ParseDict(value, struct_pb2.Value()))


def openwop(task: Task) -> dict[str, Any]:
    return json_format.MessageToDict(task.metadata)["openwop"]


async def send(client: Client, request: SendMessageRequest) -> Task:
    events = [e async for e in client.send_message(request)]
    assert len(events) == 1 and events[0].HasField("task")
    return events[0].task


async def collect(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    return [e async for e in stream]


# --- 1. the card and discovery -----------------------------------------------------------


async def test_card_is_public_and_lists_every_workflow_as_a_skill(agent: Agent, engine: Engine) -> None:
    card = agent.card
    [iface] = card.supported_interfaces
    assert (iface.protocol_binding, iface.protocol_version, iface.url) == ("JSONRPC", "1.0", agent.url + "/a2a")
    assert card.capabilities.streaming is True
    assert {s.id for s in card.skills} == {wf.id for wf in engine.workflows()}
    assert all(s.name and s.description and list(s.tags) for s in card.skills)
    scheme = card.security_schemes["bearer"].http_auth_security_scheme
    assert scheme.scheme.lower() == "bearer"
    assert [list(r.schemes) for r in card.security_requirements] == [["bearer"]]


async def test_discovery_advertises_the_a2a_facet(agent: Agent) -> None:
    doc = (await agent.http.get(agent.url + "/.well-known/openwop")).json()
    facet = doc["a2a"]
    assert facet["agentCardUrl"] == agent.url + "/.well-known/agent-card.json"
    assert facet["supported"] is True and facet["streaming"] is agent.card.capabilities.streaming is True
    assert validate_discovery(doc) == []


async def test_no_key_or_a_wrong_key_is_401_and_starts_nothing(agent: Agent, engine: Engine) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}
    for headers in ({}, {"Authorization": "Bearer nope"}):
        answer = await agent.http.post(agent.url + "/a2a", json=body, headers=headers)
        assert answer.status_code == 401
        assert answer.json()["error"] == "unauthenticated"
    garbage = await agent.http.post(agent.url + "/a2a", content=b"{not json", headers={})
    assert garbage.status_code == 401
    runs, _ = await engine.store.list_runs("default", workflow_id=None, status=None, limit=10, cursor=None)
    assert runs == []
    with pytest.raises(Exception) as caught:
        await send(agent.client("nobody"), message(skill="conformance-noop"))
    assert "401" in str(caught.value)


def test_serve_mounts_the_agent_when_the_extra_is_installed(tmp_path: Any) -> None:
    app, _, _, _ = build_server(build_parser().parse_args(["serve", "--db", str(tmp_path / "s.db")]))
    paths = {getattr(r, "path", "") for r in app.routes}
    assert {"/.well-known/agent-card.json", "/a2a"} <= paths
    assert app.state.facets
    documented = orjson.loads(app.state.openapi())["paths"]
    assert {"/.well-known/agent-card.json", "/a2a"} <= set(documented)
    assert not validate_spec(orjson.loads(app.state.openapi()))


async def test_bodies_are_bounded_as_over_rest(agent: Agent, engine: Engine) -> None:
    url = agent.url + "/a2a"
    big = b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"x": "' + b"a" * (1 << 20) + b'"}}'
    answer = await agent.http.post(url, content=big, headers=auth("admin"))
    assert (answer.status_code, answer.json()["error"]) == (413, "payload_too_large")
    deep = b"[" * 100 + b"]" * 100
    answer = await agent.http.post(url, content=deep, headers=auth("admin"))
    assert (answer.status_code, answer.json()["error"]) == (400, "validation_error")
    answer = await agent.http.post(url, headers=auth("admin"))
    assert (answer.status_code, answer.json()["error"]) == (400, "validation_error")
    # A body that is not JSON is the SDK's JSON-RPC parse error.
    answer = await agent.http.post(url, content=b"{nope", headers=auth("admin"))
    assert answer.json()["error"]["code"] == -32700
    runs, _ = await engine.store.list_runs("default", workflow_id=None, status=None, limit=10, cursor=None)
    assert runs == []


# --- 2. starting, answering, reading, cancelling --------------------------------------------


async def test_a_started_task_is_the_run(agent: Agent) -> None:
    client = agent.client()
    task = await send(client, message(skill="conformance-noop"))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    run = (await agent.http.get(f"{agent.url}/v1/runs/{task.id}", headers=auth("admin"))).json()
    assert run["runId"] == task.id and run["status"] == "completed"
    assert [a.artifact_id for a in task.artifacts] == ["outputs"]


async def run_variables(agent: Agent, run_id: str) -> dict[str, Any]:
    run = (await agent.http.get(f"{agent.url}/v1/runs/{run_id}", headers=auth("admin"))).json()
    variables: dict[str, Any] = run["variables"]
    return variables


async def test_variables_come_from_a_data_part_or_one_text_part(agent: Agent, engine: Engine) -> None:
    client = agent.client()
    task = await send(client, message(data({"delayMs": 1}), skill="conformance-delay"))
    assert (await run_variables(agent, task.id))["delayMs"] == 1
    # Validated as over REST: a required variable missing starts nothing.
    engine.add_workflow(
        load_workflow(
            {
                "id": "greeting",
                "name": "Greeting",
                "version": "1.0",
                "nodes": [
                    {
                        "id": "noop",
                        "typeId": "core.noop",
                        "name": "Noop",
                        "position": {"x": 0, "y": 0},
                        "config": {},
                        "inputs": {},
                    }
                ],
                "edges": [],
                "triggers": [{"id": "manual", "type": "manual", "enabled": True}],
                "variables": [{"name": "topic", "type": "string", "required": True}],
                "metadata": {"tags": ["demo"]},
                "settings": {},
            }
        )
    )
    with pytest.raises(InvalidParamsError):
        await send(client, message(skill="greeting"))
    task = await send(client, message(Part(text="tides"), skill="greeting"))
    assert (await run_variables(agent, task.id))["topic"] == "tides"
    with pytest.raises(InvalidParamsError):
        await send(client, message(data([1, 2]), skill="conformance-delay"))
    # The one string variable takes the text; without one, the text is not a variable and the run starts.
    task = await send(client, message(Part(text="from a2a"), skill="conformance-subworkflow-child"))
    assert (await run_variables(agent, task.id))["childResult"] == "from a2a"
    task = await send(client, message(Part(text="hello"), skill="conformance-noop"))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED


async def test_scopes_are_those_of_the_rest_api(agent: Agent) -> None:
    task = await send(agent.client("admin"), message(skill="conformance-approval"))
    reader = agent.client("reader")
    assert (await reader.get_task(GetTaskRequest(id=task.id))).status.state == INPUT
    with pytest.raises(InvalidRequestError):
        await send(reader, message(skill="conformance-noop"))
    with pytest.raises(InvalidRequestError):
        await send(reader, message(data({"action": "accept"}), task_id=task.id))
    with pytest.raises(InvalidRequestError):
        await reader.cancel_task(CancelTaskRequest(id=task.id))
    assert (await reader.get_task(GetTaskRequest(id=task.id))).status.state == INPUT


async def test_unknown_or_missing_skill_is_invalid_params(agent: Agent) -> None:
    client = agent.client()
    with pytest.raises(InvalidParamsError):
        await send(client, message(skill="no-such-workflow"))
    with pytest.raises(InvalidParamsError):
        await send(client, message(Part(text="hello")))


async def test_approval_answered_over_a2a(agent: Agent, engine: Engine) -> None:
    client = agent.client()
    task = await send(client, message(Part(text="please"), skill="conformance-approval"))
    assert task.status.state == INPUT
    interrupt = openwop(task)["interrupt"]
    assert interrupt["kind"] == "approval" and interrupt["interruptId"] and interrupt["title"]
    assert "resumeSchema" in interrupt
    status_meta = json_format.MessageToDict(task.status.message.metadata)["openwop"]["interrupt"]
    assert status_meta["interruptId"] == interrupt["interruptId"]
    # A bad answer is invalid params and leaves the interrupt open.
    with pytest.raises(InvalidParamsError):
        await send(client, message(data({"action": "maybe"}), task_id=task.id))
    assert (await client.get_task(GetTaskRequest(id=task.id))).status.state == INPUT
    # Another task's contextId is refused and changes nothing.
    with pytest.raises(InvalidParamsError):
        await send(client, message(data({"action": "accept"}), task_id=task.id, context_id="someone-else"))
    done = await send(client, message(task_id=task.id, interrupt={"action": "accept"}))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert done.context_id == task.context_id
    # A message to a completed task: -32004, and no event appended.
    before = len(await engine.store.read_events(task.id))
    with pytest.raises(UnsupportedOperationError):
        await send(client, message(data({"action": "accept"}), task_id=task.id))
    assert len(await engine.store.read_events(task.id)) == before


async def test_clarification_answered_with_one_text_part(agent: Agent) -> None:
    client = agent.client()
    task = await send(client, message(skill="conformance-clarification"))
    assert task.status.state == INPUT
    assert openwop(task)["interrupt"]["kind"] == "clarification"
    done = await send(client, message(Part(text="blue"), task_id=task.id))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    run = (await agent.http.get(f"{agent.url}/v1/runs/{task.id}", headers=auth("admin"))).json()
    assert "blue" in str(run["nodeStates"])


async def test_cancel_fails_the_approval_closed(agent: Agent) -> None:
    client = agent.client()
    task = await send(client, message(skill="conformance-approval"))
    cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
    assert cancelled.id == task.id
    await asyncio.sleep(0)
    for _ in range(100):
        got = await client.get_task(GetTaskRequest(id=task.id))
        if got.status.state == TaskState.TASK_STATE_CANCELED:
            break
        await asyncio.sleep(0.02)
    assert got.status.state == TaskState.TASK_STATE_CANCELED
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(CancelTaskRequest(id=task.id))


async def test_unknown_task_and_another_tenants_task_are_the_same_not_found(agent: Agent) -> None:
    mine = agent.client("admin")
    theirs = agent.client("other")
    task = await send(mine, message(skill="conformance-approval"))
    errors = []
    calls: list[Callable[[Client, str], Any]] = [
        lambda c, i: c.get_task(GetTaskRequest(id=i)),
        lambda c, i: c.cancel_task(CancelTaskRequest(id=i)),
        lambda c, i: send(c, message(data({"action": "accept"}), task_id=i)),
    ]
    for call in calls:
        for client, task_id in ((mine, "run_does_not_exist"), (theirs, task.id)):
            with pytest.raises(TaskNotFoundError) as caught:
                await call(client, task_id)
            errors.append(caught.value.message)
    assert len(set(errors)) == 1
    # The other tenant's own task is invisible the other way round too.
    other = await send(theirs, message(skill="conformance-approval"))
    with pytest.raises(TaskNotFoundError):
        await mine.get_task(GetTaskRequest(id=other.id))
    assert (await mine.get_task(GetTaskRequest(id=task.id))).status.state == INPUT


async def test_the_same_message_id_twice_is_one_run(agent: Agent, engine: Engine) -> None:
    client = agent.client()
    request = message(skill="conformance-approval")
    first, second = await asyncio.gather(send(client, request), send(client, request))
    assert first.id == second.id
    runs, _ = await engine.store.list_runs("default", workflow_id=None, status=None, limit=10, cursor=None)
    assert [r.run_id for r in runs] == [first.id]


async def test_a_quorum_gate_settles_on_the_third_vote(agent: Agent) -> None:
    task = await send(agent.client("admin"), message(skill="conformance-interrupt-quorum"))
    assert task.status.state == INPUT
    vote = await send(agent.client("admin"), message(data({"action": "accept"}), task_id=task.id))
    assert vote.status.state == INPUT
    assert len(openwop(vote)["interrupt"]["votes"]["votes"]) == 1
    vote = await send(agent.client("bob"), message(data({"action": "accept"}), task_id=task.id))
    assert vote.status.state == INPUT
    assert len(openwop(vote)["interrupt"]["votes"]["votes"]) == 2
    done = await send(agent.client("operator"), message(data({"action": "accept"}), task_id=task.id))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED


# --- 3. streaming ---------------------------------------------------------------------------


async def test_streaming_send_ends_at_input_required_then_at_completion(agent: Agent) -> None:
    client = agent.client(streaming=True)
    events = await collect(client.send_message(message(skill="conformance-approval")))
    assert events[0].HasField("task")
    assert all(e.HasField("status_update") or e.HasField("artifact_update") for e in events[1:])
    last = events[-1]
    state = last.status_update.status.state if last.HasField("status_update") else last.task.status.state
    assert state == INPUT
    task_id = events[0].task.id
    events = await collect(client.send_message(message(data({"action": "accept"}), task_id=task_id)))
    assert events[0].HasField("task")
    if len(events) == 1:
        # The run finished before the stream began: the task itself is final and carries the outputs.
        assert events[0].task.status.state == TaskState.TASK_STATE_COMPLETED
        assert [a.artifact_id for a in events[0].task.artifacts] == ["outputs"]
        return
    kinds = [e.WhichOneof("payload") for e in events[1:]]
    assert kinds[-2:] == ["artifact_update", "status_update"]
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert events[-2].artifact_update.artifact.artifact_id == "outputs"


async def test_an_a2a_subscriber_sees_an_answer_given_over_rest(agent: Agent) -> None:
    task = await send(agent.client(), message(skill="conformance-approval"))
    watcher = agent.client(streaming=True)
    seen: list[StreamResponse] = []

    async def watch() -> None:
        async for event in watcher.subscribe(SubscribeToTaskRequest(id=task.id)):
            seen.append(event)

    watching = asyncio.create_task(watch())
    for _ in range(100):
        if seen:
            break
        await asyncio.sleep(0.02)
    assert seen and seen[0].HasField("task") and seen[0].task.status.state == INPUT
    answer = await agent.http.post(
        f"{agent.url}/v1/runs/{task.id}/interrupts/gate",
        json={"resumeValue": {"action": "accept"}},
        headers=auth("admin"),
    )
    assert answer.status_code == 200, answer.text
    await asyncio.wait_for(watching, 10)
    assert seen[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    # A finished task has nothing to follow.
    with pytest.raises(UnsupportedOperationError):
        await collect(watcher.subscribe(SubscribeToTaskRequest(id=task.id)))


def test_the_card_path_known_without_the_sdk_is_the_sdks() -> None:
    from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH

    from openwop_bridge.a2a.discovery import CARD_PATH

    assert CARD_PATH == AGENT_CARD_WELL_KNOWN_PATH


async def test_an_answer_naming_another_interrupt_is_refused_and_changes_nothing(agent: Agent, engine: Engine) -> None:
    client = agent.client()
    task = await send(client, message(skill="conformance-approval-reject-loopback"))
    first = openwop(task)["interrupt"]["interruptId"]
    again = await send(client, message(task_id=task.id, interrupt={"action": "reject", "interruptId": first}))
    assert again.status.state == INPUT
    second = openwop(again)["interrupt"]["interruptId"]
    assert second != first
    other = await send(client, message(skill="conformance-approval"))
    other_id = openwop(other)["interrupt"]["interruptId"]
    before = len(await engine.store.read_events(task.id))
    # The interrupt already answered: -32004 (the state no longer admits it), carrying the 409 envelope.
    with pytest.raises(UnsupportedOperationError) as resolved:
        await send(client, message(task_id=task.id, interrupt={"action": "accept", "interruptId": first}))
    assert resolved.value.data is not None
    assert resolved.value.data["openwop"]["error"] == "interrupt_already_resolved"
    # A made-up id, and another task's open interrupt: invalid params.
    for named in ("int_00000000000000000000000000", "made-up", other_id):
        with pytest.raises(InvalidParamsError):
            await send(client, message(task_id=task.id, interrupt={"action": "accept", "interruptId": named}))
    assert len(await engine.store.read_events(task.id)) == before
    still = await client.get_task(GetTaskRequest(id=task.id))
    assert still.status.state == INPUT and openwop(still)["interrupt"]["interruptId"] == second
    assert openwop(await client.get_task(GetTaskRequest(id=other.id)))["interrupt"]["interruptId"] == other_id
    done = await send(client, message(task_id=task.id, interrupt={"action": "accept", "interruptId": second}))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED


@pytest.mark.parametrize(
    ("skill", "kind"), [("conformance-approval", "approval"), ("conformance-clarification", "clarification")]
)
async def test_a_task_advertises_the_answer_schema_of_its_kind(
    agent: Agent, engine: Engine, skill: str, kind: str
) -> None:
    task = await send(agent.client(), message(skill=skill))
    interrupt = openwop(task)["interrupt"]
    [record] = await engine.run_interrupts(task.id, open_only=True)
    assert "resumeSchema" not in record.payload  # nothing declared: the kind's own schema is advertised
    assert interrupt["resumeSchema"] == kinds.kind_of(kind).response_schema(record.payload)
    with pytest.raises(jsonschema.ValidationError):  # an empty answer does not pass, as it did with ``{}``
        jsonschema.validate({}, interrupt["resumeSchema"])


async def test_a_task_waiting_on_a_child_that_waits_for_a_person_is_input_required(
    agent: Agent, engine: Engine
) -> None:
    client = agent.client()
    task = await send(client, message(skill="conformance-interrupt-parent-child-cancel"))
    for _ in range(500):
        got = await client.get_task(GetTaskRequest(id=task.id))
        if got.status.state == INPUT:
            break
        await asyncio.sleep(0.01)
    assert got.status.state == INPUT
    assert openwop(got)["status"] == "waiting-approval"
    [child] = await engine.store.child_runs(task.id)
    assert openwop(got)["interrupt"]["nodeId"] == "child-gate"
    # The task's message answers the child's gate, and the parent goes on to its end.
    done = await send(client, message(task_id=task.id, interrupt={"action": "accept"}))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert (await engine.store.load_run(child.run_id)).status == "completed"


async def test_separation_of_duties_refuses_the_tasks_requester(agent: Agent, engine: Engine) -> None:
    from openwop_bridge import Workflow

    wf = Workflow("sod-a2a")
    wf.node("gate", type_id="core.approvalGate", config={"title": "Ship?", "separationOfDuties": True})
    wf.register(engine)
    bob = agent.client("bob")
    task = await send(bob, message(Part(text="please"), skill="sod-a2a"))
    assert task.status.state == INPUT
    with pytest.raises(InvalidRequestError) as refused:
        await send(bob, message(task_id=task.id, interrupt={"action": "accept"}))
    assert "forbidden" in str(refused.value) and "separation of duties" in str(refused.value)
    still = await bob.get_task(GetTaskRequest(id=task.id))
    assert still.status.state == INPUT
    record = await engine.store.interrupt_at(task.id, "gate")
    assert record is not None and record.open and not record.state.get("votes")
    assert not [e for e in await engine.store.read_events(task.id) if e["type"] == "approval.received"]
    done = await send(agent.client("admin"), message(task_id=task.id, interrupt={"action": "accept"}))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED


async def test_a_key_bound_gate_refuses_an_a2a_answer(agent: Agent, engine: Engine) -> None:
    from openwop_bridge import Workflow

    wf = Workflow("passkey-a2a")
    wf.node("gate", type_id="core.approvalGate", config={"title": "Ship?", "assurance": "key-bound"})
    wf.register(engine)
    bob = agent.client("bob")
    task = await send(bob, message(Part(text="please"), skill="passkey-a2a"))
    assert task.status.state == INPUT
    with pytest.raises(InvalidRequestError) as refused:
        await send(bob, message(task_id=task.id, interrupt={"action": "accept"}))
    assert "sender_constraint_missing" in str(refused.value)
    record = await engine.store.interrupt_at(task.id, "gate")
    assert record is not None and record.open and not record.state.get("votes")


async def test_a_delegate_answers_in_the_delegators_place(agent: Agent, engine: Engine) -> None:
    delegation = await alice_away(engine, "away-a2a")
    operator, bob = agent.client("operator"), agent.client("bob")
    answers = (
        lambda task_id: message(data({"voter": "alice"}), task_id=task_id, interrupt={"action": "accept"}),
        lambda task_id: message(task_id=task_id, interrupt={"action": "accept", "voter": "alice"}),
    )
    for answer in answers:
        task = await send(operator, message(Part(text="pay"), skill="away-a2a"))
        assert task.status.state == INPUT
        interrupt_id = openwop(task)["interrupt"]["interruptId"]
        done = await send(bob, answer(task.id))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        await answered_for_alice(engine, interrupt_id, delegation)
    await engine.end_delegation(ADMIN, delegation)
    task = await send(operator, message(Part(text="pay"), skill="away-a2a"))
    for answer in answers:
        with pytest.raises(InvalidRequestError) as refused:
            await send(bob, answer(task.id))
        assert str(refused.value).startswith("delegation_expired")
        assert refused.value.data is not None
        assert refused.value.data["openwop"]["details"] == {"delegationId": delegation}
    assert (await bob.get_task(GetTaskRequest(id=task.id))).status.state == INPUT
    await unanswered(engine, openwop(task)["interrupt"]["interruptId"])
