"""Passkey-confirmed decisions over HTTP: a key-bound gate takes an answer only with an assertion over it.

Real uvicorn, the real store, py_webauthn verifying real ES256 signatures of a software authenticator
(:mod:`tests.passkey`); the browser tests (tests/browser/test_passkeys.py) use Chromium's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from openwop_bridge import Engine, Workflow
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.host.app import create_app
from openwop_bridge.host.passkeys import MAX_PER_PERSON
from openwop_bridge.host.web import link_page, web_routes
from tests.conftest import KEYS, auth
from tests.helpers import settle
from tests.passkey import SoftAuthenticator, b64url, header
from tests.server import uvicorn_server

ARTIFACT = {"amount": 120}


def workflows(engine: Engine) -> None:
    for name, config in {
        "kb": {"assurance": "key-bound", "actions": ["accept", "reject", "edit-accept"], "artifactData": ARTIFACT},
        "plain": {"actions": ["accept", "reject"]},
    }.items():
        wf = Workflow(name)
        wf.node("gate", type_id="core.approvalGate", config={"title": "Pay?", **config})
        wf.register(engine)


@pytest.fixture
async def api(engine: Engine) -> AsyncIterator[httpx.AsyncClient]:
    workflows(engine)
    app = create_app(
        engine, KeyRing(KEYS.values()), extra_routes=web_routes(), link_page=link_page, manage_engine=False
    )
    async with uvicorn_server(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as client:
        yield client


async def start(api: httpx.AsyncClient, engine: Engine, workflow: str = "kb") -> tuple[str, str]:
    r = await api.post("/v1/runs", json={"workflowId": workflow}, headers=auth("admin"))
    assert r.status_code == 201, r.text
    run_id = r.json()["runId"]
    await settle(engine, run_id)
    view = (await api.get(f"/v1/runs/{run_id}/interrupts/gate", headers=auth("admin"))).json()
    return run_id, view["interruptId"]


async def registered(api: httpx.AsyncClient, who: str = "bob") -> SoftAuthenticator:
    key = SoftAuthenticator(str(api.base_url).rstrip("/"))
    options = (await api.post("/ui/api/passkeys/options", headers=auth(who))).json()
    r = await api.post("/ui/api/passkeys", json={"credential": key.register(options)}, headers=auth(who))
    assert r.status_code == 201, r.text
    return key


async def confirmed(
    api: httpx.AsyncClient, key: SoftAuthenticator, run_id: str, value: Any, who: str = "bob"
) -> dict[str, str]:
    body = {"runId": run_id, "nodeId": "gate", "resumeValue": value}
    r = await api.post("/ui/api/passkeys/challenge", json=body, headers=auth(who))
    assert r.status_code == 200, r.text
    return header(key.assert_(r.json()))


async def answer(
    api: httpx.AsyncClient, run_id: str, value: Any, extra: dict[str, str], who: str = "bob"
) -> httpx.Response:
    return await api.post(
        f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": value}, headers={**auth(who), **extra}
    )


async def still_open(api: httpx.AsyncClient, engine: Engine, run_id: str) -> None:
    view = (await api.get(f"/v1/runs/{run_id}/interrupts/gate", headers=auth("admin"))).json()
    assert view["status"] == "pending", view
    audit = await engine.audit(run_id)
    assert not [a for a in audit if str(a.get("action", "")).startswith("approval.vote")], audit


async def test_a_passkey_confirms_a_decision_and_the_decision_says_so(api: httpx.AsyncClient, engine: Engine) -> None:
    key = await registered(api)
    listed = (await api.get("/ui/api/passkeys", headers=auth("bob"))).json()["passkeys"]
    assert [p["credentialId"] for p in listed] == [b64url(key.credential_id)]
    run_id, interrupt_id = await start(api, engine)
    value = {"action": "accept"}
    r = await answer(api, run_id, value, await confirmed(api, key, run_id, value))
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "resolved"
    record = await engine.store.get_interrupt(interrupt_id)
    assert record is not None and record.resolution is not None
    assert record.resolution["assurance"] == "key-bound"
    assert record.state["votes"][0]["assurance"] == "key-bound"
    votes = [a for a in await engine.audit(run_id) if a["action"] == "approval.vote.accept"]
    assert [a["details"]["assurance"] for a in votes] == ["key-bound"]


async def test_without_an_assertion_a_key_bound_gate_refuses_and_stays_open(
    api: httpx.AsyncClient, engine: Engine
) -> None:
    run_id, _ = await start(api, engine)
    r = await answer(api, run_id, {"action": "accept"}, {})
    assert r.status_code == 401 and r.json()["error"] == "sender_constraint_missing", r.text
    await still_open(api, engine, run_id)


@pytest.mark.parametrize(
    ("signed", "sent"),
    [
        ({"action": "accept"}, {"action": "reject"}),
        (
            {"action": "edit-accept", "editedArtifactData": {"amount": 120}},
            {"action": "edit-accept", "editedArtifactData": {"amount": 9000}},
        ),
    ],
    ids=["accept-used-to-reject", "other-edited-value"],
)
async def test_an_assertion_for_another_answer_is_refused(
    api: httpx.AsyncClient, engine: Engine, signed: Any, sent: Any
) -> None:
    key = await registered(api)
    run_id, _ = await start(api, engine)
    r = await answer(api, run_id, sent, await confirmed(api, key, run_id, signed))
    assert r.status_code == 401 and r.json()["error"] == "sender_constraint_missing", r.text
    await still_open(api, engine, run_id)


async def test_an_assertion_for_another_interrupt_is_refused(api: httpx.AsyncClient, engine: Engine) -> None:
    key = await registered(api)
    run_a, _ = await start(api, engine)
    run_b, _ = await start(api, engine)
    value = {"action": "accept"}
    r = await answer(api, run_b, value, await confirmed(api, key, run_a, value))
    assert r.status_code == 401 and r.json()["error"] == "sender_constraint_missing", r.text
    await still_open(api, engine, run_b)
    await still_open(api, engine, run_a)


async def test_a_challenge_answers_once_even_when_refused(api: httpx.AsyncClient, engine: Engine) -> None:
    key = await registered(api)
    value = {"action": "reject", "feedback": "no"}
    run_id, _ = await start(api, engine)
    proof = await confirmed(api, key, run_id, value)
    # Bob's proof presented by Alice is refused, and spent:
    refused = await answer(api, run_id, value, proof, who="admin")
    assert refused.status_code == 401, refused.text
    again = await answer(api, run_id, value, proof)
    assert again.status_code == 401 and again.json()["error"] == "sender_constraint_missing", again.text
    await still_open(api, engine, run_id)


async def test_a_replayed_assertion_is_refused(api: httpx.AsyncClient, engine: Engine) -> None:
    key = await registered(api)
    value = {"action": "accept"}
    run_id, _ = await start(api, engine)
    proof = await confirmed(api, key, run_id, value)
    assert (await answer(api, run_id, value, proof)).status_code == 200
    replayed = await answer(api, run_id, value, proof)
    assert replayed.status_code == 401 and replayed.json()["error"] == "sender_constraint_missing", replayed.text


async def test_someone_elses_passkey_is_refused(api: httpx.AsyncClient, engine: Engine) -> None:
    await registered(api, "bob")
    alices = await registered(api, "admin")
    run_id, _ = await start(api, engine)
    value = {"action": "accept"}
    # Alice's passkey signs a challenge issued to Alice; Bob presents it.
    proof = await confirmed(api, alices, run_id, value, who="admin")
    r = await answer(api, run_id, value, proof)
    assert r.status_code == 401 and r.json()["error"] == "sender_constraint_missing", r.text
    await still_open(api, engine, run_id)


async def test_a_signed_link_is_confirmed_by_its_subjects_passkey(api: httpx.AsyncClient, engine: Engine) -> None:
    key = await registered(api)
    run_id, _ = await start(api, engine)
    minted = await api.post(
        f"/v1/runs/{run_id}/interrupts/gate/links", json={"intent": "resolve", "subject": "bob"}, headers=auth("admin")
    )
    token = minted.json()["token"]
    value = {"action": "accept"}
    bare = await api.post(f"/v1/interrupts/{token}", json={"resumeValue": value})
    assert bare.status_code == 401 and bare.json()["error"] == "sender_constraint_missing", bare.text
    options = (await api.post("/ui/api/passkeys/challenge", json={"token": token, "resumeValue": value})).json()
    r = await api.post(f"/v1/interrupts/{token}", json={"resumeValue": value}, headers=header(key.assert_(options)))
    assert r.status_code == 200 and r.json()["status"] == "resolved", r.text


async def test_a_bearer_gate_answers_as_before_and_records_bearer(api: httpx.AsyncClient, engine: Engine) -> None:
    run_id, interrupt_id = await start(api, engine, "plain")
    r = await answer(api, run_id, {"action": "accept"}, {})
    assert r.status_code == 200 and r.json()["status"] == "resolved", r.text
    record = await engine.store.get_interrupt(interrupt_id)
    assert record is not None and record.resolution is not None and record.resolution["assurance"] == "bearer"


async def test_v2_and_batch_answers_to_a_key_bound_gate_are_refused(api: httpx.AsyncClient, engine: Engine) -> None:
    run_id, _ = await start(api, engine)
    batch = await api.post(
        "/v1/interrupts/batch",
        json={"items": [{"runId": run_id, "nodeId": "gate", "resumeValue": {"action": "accept"}}]},
        headers=auth("bob"),
    )
    assert "sender_constraint_missing" in batch.text, batch.text
    v2 = {**auth("bob"), "OpenWOP-Version": "2.0"}
    created = await api.post("/runs", json={"workflowId": "kb"}, headers=v2)
    assert created.status_code == 201, created.text
    bound = created.json()["runId"]
    await settle(
        engine,
        (await engine.store.list_runs("default", workflow_id="kb", status=None, limit=1, cursor=None))[0][0].run_id,
    )
    refused = await api.post(
        f"/runs/{quote(bound, safe='')}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=v2
    )
    assert refused.status_code == 401 and refused.json()["error"] == "sender_constraint_missing", refused.text
    await still_open(api, engine, run_id)


async def test_passkeys_are_bounded_per_person(api: httpx.AsyncClient) -> None:
    for _ in range(MAX_PER_PERSON):
        await registered(api)
    r = await api.post("/ui/api/passkeys/options", headers=auth("bob"))
    assert r.status_code == 409, r.text


async def test_v2_takes_the_passkey_header_as_v1_does(api: httpx.AsyncClient, engine: Engine) -> None:
    key = await registered(api)
    v2 = {**auth("bob"), "OpenWOP-Version": "2.0"}
    created = await api.post("/runs", json={"workflowId": "kb"}, headers=v2)
    assert created.status_code == 201, created.text
    bound = created.json()["runId"]
    run_id = (await engine.store.list_runs("default", workflow_id="kb", status=None, limit=1, cursor=None))[0][0].run_id
    await settle(engine, run_id)
    value = {"action": "accept"}
    confirmed_answer = await api.post(
        f"/runs/{quote(bound, safe='')}/interrupts/gate",
        json={"resumeValue": value},
        headers={**v2, **await confirmed(api, key, run_id, value)},
    )
    assert confirmed_answer.status_code == 200, confirmed_answer.text
    record = await engine.store.interrupt_at(run_id, "gate")
    assert record is not None and record.resolution is not None and record.resolution["assurance"] == "key-bound"
