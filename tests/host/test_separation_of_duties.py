"""Separation of duties: whoever started a run may not decide its approval gates.

A gate says ``"separationOfDuties": true`` (or the host makes it the default for every
approval, ``EngineConfig.separation_of_duties`` / ``serve --separation-of-duties``). Then the
run's requesters (its owner, and the owners of the run it replays) may not vote or answer on
it, on any surface, by key, by a signed link, or through someone allowed to act for others:
403 naming the rule, no vote recorded, the interrupt left open. A gate no one else could ever
answer is refused when it opens.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from openwop_bridge import Engine, EngineConfig, NodeContext, SqliteStore, Workflow, approval
from openwop_bridge.core import separation
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.host.app import create_app
from tests.conftest import KEYS, auth, fixture_workflows
from tests.helpers import envelope, events, settle

_RULE = "separation of duties"


def _gate(engine: Engine, workflow_id: str, **config: Any) -> None:
    wf = Workflow(workflow_id)
    wf.node("gate", type_id="core.approvalGate", config={"title": "Deploy?", "actions": ["accept", "reject"], **config})
    wf.node("after", type_id="core.noop", after="gate")
    wf.register(engine)


async def _start(client: httpx.AsyncClient, engine: Engine, workflow: str, who: str) -> str:
    r = await client.post("/v1/runs", json={"workflowId": workflow}, headers=auth(who))
    assert r.status_code == 201, r.text
    await settle(engine, r.json()["runId"])
    return str(r.json()["runId"])


async def _vote(client: httpx.AsyncClient, run_id: str, value: Any, who: str) -> httpx.Response:
    return await client.post(f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": value}, headers=auth(who))


async def _still_open(engine: Engine, run_id: str) -> None:
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None and record.open and not record.state.get("votes")
    assert (await engine.store.load_run(run_id)).status == "waiting-approval"
    assert await events(engine, run_id, "approval.received") == []


async def test_the_runs_owner_may_not_decide_its_gate(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "sod", separationOfDuties=True, actions=["accept", "reject", "ask"])
    run_id = await _start(client, engine, "sod", who="bob")
    for value in ({"action": "accept"}, {"action": "reject"}, {"action": "ask", "question": "may I?"}):
        refused = envelope(await _vote(client, run_id, value, who="bob"), 403, "forbidden")
        assert _RULE in refused["message"] and "bob" in refused["message"], refused
    await _still_open(engine, run_id)
    decided = (await events(engine, run_id, "authorization.decided"))[0]["payload"]
    assert decided["allowed"] is False and _RULE in decided["reason"]
    accepted = await _vote(client, run_id, {"action": "accept"}, who="admin")
    assert accepted.status_code == 200 and accepted.json()["status"] == "resolved", accepted.text
    assert (await settle(engine, run_id)).status == "completed"


async def test_acting_for_others_does_not_get_around_it(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "sod-act-as", separationOfDuties=True)
    # alice (an admin) starts the run: she may not vote as someone else either,
    run_id = await _start(client, engine, "sod-act-as", who="admin")
    refused = await _vote(client, run_id, {"action": "accept", "voter": "carol"}, who="admin")
    assert _RULE in envelope(refused, 403, "forbidden")["message"]
    # and an operator may not cast her vote for her.
    refused = await _vote(client, run_id, {"action": "accept", "voter": "alice"}, who="operator")
    assert _RULE in envelope(refused, 403, "forbidden")["message"]
    await _still_open(engine, run_id)
    assert (await _vote(client, run_id, {"action": "accept"}, who="bob")).json()["status"] == "resolved"


async def test_a_link_made_out_to_the_owner_cannot_decide(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "sod-link", separationOfDuties=True)
    run_id = await _start(client, engine, "sod-link", who="bob")
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None
    own, _ = engine.mint_token(record, "resolve", subject="bob")
    refused = await client.post(f"/v1/interrupts/{own}", json={"resumeValue": {"action": "accept"}})
    assert _RULE in envelope(refused, 403, "forbidden")["message"]
    await _still_open(engine, run_id)
    other, _ = engine.mint_token(record, "resolve", subject="carol")
    accepted = await client.post(f"/v1/interrupts/{other}", json={"resumeValue": {"action": "accept"}})
    assert accepted.status_code == 200, accepted.text
    assert (await settle(engine, run_id)).status == "completed"


async def test_the_v2_surface_refuses_the_owner_too(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "sod-v2", separationOfDuties=True)
    v2 = {**auth("bob"), "OpenWOP-Version": "2.0"}
    created = await client.post("/runs", json={"workflowId": "sod-v2"}, headers=v2)
    assert created.status_code == 201, created.text
    bound = created.json()["runId"]
    run_id = (await engine.store.list_runs("default", workflow_id="sod-v2", status=None, limit=1, cursor=None))[0][
        0
    ].run_id
    await settle(engine, run_id)
    refused = await client.post(
        f"/runs/{quote(bound, safe='')}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=v2
    )
    assert refused.status_code == 403, refused.text
    assert _RULE in refused.json()["message"]
    await _still_open(engine, run_id)


async def test_a_gate_only_the_owner_could_answer_is_refused_when_it_opens(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    _gate(engine, "sod-alone", separationOfDuties=True, approversList=["bob"])
    run_id = await _start(client, engine, "sod-alone", who="bob")
    done = await settle(engine, run_id)
    assert done.status == "failed"
    error = done.state["error"]
    assert error["code"] == "validation_error" and _RULE in str(error), error
    assert await engine.store.interrupt_at(run_id, "gate") is None
    # Another requester leaves bob to answer: the same gate opens.
    run_id = await _start(client, engine, "sod-alone", who="admin")
    assert (await _vote(client, run_id, {"action": "accept"}, who="bob")).json()["status"] == "resolved"


async def test_a_quorum_the_owner_would_be_needed_for_is_refused_when_it_opens(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    _gate(engine, "sod-pair", separationOfDuties=True, approversList=["bob", "carol"], requiredApprovals=2)
    run_id = await _start(client, engine, "sod-pair", who="bob")
    assert (await settle(engine, run_id)).status == "failed"


async def test_a_replay_keeps_the_first_requester_out(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "sod-replay", separationOfDuties=True)
    run_id = await _start(client, engine, "sod-replay", who="bob")
    assert (await _vote(client, run_id, {"action": "reject"}, who="admin")).status_code == 200
    await settle(engine, run_id)
    replayed = await client.post(f"/v1/runs/{run_id}:fork", json={"mode": "replay"}, headers=auth("admin"))
    assert replayed.status_code == 201, replayed.text
    replay = await engine.store.load_run(replayed.json()["runId"])
    assert replay is not None
    # The replay takes the recorded answers; a gate it opens anew keeps bob out, and alice, who forked it.
    assert (replay.spec["principal"], replay.spec["forkedBy"]) == ("bob", "alice")  # the owner is the source's
    assert separation.requesters(replay.spec) == {"alice", "bob"}
    assert separation.refusal({"separationOfDuties": True}, replay.spec, ["bob"]) is not None


async def _host_default(tmp_path: Path, separation: bool) -> tuple[Engine, httpx.AsyncClient]:
    engine = Engine(
        SqliteStore(tmp_path / f"sod-{separation}.db"),
        workflows=fixture_workflows(),
        config=EngineConfig(separation_of_duties=separation),
    )
    await engine.start()
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False)
    return engine, httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test")


async def test_the_host_can_make_it_the_default_and_a_gate_can_opt_out(tmp_path: Path) -> None:
    engine, client = await _host_default(tmp_path, True)
    try:
        _gate(engine, "plain")
        _gate(engine, "opted-out", separationOfDuties=False)
        run_id = await _start(client, engine, "plain", who="bob")
        record = await engine.store.interrupt_at(run_id, "gate")
        assert record is not None and record.payload["data"]["separationOfDuties"] is True
        assert (
            _RULE in envelope(await _vote(client, run_id, {"action": "accept"}, who="bob"), 403, "forbidden")["message"]
        )
        run_id = await _start(client, engine, "opted-out", who="bob")
        assert (await _vote(client, run_id, {"action": "accept"}, who="bob")).json()["status"] == "resolved"
    finally:
        await client.aclose()
        await engine.stop()
    engine, client = await _host_default(tmp_path, False)
    try:
        _gate(engine, "plain")
        run_id = await _start(client, engine, "plain", who="bob")
        assert (await _vote(client, run_id, {"action": "accept"}, who="bob")).json()["status"] == "resolved"
    finally:
        await client.aclose()
        await engine.stop()


async def test_the_python_api_sets_it_on_an_approval(client: httpx.AsyncClient, engine: Engine) -> None:
    async def ask(ctx: NodeContext) -> Any:
        return await ctx.interrupt(approval("Ship it?", separation_of_duties=True))

    wf = Workflow("sod-code")
    wf.node("gate", ask)
    wf.register(engine)
    run_id = await _start(client, engine, "sod-code", who="bob")
    assert _RULE in envelope(await _vote(client, run_id, {"action": "accept"}, who="bob"), 403, "forbidden")["message"]
    assert (await _vote(client, run_id, {"action": "accept"}, who="admin")).json()["status"] == "resolved"


def test_the_field_must_be_a_boolean(engine: Engine) -> None:
    from openwop_bridge.core.errors import ValidationError

    with pytest.raises(ValidationError) as caught:
        _gate(engine, "sod-bad", separationOfDuties="yes")
    assert "separationOfDuties" in str(caught.value.details)


async def test_a_langgraph_helper_approval_separates_duties(client: httpx.AsyncClient, engine: Engine) -> None:
    from openwop_bridge.langgraph import GraphWorkflows
    from tests import graphs

    lg = GraphWorkflows(engine)
    try:
        lg.add("publish-sod", graphs.approve_graph(separation_of_duties=True))
        run_id = await _start(client, engine, "publish-sod", who="bob")
        snap = (await client.get(f"/v1/runs/{run_id}", headers=auth("bob"))).json()
        node = snap["interrupt"]["nodeId"]
        path = f"/v1/runs/{run_id}/interrupts/{node}"
        refused = await client.post(path, json={"resumeValue": {"action": "accept"}}, headers=auth("bob"))
        assert _RULE in envelope(refused, 403, "forbidden")["message"]
        accepted = await client.post(path, json={"resumeValue": {"action": "accept"}}, headers=auth("admin"))
        assert accepted.status_code == 200, accepted.text
        done = await settle(engine, run_id)
        assert done.status == "completed" and done.state["outputs"]["graph"]["state"]["decided_by"] == "alice"
    finally:
        await lg.close()


def test_serve_separation_of_duties_is_the_default_for_every_approval(tmp_path: Path) -> None:
    from tests.server import ServerProcess

    keys = ["--api-key", "bob=key-bob-000001", "--api-key", "carol=key-carol-00001"]
    with ServerProcess(tmp_path / "serve.db", [*keys, "--separation-of-duties"]) as server:
        bob = {"Authorization": "Bearer key-bob-000001"}
        carol = {"Authorization": "Bearer key-carol-00001"}
        created = httpx.post(f"{server.url}/v1/runs", json={"workflowId": "demo-expense-approval"}, headers=bob)
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        path = f"{server.url}/v1/runs/{run_id}/interrupts/review"
        for _ in range(200):
            if httpx.get(f"{server.url}/v1/runs/{run_id}", headers=bob).json()["status"] == "waiting-approval":
                break
            time.sleep(0.05)
        refused = httpx.post(path, json={"resumeValue": {"action": "accept"}}, headers=bob)
        assert _RULE in envelope(refused, 403, "forbidden")["message"]
        accepted = httpx.post(path, json={"resumeValue": {"action": "accept"}}, headers=carol)
        assert accepted.status_code == 200, accepted.text
