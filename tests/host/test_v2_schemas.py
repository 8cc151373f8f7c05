"""Everything served over OpenWOP v2 validates against the vendored official v2 schemas.

The poll response and token inspection have no file of their own under
``schemas/v2``; their parts that the schemas do define are checked: tenant-bound
ids, the owner's Subject, the events inside, the interrupt payloads. Whole
snapshots are checked against ``run-snapshot.schema.json`` in
``test_v2_scenarios_runs`` and against the OpenAPI document in ``test_v2_openapi_bodies``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from openwop_bridge import Engine
from openwop_bridge.host.v2 import ids
from openwop_bridge.spec import v2 as spec
from tests.conftest import auth
from tests.helpers import settle

V2 = {"OpenWOP-Version": "2.0"}


def _h(who: str = "admin") -> dict[str, str]:
    return {**auth(who), **V2}


def assert_event(doc: dict[str, Any]) -> None:
    """One event served over v2 validates, envelope and payload."""
    assert spec.validate_event(doc) == [], (doc["type"], doc)


def assert_envelope(resp: httpx.Response, status: int, code: str) -> None:
    """An error response is the v2 envelope with this status and code."""
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert spec.problems("error-envelope.schema.json", body) == [], body
    assert body["error"] == code, body


def assert_run_id(value: str) -> None:
    assert spec.problems("ids.schema.json", value, "/$defs/runId") == [], value


async def create(http: httpx.AsyncClient, workflow_id: str, engine: Engine) -> tuple[str, str]:
    """``(bound run id, path segment)`` of a run created over v2, settled at its first wait."""
    created = await http.post("/runs", json={"workflowId": workflow_id}, headers=_h())
    assert created.status_code == 201, created.text
    bound = created.json()["runId"]
    assert_run_id(bound)
    await settle(engine, ids.engine_id(bound.split("/", 1)[1]))
    return bound, ids.project(bound)


async def poll_all(http: httpx.AsyncClient, wire: str) -> dict[str, Any]:
    page = await http.get(f"/runs/{wire}/events/poll", params={"timeout": 1}, headers=_h())
    assert page.status_code == 200, page.text
    doc: dict[str, Any] = page.json()
    return doc


def check_snapshot(snap: dict[str, Any]) -> None:
    """The parts of a v2 RunSnapshot the schemas define."""
    assert_run_id(snap["runId"])
    assert spec.problems("subject.schema.json", snap["owner"]["subject"]) == [], snap["owner"]
    assert spec.problems("ids.schema.json", snap["owner"]["tenant"], "/$defs/tenantId") == []
    for view in [snap.get("interrupt"), *snap.get("interrupts", [])]:
        if view:
            if "runId" in view:
                assert_run_id(view["runId"])
            assert spec.problems("ids.schema.json", view["interruptId"], "/$defs/interruptId") == [], view


async def test_approval_run_documents_and_events_validate(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    bound, wire = await create(http, "conformance-approval", engine)
    snap = (await http.get(f"/runs/{wire}", headers=_h())).json()
    check_snapshot(snap)
    token = snap["interrupt"]["interruptToken"]
    seen = await http.get(f"/interrupts/{token}", headers=V2)
    assert seen.status_code == 200, seen.text
    assert_run_id(seen.json()["runId"])
    answered = await http.post(
        f"/runs/{wire}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=_h()
    )
    assert answered.status_code == 200, answered.text
    await settle(engine, ids.engine_id(bound.split("/", 1)[1]))
    page = await poll_all(http, wire)
    assert_run_id(page["runId"])
    assert page["isTerminal"] is True and page["status"] == "completed"
    for doc in page["events"]:
        assert_event(doc)
    by_type = {d["type"]: d["payload"] for d in page["events"]}
    requested = by_type["interrupt.requested"]
    record = await engine.store.interrupt_at(ids.engine_id(bound.split("/", 1)[1]), "gate")
    assert record is not None
    # the InterruptPayload the node suspended with, verbatim but for the engine's gateId (v2 closes ApprovalData)
    assert requested == {**record.payload, "data": {k: v for k, v in record.payload["data"].items() if k != "gateId"}}
    assert "gateId" in record.payload["data"] and requested["key"] == record.key
    resolved = by_type["interrupt.resolved"]
    assert (resolved["action"], resolved["decision"]) == ("accept", "granted")
    check_snapshot((await http.get(f"/runs/{wire}", headers=_h())).json())


async def test_sse_frames_validate(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    _, wire = await create(http, "conformance-noop", engine)
    async with http.stream("GET", f"/runs/{wire}/events", headers=_h()) as resp:
        assert resp.status_code == 200
        docs = []
        async for line in resp.aiter_lines():
            if line.startswith("data:"):
                docs.append(json.loads(line[5:]))
                if docs[-1]["type"] == "run.completed":
                    break
    assert docs and docs[-1]["type"] == "run.completed"
    for doc in docs:
        assert_event(doc)


async def test_discovery_validates(live: tuple[str, httpx.AsyncClient]) -> None:
    _, http = live
    doc = (await http.get("/.well-known/openwop", headers=V2)).json()
    assert spec.problems("capabilities.schema.json", doc) == [], doc


async def test_error_envelopes_validate(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    assert_envelope(await http.get("/runs/default~2Frun-01jzzzzzzzzzzzzzzzzzzzzzzz", headers=_h()), 404, "not_found")
    assert_envelope(await http.get("/runs", headers=V2), 401, "unauthenticated")
    assert_envelope(await http.get("/interrupts/ow2.hs256.nokid.a.b", headers=V2), 401, "interrupt_token_invalid")
    assert_envelope(
        await http.get("/runs", headers={**_h(), "OpenWOP-Version": "3"}), 406, "protocol_version_unsupported"
    )


async def test_a_vote_a_rejection_and_a_cancel_validate(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    bound, wire = await create(http, "conformance-interrupt-quorum", engine)
    vote = await http.post(f"/runs/{wire}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=_h())
    assert vote.status_code == 200, vote.text
    assert (await http.post(f"/runs/{wire}/cancel", headers=_h())).status_code == 200
    await settle(engine, ids.engine_id(bound.split("/", 1)[1]), statuses=("cancelled",))
    rejected, rwire = await create(http, "conformance-approval-reject-routed", engine)
    no = await http.post(f"/runs/{rwire}/interrupts/gate", json={"resumeValue": {"action": "reject"}}, headers=_h())
    assert no.status_code == 200, no.text
    await settle(engine, ids.engine_id(rejected.split("/", 1)[1]), statuses=("completed",))

    quorum = (await poll_all(http, wire))["events"]
    for doc in quorum:
        assert_event(doc)
    interrupt_id = next(d for d in quorum if d["type"] == "node.suspended")["payload"]["interruptId"]
    granted = next(d for d in quorum if d["type"] == "approval.granted")["payload"]
    assert granted["interruptId"] == interrupt_id and granted["action"] == "accept"
    assert granted["resolvedBy"]["subjectId"] == "alice" and granted["x-quorumProgress"]["granted"] == 1

    routed = (await poll_all(http, rwire))["events"]
    for doc in routed:
        assert_event(doc)
    resolved = next(d for d in routed if d["type"] == "interrupt.resolved")["payload"]
    assert (resolved["action"], resolved["decision"], resolved["resolvedBy"]["subjectId"]) == (
        "reject",
        "rejected",
        "alice",
    )
