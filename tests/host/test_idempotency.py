"""``Idempotency-Key`` on ``POST /v1/runs`` and on every resolve: replay, mismatch, scope, durability."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from openwop_bridge import Engine, SqliteStore
from openwop_bridge.core.auth import KeyRing, make_key
from openwop_bridge.host.app import create_app
from openwop_bridge.runtime.config import EngineConfig
from tests.conftest import KEYS, auth, fixture_workflows
from tests.helpers import envelope, settle

REPLAY = "openwop-idempotent-replay"


def _key(name: str) -> dict[str, str]:
    return {"Idempotency-Key": f"{name}-6f1c2a0e-8d7b-4c1e-9a51-2b3c4d5e6f70"}


async def _runs(client: httpx.AsyncClient, who: str = "admin") -> list[str]:
    r = await client.get("/v1/runs", params={"limit": 500}, headers=auth(who))
    return [run["runId"] for run in r.json()["runs"]]


async def _waiting(client: httpx.AsyncClient, engine: Engine) -> str:
    r = await client.post("/v1/runs", json={"workflowId": "conformance-approval"}, headers=auth("admin"))
    assert r.status_code == 201, r.text
    run_id: str = r.json()["runId"]
    await settle(engine, run_id)
    return run_id


async def test_a_retried_create_replays_the_first_response_and_starts_one_run(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    body = {"workflowId": "conformance-approval", "inputs": {"n": 1}}
    first = await client.post("/v1/runs", json=body, headers={**auth("admin"), **_key("create")})
    assert first.status_code == 201 and REPLAY not in first.headers
    # The same JSON, spelled differently (key order, spacing), is the same request.
    again = await client.post(
        "/v1/runs",
        content=b'{ "inputs": {"n": 1},  "workflowId": "conformance-approval" }',
        headers={**auth("admin"), **_key("create"), "Content-Type": "application/json"},
    )
    assert again.status_code == 201, again.text
    assert again.json() == first.json() and again.headers["location"] == first.headers["location"]
    assert again.headers[REPLAY] == "true"
    assert await _runs(client) == [first.json()["runId"]]


async def test_the_same_key_with_another_body_is_refused_and_starts_nothing(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    h = {**auth("admin"), **_key("mismatch")}
    first = await client.post("/v1/runs", json={"workflowId": "conformance-approval"}, headers=h)
    assert first.status_code == 201
    other = await client.post("/v1/runs", json={"workflowId": "conformance-noop"}, headers=h)
    body = envelope(other, 409, "idempotency_key_mismatch")
    assert first.json()["runId"] not in other.text and body["message"]
    assert await _runs(client) == [first.json()["runId"]]


async def test_keys_are_scoped_to_the_tenant_and_the_principal(client: httpx.AsyncClient, engine: Engine) -> None:
    body = {"workflowId": "conformance-noop"}
    runs = set()
    for who in ("admin", "bob", "other"):
        r = await client.post("/v1/runs", json=body, headers={**auth(who), **_key("shared")})
        assert r.status_code == 201 and REPLAY not in r.headers, r.text
        runs.add(r.json()["runId"])
    assert len(runs) == 3


async def test_refusals_that_a_retry_can_fix_are_not_remembered(client: httpx.AsyncClient, engine: Engine) -> None:
    h = {**auth("admin"), **_key("fixable")}
    envelope(await client.post("/v1/runs", json={"workflowId": ""}, headers=h), 400, "validation_error")
    envelope(await client.post("/v1/runs", json={"workflowId": "nope"}, headers=h), 404, "workflow_not_found")
    envelope(
        await client.post("/v1/runs", json={"workflowId": "conformance-noop"}, headers={**auth("reader"), **_key("f")}),
        403,
        "forbidden",
    )
    ok = await client.post("/v1/runs", json={"workflowId": "conformance-noop"}, headers=h)
    assert ok.status_code == 201 and REPLAY not in ok.headers


@pytest.mark.parametrize("key", ["", "x" * 256, "has space", "caf\u00e9"])
async def test_a_malformed_key_is_a_400(client: httpx.AsyncClient, engine: Engine, key: str) -> None:
    r = await client.post(
        "/v1/runs",
        json={"workflowId": "conformance-noop"},
        headers=[*auth("admin").items(), ("Idempotency-Key", key.encode("utf-8"))],
    )
    envelope(r, 400, "validation_error")
    assert await _runs(client) == []


async def test_concurrent_duplicates_start_one_run(client: httpx.AsyncClient, engine: Engine) -> None:
    h = {**auth("admin"), **_key("race")}
    answers = await asyncio.gather(
        *(client.post("/v1/runs", json={"workflowId": "conformance-noop"}, headers=h) for _ in range(4))
    )
    created = [r for r in answers if r.status_code == 201]
    assert created and {r.json()["runId"] for r in created} == set(await _runs(client))
    assert len(set(await _runs(client))) == 1
    for r in answers:
        if r.status_code != 201:
            body = envelope(r, 409, "idempotency_in_flight")
            assert r.headers["retry-after"] == "1" and body["details"]["retryAfter"] == 1


async def test_a_retried_run_scoped_resolve_replays_its_answer(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _waiting(client, engine)
    url = f"/v1/runs/{run_id}/interrupts/gate"
    h = {**auth("bob"), **_key("resolve")}
    first = await client.post(url, json={"resumeValue": {"action": "accept"}}, headers=h)
    assert first.status_code == 200, first.text
    await settle(engine, run_id)
    again = await client.post(url, json={"resumeValue": {"action": "accept"}}, headers=h)
    assert again.status_code == 200 and again.json() == first.json() and again.headers[REPLAY] == "true"
    envelope(
        await client.post(url, json={"resumeValue": {"action": "reject"}}, headers=h), 409, "idempotency_key_mismatch"
    )
    # Without the key, or with a fresh one, the interrupt is settled.
    envelope(
        await client.post(url, json={"resumeValue": {"action": "accept"}}, headers=auth("bob")),
        409,
        "interrupt_already_resolved",
    )
    assert (await settle(engine, run_id)).state["outputs"]["gate"]["decidedBy"] == "bob"


async def test_the_same_key_on_another_run_is_another_request(client: httpx.AsyncClient, engine: Engine) -> None:
    one, two = await _waiting(client, engine), await _waiting(client, engine)
    h = {**auth("bob"), **_key("path")}
    ok = await client.post(f"/v1/runs/{one}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=h)
    assert ok.status_code == 200
    envelope(
        await client.post(f"/v1/runs/{two}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=h),
        409,
        "idempotency_key_mismatch",
    )
    assert (await engine.store.interrupt_at(two, "gate")).open  # type: ignore[union-attr]


async def test_a_final_refusal_is_replayed_too(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _waiting(client, engine)
    await client.post(f"/v1/runs/{run_id}/cancel", headers=auth("admin"))
    await settle(engine, run_id, statuses=("cancelled",))
    url = f"/v1/runs/{run_id}/interrupts/gate"
    h = {**auth("bob"), **_key("cancelled")}
    first = await client.post(url, json={"resumeValue": {"action": "accept"}}, headers=h)
    envelope(first, 422, "interrupt_cancelled")
    again = await client.post(url, json={"resumeValue": {"action": "accept"}}, headers=h)
    assert again.status_code == 422 and again.json() == first.json() and again.headers[REPLAY] == "true"


async def test_a_retried_link_answer_replays_its_answer(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _waiting(client, engine)
    token = (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()["interrupt"]["interruptToken"]
    h = _key("link")
    first = await client.post(f"/v1/interrupts/{token}", json={"resumeValue": {"action": "accept"}}, headers=h)
    assert first.status_code == 200, first.text
    await settle(engine, run_id)
    again = await client.post(f"/v1/interrupts/{token}", json={"resumeValue": {"action": "accept"}}, headers=h)
    assert again.status_code == 200 and again.json() == first.json() and again.headers[REPLAY] == "true"
    envelope(
        await client.post(f"/v1/interrupts/{token}", json={"resumeValue": {"action": "reject"}}, headers=h),
        409,
        "idempotency_key_mismatch",
    )
    # Another link's holder using the same key value has a keyspace of its own.
    other_run = await _waiting(client, engine)
    other = (await client.get(f"/v1/runs/{other_run}", headers=auth("admin"))).json()["interrupt"]["interruptToken"]
    r = await client.post(f"/v1/interrupts/{other}", json={"resumeValue": {"action": "accept"}}, headers=h)
    assert r.status_code == 200 and REPLAY not in r.headers and r.json()["runId"] == other_run


async def test_a_retried_legacy_approval_replays_its_answer(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _waiting(client, engine)
    url = f"/v1/runs/{run_id}/approvals/gate"
    h = {**auth("bob"), **_key("legacy")}
    first = await client.post(url, json={"action": "accept"}, headers=h)
    assert first.status_code == 200, first.text
    await settle(engine, run_id)
    again = await client.post(url, json={"action": "accept"}, headers=h)
    assert again.status_code == 200 and again.json() == first.json() and again.headers[REPLAY] == "true"
    envelope(await client.post(url, json={"action": "reject"}, headers=h), 409, "idempotency_key_mismatch")


async def _serve(db: Path, config: EngineConfig | None = None) -> tuple[Engine, httpx.AsyncClient]:
    engine = Engine(SqliteStore(db), workflows=fixture_workflows(), config=config)
    await engine.start()
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False)
    return engine, httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test")


async def test_keys_survive_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "durable.db"
    body = {"workflowId": "conformance-noop"}
    h = {**auth("admin"), **_key("durable")}
    engine, client = await _serve(db)
    try:
        first = await client.post("/v1/runs", json=body, headers=h)
        assert first.status_code == 201
    finally:
        await client.aclose()
        await engine.stop()
    engine, client = await _serve(db)
    try:
        again = await client.post("/v1/runs", json=body, headers=h)
        assert again.status_code == 201 and again.json() == first.json() and again.headers[REPLAY] == "true"
        assert await _runs(client) == [first.json()["runId"]]
    finally:
        await client.aclose()
        await engine.stop()


async def test_keys_are_forgotten_after_the_retention_window(tmp_path: Path) -> None:
    engine, client = await _serve(tmp_path / "ttl.db", EngineConfig(idempotency_ttl_ms=50))
    try:
        h = {**auth("admin"), **_key("ttl")}
        first = await client.post("/v1/runs", json={"workflowId": "conformance-noop"}, headers=h)
        await asyncio.sleep(0.1)
        later = await client.post("/v1/runs", json={"workflowId": "conformance-noop"}, headers=h)
        assert later.status_code == 201 and REPLAY not in later.headers
        assert later.json()["runId"] != first.json()["runId"]
    finally:
        await client.aclose()
        await engine.stop()


async def test_a_key_of_the_same_principal_without_the_scope_gets_no_replay(engine: Engine) -> None:
    """Records are per principal on /v1; a principal's narrower key is still checked before a replay."""
    narrow = make_key("key-alice-read", principal="alice", scopes=["runs:read"])
    app = create_app(engine, KeyRing([*KEYS.values(), narrow]), manage_engine=False)
    read_only = {"Authorization": "Bearer key-alice-read"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test") as client:
        body = {"workflowId": "conformance-approval"}
        first = await client.post("/v1/runs", json=body, headers={**auth("admin"), **_key("narrow")})
        assert first.status_code == 201, first.text
        reused = await client.post("/v1/runs", json=body, headers={**read_only, **_key("narrow")})
        assert REPLAY not in reused.headers
        envelope(reused, 403, "forbidden")
        run_id = first.json()["runId"]
        await settle(engine, run_id)
        answer = {"resumeValue": {"action": "accept"}}
        for url in (f"/v1/runs/{run_id}/interrupts/gate", f"/v1/runs/{run_id}/approvals/gate"):
            done = await client.post(url, json=answer, headers={**auth("admin"), **_key("answer")})
            assert done.status_code in (200, 409), done.text
            reused = await client.post(url, json=answer, headers={**read_only, **_key("answer")})
            assert REPLAY not in reused.headers
            envelope(reused, 403, "forbidden")
