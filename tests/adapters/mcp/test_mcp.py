"""MCP: the bridge driven only through the official ``mcp`` SDK's client, on real uvicorn over loopback."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from openwop_bridge import Engine, KeyRing, Workflow
from openwop_bridge.core.auth import make_key
from openwop_bridge.host.app import create_app
from openwop_bridge.mcp import McpMount
from tests.conftest import KEYS, TOKENS, auth
from tests.helpers import ADMIN, alice_away, answered_for_alice, settle, unanswered
from tests.server import uvicorn_server

#: alice's second key: she may start runs and read them, not answer (no ``approvals:respond``).
NARROW = make_key("key-alice-narrow", principal="alice", scopes=["runs:read", "runs:create", "workflows:read"])
#: bob's key for MCP: he may list the tools (the SDK's client lists them to check a result), run and answer.
BOB_TOOLS = make_key(
    "key-bob-tools-1",
    principal="bob",
    scopes=["runs:read", "runs:create", "approvals:respond", "interrupts:read", "workflows:read"],
)
TOKENS = {**TOKENS, "alice-narrow": "key-alice-narrow", "bob-tools": "key-bob-tools-1"}

Elicit = Callable[[Any, types.ElicitRequestParams], Awaitable[types.ElicitResult | types.ErrorData]]


@pytest.fixture
async def served(engine: Engine) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    mount = McpMount(engine)
    app = create_app(
        engine,
        KeyRing([*KEYS.values(), NARROW, BOB_TOOLS]),
        manage_engine=False,
        extra_routes=[mount.route],
        on_startup=[mount.start],
        on_shutdown=[mount.stop],
    )
    async with uvicorn_server(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as rest:
        yield url, rest


def _client(url: str, who: str = "admin", *, mode: str = "auto", elicit: Elicit | None = None) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKENS[who]}"}, timeout=30)
    return Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode, elicitation_callback=elicit)


async def _call(
    url: str,
    tool: str,
    who: str = "admin",
    *,
    mode: str = "auto",
    elicit: Elicit | None = None,
) -> Any:
    """Call ``tool`` once, with no arguments, from a fresh client (see :func:`_client`); its result."""
    async with _client(url, who, mode=mode, elicit=elicit) as client:
        return await client.call_tool(tool, {})


def _answers(*results: types.ElicitResult, seen: list[types.ElicitRequestParams] | None = None) -> Elicit:
    queue = list(results)

    async def answer(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        if seen is not None:
            seen.append(params)
        return queue.pop(0)

    return answer


MODES = ["auto", "legacy"]


async def test_a_wrong_or_missing_key_is_401_and_starts_nothing(served: tuple[str, httpx.AsyncClient]) -> None:
    url, rest = served
    for headers in ({}, {"Authorization": "Bearer nope"}):
        r = await rest.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
        assert r.status_code == 401 and r.json()["error"] == "unauthenticated"
    with pytest.raises(Exception):
        async with Client(streamable_http_client(f"{url}/mcp")) as client:
            await client.list_tools()
    assert (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"] == []


@pytest.mark.parametrize("mode", MODES)
async def test_tools_are_the_listed_workflows(served: tuple[str, httpx.AsyncClient], mode: str) -> None:
    url, rest = served
    listed = sorted(w["id"] for w in (await rest.get("/v1/workflows", headers=auth("admin"))).json()["workflows"])
    async with _client(url, mode=mode) as client:
        tools = (await client.list_tools()).tools
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else client.protocol_version)
    assert [t.name for t in tools] == listed
    delay = next(t for t in tools if t.name == "conformance-delay")
    assert delay.input_schema["properties"]["delayMs"]["type"] == "number" and delay.description


@pytest.mark.parametrize("mode", MODES)
async def test_a_finished_run_returns_its_outputs(served: tuple[str, httpx.AsyncClient], mode: str) -> None:
    url, _ = served
    result = await _call(url, "conformance-noop", mode=mode)
    assert result.is_error is False and isinstance(result.structured_content, dict)


@pytest.mark.parametrize("mode", MODES)
async def test_bad_arguments_are_refused_and_create_no_run(served: tuple[str, httpx.AsyncClient], mode: str) -> None:
    url, rest = served
    async with _client(url, mode=mode) as client:
        with pytest.raises(MCPError) as err:
            await client.call_tool("conformance-delay", {"delayMs": "lots"})
    assert err.value.error.code == types.INVALID_PARAMS
    assert (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"] == []


@pytest.mark.parametrize("mode", MODES)
async def test_an_approval_accepted_declined_cancelled(
    served: tuple[str, httpx.AsyncClient], engine: Engine, mode: str
) -> None:
    url, rest = served
    seen: list[types.ElicitRequestParams] = []
    accept = types.ElicitResult(action="accept", content={"feedback": "fine"})
    ok = await _call(url, "conformance-approval", mode=mode, elicit=_answers(accept, seen=seen))
    assert ok.is_error is False, ok
    assert isinstance(seen[0], types.ElicitRequestFormParams) and seen[0].message
    assert seen[0].requested_schema["properties"]["feedback"]["type"] == "string"
    declined = await _call(
        url, "conformance-approval", mode=mode, elicit=_answers(types.ElicitResult(action="decline"))
    )
    cancelled = await _call(
        url, "conformance-approval", mode=mode, elicit=_answers(types.ElicitResult(action="cancel"))
    )
    assert cancelled.is_error is True
    runs = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    assert len(runs) == 3
    seen_actions = {}
    for listed in runs:
        record = await settle(engine, listed["runId"], statuses=("completed", "failed"))
        run = {"runId": listed["runId"], "status": record.status}
        audit = (await rest.get(f"/v1/runs/{run['runId']}/audit", headers=auth("admin"))).json()
        (entry,) = audit["entries"]
        seen_actions[entry["action"]] = (run["status"], entry["details"].get("reason"))
    assert seen_actions == {
        "approval.vote.accept": ("completed", "fine"),
        "approval.vote.reject": ("failed", None),
        "approval.cancelled": ("failed", None),
    }
    assert declined.is_error is True  # the reject route of conformance-approval fails the run


@pytest.mark.parametrize("mode", MODES)
async def test_a_clarification_answer_lands_as_over_rest(served: tuple[str, httpx.AsyncClient], mode: str) -> None:
    url, rest = served
    seen: list[types.ElicitRequestParams] = []

    async def answer(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params)
        assert isinstance(params, types.ElicitRequestFormParams)
        return types.ElicitResult(action="accept", content=dict.fromkeys(params.requested_schema["properties"], "blue"))

    result = await _call(url, "conformance-clarification", mode=mode, elicit=answer)
    assert result.is_error is False, result
    (run,) = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    snap = (await rest.get(f"/v1/runs/{run['runId']}", headers=auth("admin"))).json()
    assert "blue" in str(snap["outputs"])
    assert all(name.startswith("answers.") for name in seen[0].requested_schema["properties"])


@pytest.mark.parametrize("mode", MODES)
async def test_no_elicitation_capability_names_the_interrupt(served: tuple[str, httpx.AsyncClient], mode: str) -> None:
    url, _ = served
    result = await _call(url, "conformance-approval", mode=mode)
    assert result.is_error is True and isinstance(result.structured_content, dict)
    body = result.structured_content
    assert body["status"] == "waiting" and body["inboxUrl"].endswith("/ui/")
    (entry,) = body["interrupts"]
    assert entry["interruptId"] and entry["callbackUrl"].startswith(url)
    text = result.content[0]
    assert isinstance(text, types.TextContent) and entry["interruptId"] in text.text


@pytest.mark.parametrize("mode", MODES)
async def test_a_quorum_vote_counts_once_and_reports_waiting(served: tuple[str, httpx.AsyncClient], mode: str) -> None:
    url, _ = served
    accept = types.ElicitResult(action="accept", content={})
    result = await _call(url, "conformance-interrupt-quorum", mode=mode, elicit=_answers(accept))
    assert result.is_error is True and isinstance(result.structured_content, dict)
    body = result.structured_content
    assert body["status"] == "waiting" and "others" in body["reason"]
    assert [v["voter"] for v in body["interrupts"][0]["votes"]["votes"]] == ["alice"]


@pytest.mark.parametrize("mode", MODES)
async def test_an_answer_over_rest_during_an_open_elicitation(served: tuple[str, httpx.AsyncClient], mode: str) -> None:
    url, rest = served

    async def answer_elsewhere(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        (run,) = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
        snap = (await rest.get(f"/v1/runs/{run['runId']}", headers=auth("admin"))).json()
        (gate,) = snap["interrupts"]
        r = await rest.post(
            f"/v1/runs/{run['runId']}/interrupts/{gate['nodeId']}",
            json={"resumeValue": {"action": "accept"}},
            headers=auth("admin"),
        )
        assert r.status_code == 200, r.text
        return types.ElicitResult(action="decline")

    result = await _call(url, "conformance-approval", mode=mode, elicit=answer_elsewhere)
    assert result.is_error is False, result
    (run,) = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    audit = (await rest.get(f"/v1/runs/{run['runId']}/audit", headers=auth("admin"))).json()
    assert [e["action"] for e in audit["entries"]] == ["approval.vote.accept"]
    assert run["status"] == "completed"


async def test_tenants_neither_see_nor_answer_each_other(served: tuple[str, httpx.AsyncClient]) -> None:
    url, rest = served
    never = _answers()
    async with _client(url, "admin", elicit=never) as client:
        first = await client.session.call_tool("conformance-approval", {}, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult) and first.request_state and first.input_requests
    (gate_id,) = first.input_requests
    (run,) = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    assert (await rest.get(f"/v1/runs/{run['runId']}", headers=auth("other"))).status_code == 404
    assert (await rest.get("/v1/runs", headers=auth("other"))).json()["runs"] == []
    accept = types.ElicitResult(action="accept", content={})
    async with _client(url, "other", elicit=never) as other:
        for state in (first.request_state, first.request_state[:-4] + "AAAA"):
            with pytest.raises(MCPError):
                await other.session.call_tool(
                    "conformance-approval",
                    {},
                    input_responses={gate_id: accept},
                    request_state=state,
                    allow_input_required=True,
                )
    snap = (await rest.get(f"/v1/runs/{run['runId']}", headers=auth("admin"))).json()
    assert [i["status"] for i in snap["interrupts"]] == ["pending"]
    assert (await rest.get("/v1/runs", headers=auth("other"))).json()["runs"] == []


@pytest.mark.parametrize("mode", MODES)
async def test_progress_is_sent_when_asked(served: tuple[str, httpx.AsyncClient], mode: str) -> None:
    url, _ = served
    got: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        got.append((progress, message))

    async with _client(url, mode=mode) as client:
        result = await client.call_tool("conformance-delay", {"delayMs": 50}, progress_callback=on_progress)
    assert result.is_error is False
    assert got and "run.completed" in [m for _, m in got]


async def test_a_replayed_request_state_is_refused_and_runs_nothing(served: tuple[str, httpx.AsyncClient]) -> None:
    url, rest = served
    accept = types.ElicitResult(action="accept", content={"feedback": "once"})
    async with _client(url, elicit=_answers()) as client:
        first = await client.session.call_tool("conformance-approval", {}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult) and first.request_state and first.input_requests
        (gate_id,) = first.input_requests
        retry = {"input_responses": {gate_id: accept}, "request_state": first.request_state}
        done = await client.session.call_tool("conformance-approval", {}, allow_input_required=True, **retry)
        assert isinstance(done, types.CallToolResult) and done.is_error is False, done
        with pytest.raises(MCPError) as err:
            await client.session.call_tool("conformance-approval", {}, allow_input_required=True, **retry)
    assert err.value.error.code == types.INVALID_PARAMS and "already used" in err.value.error.message
    (run,) = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    audit = (await rest.get(f"/v1/runs/{run['runId']}/audit", headers=auth("admin"))).json()
    assert [e["action"] for e in audit["entries"]] == ["approval.vote.accept"]


def _gates(engine: Engine, workflow_id: str, gates: list[str], **config: Any) -> None:
    wf = Workflow(workflow_id)
    for gate in gates:
        wf.node(
            gate,
            type_id="core.approvalGate",
            config={"title": f"Gate {gate}", "actions": ["accept", "reject"], **config},
        )
    wf.node("after", type_id="core.noop", after=gates)
    wf.register(engine)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("who", "config"),
    [
        ("bob", {"requiredRole": "operator"}),
        ("bob", {"requiredScope": "deploy:approve"}),
        ("bob", {"approversList": ["alice"]}),
        ("alice-narrow", {}),
        ("bob", {"separationOfDuties": True}),
    ],
    ids=["role", "scope", "approvers", "no-approvals-respond", "separation-of-duties"],
)
async def test_a_key_that_cannot_answer_gets_no_form_but_the_interrupt_described(
    served: tuple[str, httpx.AsyncClient], engine: Engine, mode: str, who: str, config: dict[str, Any]
) -> None:
    url, rest = served
    _gates(engine, "governed", ["gate"], **config)
    seen: list[types.ElicitRequestParams] = []
    accept = types.ElicitResult(action="accept", content={})
    async with _client(url, who, mode=mode, elicit=_answers(accept, seen=seen)) as client:
        if mode == "auto":  # no input requests either: nothing this key could answer
            first = await client.session.call_tool("governed", {}, allow_input_required=True)
            assert isinstance(first, types.CallToolResult), first
        result = await client.call_tool("governed", {})
    assert seen == []
    assert result.is_error is True and isinstance(result.structured_content, dict)
    body = result.structured_content
    assert body["status"] == "waiting" and "may not answer" in body["reason"]
    (entry,) = body["interrupts"]
    assert entry["kind"] == "approval" and entry["title"] == "Gate gate"
    text = result.content[0]
    assert isinstance(text, types.TextContent) and entry["interruptId"] in text.text
    # Its link only looks.
    looked = await rest.get(entry["callbackUrl"])
    assert looked.status_code == 200 and looked.json()["intent"] == "inspect"
    refused = await rest.post(entry["callbackUrl"], json={"resumeValue": {"action": "accept"}})
    assert refused.status_code == 403
    runs = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    assert runs and {r["status"] for r in runs} == {"waiting-approval"}
    snap = (await rest.get(f"/v1/runs/{runs[0]['runId']}", headers=auth("admin"))).json()
    assert [i["status"] for i in snap["interrupts"]] == ["pending"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_key_that_may_answer_one_gate_of_two_gets_that_form_only(
    served: tuple[str, httpx.AsyncClient], engine: Engine, mode: str
) -> None:
    url, rest = served
    wf = Workflow("mixed-gates")
    wf.node("open", type_id="core.approvalGate", config={"title": "Gate open", "actions": ["accept", "reject"]})
    wf.node(
        "ops",
        type_id="core.approvalGate",
        config={"title": "Gate ops", "actions": ["accept", "reject"], "requiredRole": "operator"},
    )
    wf.node("after", type_id="core.noop", after=["open", "ops"])
    wf.register(engine)
    seen: list[types.ElicitRequestParams] = []
    accept = types.ElicitResult(action="accept", content={})
    result = await _call(url, "mixed-gates", "bob", mode=mode, elicit=_answers(accept, seen=seen))
    assert [p.message for p in seen] == ["Gate open"]
    assert result.is_error is True and isinstance(result.structured_content, dict)
    assert [e["title"] for e in result.structured_content["interrupts"]] == ["Gate ops"]
    (run,) = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    snap = (await rest.get(f"/v1/runs/{run['runId']}", headers=auth("admin"))).json()
    assert sorted((i["nodeId"], i["status"]) for i in snap["interrupts"]) == [("ops", "pending")]


@pytest.mark.parametrize("mode", MODES)
async def test_several_open_interrupts_are_all_asked(
    served: tuple[str, httpx.AsyncClient], engine: Engine, mode: str
) -> None:
    url, rest = served
    _gates(engine, "two-gates", ["left", "right"])
    seen: list[types.ElicitRequestParams] = []
    accept = types.ElicitResult(action="accept", content={"feedback": "yes"})
    async with _client(url, mode=mode, elicit=_answers(accept, accept, seen=seen)) as client:
        if mode == "auto":
            first = await client.session.call_tool("two-gates", {}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult) and first.input_requests
            assert len(first.input_requests) == 2
        result = await client.call_tool("two-gates", {})
    assert result.is_error is False, result
    assert sorted(p.message for p in seen[-2:]) == ["Gate left", "Gate right"]
    runs = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    done = [r for r in runs if r["status"] == "completed"]
    assert len(done) == 1
    audit = (await rest.get(f"/v1/runs/{done[0]['runId']}/audit", headers=auth("admin"))).json()
    assert (
        sorted(e["resource"] for e in audit["entries"])
        == sorted(e["resource"] for e in audit["entries"] if e["action"] == "approval.vote.accept")
        and len(audit["entries"]) == 2
    )


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "arguments",
    [{"delayMs": 2**70}, {"delayMs": -(2**64)}, {"delayMs": 1, "extra": _nested(65)}],
    ids=["beyond-u64", "below-i64", "65-deep"],
)
async def test_arguments_json_cannot_hold_are_invalid_params_without_a_traceback(
    served: tuple[str, httpx.AsyncClient], mode: str, arguments: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    url, rest = served
    async with _client(url, mode=mode) as client:
        with pytest.raises(MCPError) as err:
            await client.call_tool("conformance-delay", arguments)
        assert (await client.call_tool("conformance-delay", {"delayMs": 1})).is_error is False
    assert err.value.error.code == types.INVALID_PARAMS
    assert "Traceback" not in err.value.error.message and "Traceback" not in str(err.value.error.data)
    assert not [r for r in caplog.records if r.exc_info]
    assert len((await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]) == 1


async def test_arguments_nested_300_deep_are_invalid_params_without_a_traceback(
    served: tuple[str, httpx.AsyncClient], caplog: pytest.LogCaptureFixture
) -> None:
    # The SDK's client refuses to write such a value, so the call is sent as the wire carries it.
    _, rest = served
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    params = {"name": "conformance-delay", "_meta": meta, "arguments": {"delayMs": 1, "x": "NESTED"}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    body = body.replace('"NESTED"', "[" * 300 + "1" + "]" * 300)
    headers = {
        **auth("admin"),
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "conformance-delay",
    }
    r = await rest.post("/mcp", content=body, headers=headers)
    error = r.json()["error"]
    assert error["code"] == types.INVALID_PARAMS and "64 levels" in error["message"]
    assert "Traceback" not in r.text
    assert not [rec for rec in caplog.records if rec.exc_info]
    assert (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"] == []


async def test_an_answer_refused_403_leaves_the_request_state_usable(served: tuple[str, httpx.AsyncClient]) -> None:
    url, rest = served
    accept = types.ElicitResult(action="accept", content={"feedback": "mine"})
    async with _client(url, elicit=_answers()) as client:
        first = await client.session.call_tool("conformance-approval", {}, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult) and first.request_state and first.input_requests
    (gate_id,) = first.input_requests
    retry = {"input_responses": {gate_id: accept}, "request_state": first.request_state}
    # The same person with a key that may not answer: refused, nothing applied, the state not spent.
    async with _client(url, "alice-narrow", elicit=_answers()) as narrow:
        refused = await narrow.session.call_tool("conformance-approval", {}, allow_input_required=True, **retry)
    assert isinstance(refused, types.CallToolResult) and refused.is_error is True
    assert isinstance(refused.structured_content, dict) and refused.structured_content["error"] == "forbidden"
    (run,) = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    assert run["status"] == "waiting-approval"
    async with _client(url, elicit=_answers()) as client:
        done = await client.session.call_tool("conformance-approval", {}, allow_input_required=True, **retry)
        assert isinstance(done, types.CallToolResult) and done.is_error is False, done
        with pytest.raises(MCPError) as err:
            await client.session.call_tool("conformance-approval", {}, allow_input_required=True, **retry)
    assert "already used" in err.value.error.message
    audit = (await rest.get(f"/v1/runs/{run['runId']}/audit", headers=auth("admin"))).json()
    assert [e["action"] for e in audit["entries"]] == ["approval.vote.accept"], audit


async def test_the_sealing_key_rotates_and_retires_with_the_link_signing_keys(
    served: tuple[str, httpx.AsyncClient], engine: Engine
) -> None:
    url, rest = served
    accept = types.ElicitResult(action="accept", content={})

    async def first_round(client: Client) -> dict[str, Any]:
        got = await client.session.call_tool("conformance-approval", {}, allow_input_required=True)
        assert isinstance(got, types.InputRequiredResult) and got.request_state and got.input_requests
        (gate_id,) = got.input_requests
        return {"input_responses": {gate_id: accept}, "request_state": got.request_state}

    async def answer(client: Client, retry: dict[str, Any]) -> Any:
        return await client.session.call_tool("conformance-approval", {}, allow_input_required=True, **retry)

    async with _client(url, elicit=_answers()) as client:
        old_a, old_b = await first_round(client), await first_round(client)
        [(old_kid, active)] = await engine.signing_key_ids()
        assert active
        new_kid = await engine.rotate_signing_key()
        fresh = await first_round(client)
        # During the overlap a state sealed with the previous key still answers.
        done = await answer(client, old_a)
        assert isinstance(done, types.CallToolResult) and done.is_error is False, done
        await engine.retire_signing_key(old_kid)
        assert await engine.signing_key_ids() == [(new_kid, True)]
        # Retired: a state sealed with it no longer opens, and nothing is applied.
        with pytest.raises(MCPError) as err:
            await answer(client, old_b)
        assert err.value.error.code == types.INVALID_PARAMS
        done = await answer(client, fresh)
        assert isinstance(done, types.CallToolResult) and done.is_error is False, done
    runs = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    assert sorted(r["status"] for r in runs) == ["completed", "completed", "waiting-approval"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_delegate_answers_in_the_delegators_place(
    served: tuple[str, httpx.AsyncClient], engine: Engine, mode: str
) -> None:
    url, rest = served
    delegation = await alice_away(engine, "away-mcp")
    seen: list[types.ElicitRequestParams] = []
    accept = types.ElicitResult(action="accept", content={"voter": "alice"})
    result = await _call(url, "away-mcp", "bob-tools", mode=mode, elicit=_answers(accept, seen=seen))
    assert result.is_error is False, result
    (asked,) = seen
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert asked.requested_schema["properties"]["voter"]["enum"] == ["alice"]  # bob may answer only for alice
    (run,) = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    record = await engine.store.interrupt_at(run["runId"], "gate")
    assert run["status"] == "completed" and record is not None
    await answered_for_alice(engine, record.interrupt_id, delegation)

    async def ended_meanwhile(_ctx: Any, _params: types.ElicitRequestParams) -> types.ElicitResult:
        await engine.end_delegation(ADMIN, delegation)  # asked while it held, answered once it ended
        return accept

    result = await _call(url, "away-mcp", "bob-tools", mode=mode, elicit=ended_meanwhile)
    assert result.is_error is True and isinstance(result.structured_content, dict), result
    body = result.structured_content
    assert body["error"] == "delegation_expired" and body["details"] == {"delegationId": delegation}, body
    runs = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    (waiting,) = [r for r in runs if r["status"] == "waiting-approval"]
    record = await engine.store.interrupt_at(waiting["runId"], "gate")
    assert record is not None
    await unanswered(engine, record.interrupt_id)
    # Ended, it offers bob no form: the run waits on alice.
    result = await _call(url, "away-mcp", "bob-tools", mode=mode, elicit=_answers())
    assert result.is_error is True and isinstance(result.structured_content, dict)
    assert result.structured_content["status"] == "waiting" and "may not answer" in result.structured_content["reason"]


@pytest.mark.parametrize("mode", MODES)
async def test_an_approver_who_stands_in_chooses_whose_vote_the_form_gives(
    served: tuple[str, httpx.AsyncClient], engine: Engine, mode: str
) -> None:
    url, rest = served
    wf = Workflow("pair-mcp")
    wf.node(
        "gate",
        type_id="core.approvalGate",
        config={"title": "Pay?", "requiredApprovals": 2, "approversList": ["alice", "bob"]},
    )
    wf.register(engine)
    made = await engine.create_delegation(ADMIN, delegate="bob", until_ms=int(time.time() * 1000) + 3_600_000)
    seen: list[types.ElicitRequestParams] = []
    accept = types.ElicitResult(action="accept", content={"voter": "alice"})
    result = await _call(url, "pair-mcp", "bob-tools", mode=mode, elicit=_answers(accept, seen=seen))
    (asked,) = seen
    assert isinstance(asked, types.ElicitRequestFormParams)
    voter = asked.requested_schema["properties"]["voter"]
    assert (voter["enum"], voter["default"]) == (["bob", "alice"], "bob")  # his own vote first, then alice's
    assert result.is_error is True and isinstance(result.structured_content, dict)
    assert result.structured_content["reason"] == "your answer counted; others must answer too"
    (run,) = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    record = await engine.store.interrupt_at(run["runId"], "gate")
    assert record is not None and record.open
    (vote,) = record.state["votes"]
    assert (vote["voter"], vote["actingPrincipal"], vote["delegation"]) == ("alice", "bob", made.delegation_id)
