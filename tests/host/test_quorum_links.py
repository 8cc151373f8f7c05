"""A quorum counts people: links on a gate that needs several approvals name the person they are for.

On a gate with ``requiredApprovals > 1`` every link a view hands out names its reader, a
link that names no one cannot vote (403, nothing recorded), and minting a resolve link
for such a gate needs a subject. The same on v1 and v2; two instances are in
``tests/process/test_multi_instance.py``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx

from openwop_bridge import Engine, SqliteStore, Workflow
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.host.app import create_app
from openwop_bridge.host.v2 import ids
from openwop_bridge.host.v2 import tokens as v2_tokens
from tests.conftest import KEYS, auth, fixture_workflows
from tests.helpers import envelope, event_types, settle
from tests.host.test_v2_schemas import assert_envelope
from tests.host.v2_scenario import V2, enc, h, wait_status

ACCEPT = {"resumeValue": {"action": "accept"}}


def _pair_gate(engine: Engine, workflow_id: str = "quorum-pair", **config: Any) -> None:
    """The official quorum fixture's shape with two approvals: ``approversList`` empty."""
    wf = Workflow(workflow_id)
    wf.node(
        "gate",
        type_id="core.approvalGate",
        config={"title": "Ship?", "actions": ["accept", "reject", "ask"], "requiredApprovals": 2, "approversList": []}
        | config,
    )
    wf.node("after", type_id="core.noop", after="gate")
    wf.register(engine)


def _unnamed_link(engine: Engine, record: InterruptRecord) -> str:
    """A resolve link that names no one, as a host without the quorum rule minted them."""
    assert engine.signer is not None
    expires = engine.clock.now_ms() + 60_000
    return engine.signer.mint(record.run_id, record.node_id, record.interrupt_id, expires, "resolve")


def _claims(link: str) -> dict[str, Any]:
    """The signed claims of a link (v1 or v2 spelling) or token."""
    token = link.rsplit("/", 1)[-1]
    head = token.split(".")[-2]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    return claims


async def _started(client: httpx.AsyncClient, engine: Engine, workflow_id: str = "quorum-pair") -> str:
    r = await client.post("/v1/runs", json={"workflowId": workflow_id}, headers=auth("admin"))
    assert r.status_code == 201, r.text
    await settle(engine, r.json()["runId"])
    return str(r.json()["runId"])


async def _voters(engine: Engine, run_id: str) -> list[str]:
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None
    return [v["voter"] for v in record.state.get("votes", [])]


async def test_one_person_cannot_fill_a_two_person_quorum_with_the_link_from_her_own_snapshot(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    _pair_gate(engine)
    run_id = await _started(client, engine)
    mine = await client.post(f"/v1/runs/{run_id}/interrupts/gate", json=ACCEPT, headers=auth("admin"))
    assert mine.status_code == 200 and mine.json()["status"] == "pending", mine.text
    snap = (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()
    detail = (await client.get(f"/v1/runs/{run_id}/interrupts/gate", headers=auth("admin"))).json()
    for link in (snap["interrupt"]["callbackUrl"], snap["interrupts"][0]["callbackUrl"], detail["callbackUrl"]):
        assert _claims(link).get("sub") == "alice"  # alice's view hands alice a link that names her
        again = await client.post(link.removeprefix("http://bridge.test"), json=ACCEPT)  # no key
        assert again.status_code == 200 and again.json()["status"] == "pending", again.text
        assert again.json().get("duplicate") is True
    assert await _voters(engine, run_id) == ["alice"]
    assert (await engine.store.load_run(run_id)).status == "waiting-approval"
    assert "interrupt.resolved" not in await event_types(engine, run_id)
    # bob's view names bob; his vote is the second person's, and it settles the gate.
    bobs = (await client.get(f"/v1/runs/{run_id}", headers=auth("bob"))).json()["interrupt"]["callbackUrl"]
    assert _claims(bobs).get("sub") == "bob"
    done = await client.post(bobs.removeprefix("http://bridge.test"), json=ACCEPT)
    assert done.status_code == 200 and done.json()["status"] == "resolved", done.text
    assert (await settle(engine, run_id)).status == "completed"
    assert await _voters(engine, run_id) == ["alice", "bob"]


async def test_a_link_that_names_no_one_cannot_vote_on_a_quorum_gate(client: httpx.AsyncClient, engine: Engine) -> None:
    _pair_gate(engine)
    run_id = await _started(client, engine)
    assert (await client.post(f"/v1/runs/{run_id}/interrupts/gate", json=ACCEPT, headers=auth("admin"))).is_success
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None
    anonymous = _unnamed_link(engine, record)
    before = await engine.store.read_events(run_id)
    for value in ({"action": "accept"}, {"action": "reject"}, {"action": "ask", "question": "why?"}):
        refused = await client.post(f"/v1/interrupts/{anonymous}", json={"resumeValue": value})
        body = envelope(refused, 403, "forbidden")
        assert "names no one" in body["message"] and "2 approvals" in body["message"]
    assert await engine.store.read_events(run_id) == before  # nothing recorded
    assert await _voters(engine, run_id) == ["alice"]
    fresh = await engine.store.interrupt_at(run_id, "gate")
    assert fresh is not None and fresh.open and not fresh.state.get("askExchanges")
    # The same link sent with a key votes as that key's holder: a person, counted once.
    as_alice = await client.post(f"/v1/interrupts/{anonymous}", json=ACCEPT, headers=auth("admin"))
    assert as_alice.status_code == 200 and as_alice.json().get("duplicate") is True
    as_bob = await client.post(f"/v1/interrupts/{anonymous}", json=ACCEPT, headers=auth("bob"))
    assert as_bob.status_code == 200 and as_bob.json()["status"] == "resolved", as_bob.text
    assert (await settle(engine, run_id)).status == "completed"


async def test_the_official_quorum_fixture_refuses_a_link_that_names_no_one(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    run_id = await _started(client, engine, "conformance-interrupt-quorum")
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None
    token = _unnamed_link(engine, record)
    envelope(await client.post(f"/v1/interrupts/{token}", json=ACCEPT), 403, "forbidden")
    assert await _voters(engine, run_id) == []


async def test_views_of_a_quorum_gate_hand_each_reader_a_link_that_names_them(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    _pair_gate(engine)
    run_id = await _started(client, engine)
    for who, principal, intent in (
        ("admin", "alice", "resolve"),
        ("bob", "bob", "resolve"),
        ("reader", "rita", "inspect"),
    ):
        snap = (await client.get(f"/v1/runs/{run_id}", headers=auth(who))).json()
        claims = _claims(snap["interrupt"]["interruptToken"])
        assert (claims.get("sub"), claims["intent"]) == (principal, intent)
        assert snap["interrupt"]["tokenIntent"] == intent
    # A single-approval gate keeps its one link for whoever reads it.
    single = await _started(client, engine, "conformance-approval")
    snap = (await client.get(f"/v1/runs/{single}", headers=auth("bob"))).json()
    assert "sub" not in _claims(snap["interrupt"]["interruptToken"])


async def test_minting_a_resolve_link_for_a_quorum_gate_needs_a_subject(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    _pair_gate(engine)
    run_id = await _started(client, engine)
    url = f"/v1/runs/{run_id}/interrupts/gate/links"
    refused = await client.post(url, json={"intent": "resolve"}, headers=auth("operator"))
    assert "subject" in envelope(refused, 400, "validation_error")["message"]
    looking = await client.post(url, json={"intent": "inspect"}, headers=auth("operator"))
    assert looking.status_code == 201, looking.text
    named = await client.post(url, json={"intent": "resolve", "subject": "carol"}, headers=auth("operator"))
    assert named.status_code == 201 and _claims(named.json()["token"])["sub"] == "carol"
    assert await _voters(engine, run_id) == []


async def test_over_v2_one_person_cannot_fill_a_two_person_quorum(
    engine: Engine, live: tuple[str, httpx.AsyncClient]
) -> None:
    _pair_gate(engine)
    _, http = live
    created = await http.post("/runs", json={"workflowId": "quorum-pair"}, headers=h())
    assert created.status_code == 201, created.text
    run_id = created.json()["runId"]
    assert (await wait_status(http, run_id, ("waiting-approval",)))["status"] == "waiting-approval"
    mine = await http.post(f"/runs/{enc(run_id)}/interrupts/gate", json=ACCEPT, headers=h())
    assert mine.status_code == 200 and mine.json()["status"] == "pending", mine.text
    snap = (await http.get(f"/runs/{enc(run_id)}", headers=h())).json()
    link = snap["interrupt"]["callbackUrl"]
    assert link.split("/interrupts/", 1)[1].startswith("ow2.") and _claims(link).get("sub") == "alice"
    again = await http.post(link, json=ACCEPT, headers=V2)  # alice's own link, without her key
    assert again.status_code == 200 and again.json()["status"] == "pending", again.text
    record = await engine.store.interrupt_at(ids.engine_id(ids.split(run_id)[1]), "gate")
    assert record is not None
    token = v2_tokens.to_v2(_unnamed_link(engine, record))
    refused = await http.post(f"/interrupts/{token}", json=ACCEPT, headers=V2)
    assert_envelope(refused, 403, "forbidden")
    assert "names no one" in refused.json()["message"]
    assert [v["voter"] for v in (await engine.store.get_interrupt(record.interrupt_id)).state["votes"]] == ["alice"]
    assert (await wait_status(http, run_id, ("waiting-approval",)))["status"] == "waiting-approval"


class _CountingAsk:
    """An ask service that counts the questions it is put."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def answer(self, record: InterruptRecord, question: str, asked_by: str) -> str:
        self.asked.append(asked_by)
        return "an answer"


async def test_a_link_that_names_no_one_does_not_reach_the_ask_service(tmp_path: Path) -> None:
    ask = _CountingAsk()
    engine = Engine(SqliteStore(tmp_path / "ask.db"), workflows=fixture_workflows(), ask_service=ask)
    await engine.start()
    try:
        app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test") as client:
            _pair_gate(engine)
            run_id = await _started(client, engine)
            record = await engine.store.interrupt_at(run_id, "gate")
            assert record is not None
            question = {"resumeValue": {"action": "ask", "question": "why?"}}
            refused = await client.post(f"/v1/interrupts/{_unnamed_link(engine, record)}", json=question)
            envelope(refused, 403, "forbidden")
            assert ask.asked == []
            named, _ = engine.mint_token(record, "resolve", subject="bob")
            asked = await client.post(f"/v1/interrupts/{named}", json=question)
            assert asked.status_code == 200 and ask.asked == ["bob"], asked.text
    finally:
        await engine.stop()
