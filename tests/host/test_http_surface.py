"""The OpenWOP HTTP surface, in process: every endpoint, every error envelope."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate

from openwop_bridge import Engine, spec
from openwop_bridge.host.discovery import validate_discovery
from openwop_bridge.store.cursor import encode_cursor
from tests.conftest import auth
from tests.helpers import envelope, settle


async def _start(client: httpx.AsyncClient, engine: Engine, workflow: str, who: str = "admin", **body: Any) -> str:
    r = await client.post("/v1/runs", json={"workflowId": workflow, **body}, headers=auth(who))
    assert r.status_code == 201, r.text
    run_id: str = r.json()["runId"]
    await settle(engine, run_id)
    return run_id


async def test_discovery_is_cacheable_and_valid(client: httpx.AsyncClient, engine: Engine) -> None:
    r = await client.get("/.well-known/openwop")
    assert r.status_code == 200 and "max-age" in r.headers["cache-control"]
    doc = r.json()
    assert not validate_discovery(doc)
    assert doc["protocolVersion"] and doc["conversationPrimitive"] is True
    assert doc["replay"] == {"supported": True, "modes": ["replay"]}
    assert set(doc["fixtures"]) == {wf.id for wf in engine.workflows()}
    assert all(isinstance(v, int) for v in doc["limits"].values())
    assert doc["extensions"]["interrupts"]["signedCallbackTokens"] is True
    cached = await client.get("/.well-known/openwop", headers={"If-None-Match": r.headers["etag"]})
    assert cached.status_code == 304 and cached.content == b""


async def test_openapi_is_a_valid_3_1_document(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/openapi.json")
    doc = r.json()
    assert r.status_code == 200 and doc["openapi"].startswith("3.1")
    validate(doc)
    for path in (
        "/v1/runs",
        "/v1/runs/{runId}",
        "/v1/runs/{runId}/interrupts/{nodeId}",
        "/v1/interrupts/{token}",
        "/v1/interrupts",
        "/v1/runs/{runId}/events",
        "/v1/runs/{runId}/events/poll",
        "/v1/runs/{runId}/cancel",
        "/v1/runs/{runId}/approvals/{nodeId}",
        "/.well-known/openwop",
    ):
        assert path in doc["paths"], path


async def test_create_run_and_snapshot(client: httpx.AsyncClient, engine: Engine) -> None:
    r = await client.post(
        "/v1/runs",
        json={"workflowId": "conformance-approval", "tags": ["t1"], "metadata": {"ticket": 9}},
        headers=auth("admin"),
    )
    assert r.status_code == 201
    body = r.json()
    assert set(body) >= {"runId", "status", "eventsUrl"} and r.headers["location"].endswith(body["runId"])
    await settle(engine, body["runId"])
    snap = (await client.get(f"/v1/runs/{body['runId']}", headers=auth("admin"))).json()
    assert not list(spec.validator("run-snapshot.schema.json").iter_errors(snap))
    assert snap["status"] == "waiting-approval" and snap["currentNodeId"] == "gate"
    assert snap["interrupt"]["kind"] == "approval" and snap["interrupt"]["nodeId"] == "gate"
    assert snap["interrupt"]["callbackUrl"] == f"http://bridge.test/v1/interrupts/{snap['interrupt']['interruptToken']}"
    assert snap["interrupt"]["tokenIntent"] == "resolve"
    assert snap["tags"] == ["t1"] and snap["metadata"] == {"ticket": 9}


async def test_keys_that_cannot_answer_are_handed_inspect_links_only(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = (await client.post("/v1/runs", json={"workflowId": "conformance-approval"}, headers=auth("admin"))).json()[
        "runId"
    ]
    await settle(engine, run_id)
    for where in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/interrupts/gate"):
        got = (await client.get(where, headers=auth("reader"))).json()
        view = got.get("interrupt", got)
        assert view["tokenIntent"] == "inspect", where
        assert (await client.get(view["callbackUrl"])).status_code == 200  # it can look
        refused = await client.post(view["callbackUrl"], json={"resumeValue": {"action": "accept"}})
        envelope(refused, 403, "forbidden")  # but a read-only key never yields a way to answer
    assert (await client.get(f"/v1/runs/{run_id}", headers=auth("bob"))).json()["interrupt"]["tokenIntent"] == "resolve"
    snap = (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()
    assert snap["status"] == "waiting-approval"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"workflowId": "nope"}, 404, "workflow_not_found"),
        ({"workflowId": "conformance-approval", "extra": 1}, 400, "validation_error"),
        ({}, 400, "validation_error"),
        ({"workflowId": "conformance-approval", "tags": "x"}, 400, "validation_error"),
        ({"workflowId": "conformance-approval", "configurable": {"escalationThreshold": 3}}, 400, "validation_error"),
        ({"workflowId": "conformance-approval", "tenantId": "other"}, 403, "forbidden"),
    ],
)
async def test_create_run_errors(client: httpx.AsyncClient, body: dict, status: int, code: str) -> None:
    envelope(await client.post("/v1/runs", json=body, headers=auth("bob")), status, code)


async def test_body_errors(client: httpx.AsyncClient) -> None:
    h = auth("admin")
    envelope(
        await client.post("/v1/runs", content=b"{nope", headers={**h, "content-type": "application/json"}),
        400,
        "validation_error",
    )
    envelope(
        await client.post("/v1/runs", content=b"workflowId=x", headers={**h, "content-type": "text/plain"}),
        415,
        "unsupported_media_type",
    )
    big = b'{"workflowId": "conformance-approval", "metadata": {"x": "' + b"a" * (1024 * 1024) + b'"}}'
    envelope(
        await client.post("/v1/runs", content=big, headers={**h, "content-type": "application/json"}),
        413,
        "payload_too_large",
    )
    envelope(await client.post("/v1/runs", json=[1, 2], headers=h), 400, "validation_error")
    envelope(await client.get("/v1/nothing-here", headers=h), 404, "not_found")
    envelope(await client.delete("/v1/runs", headers=h), 405, "method_not_allowed")


async def test_auth_errors_and_tenant_isolation(client: httpx.AsyncClient, engine: Engine) -> None:
    envelope(await client.post("/v1/runs", json={"workflowId": "conformance-approval"}), 401, "unauthenticated")
    envelope(await client.get("/v1/runs/x", headers={"Authorization": "Bearer wrong-key-123"}), 401, "unauthenticated")
    envelope(
        await client.post("/v1/runs", json={"workflowId": "conformance-approval"}, headers=auth("reader")),
        403,
        "forbidden",
    )
    run_id = await _start(client, engine, "conformance-approval")
    envelope(await client.get(f"/v1/runs/{run_id}", headers=auth("other")), 404, "run_not_found")
    envelope(
        await client.post(
            f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("other")
        ),
        404,
        "run_not_found",
    )
    envelope(
        await client.post(
            f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("reader")
        ),
        403,
        "forbidden",
    )
    envelope(await client.post(f"/v1/runs/{run_id}/cancel", headers=auth("other")), 404, "run_not_found")
    listing = (await client.get("/v1/interrupts", headers=auth("other"))).json()
    assert listing["items"] == []


async def test_resolve_errors_leave_the_interrupt_open(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, "conformance-approval")
    url = f"/v1/runs/{run_id}/interrupts/gate"
    h = auth("admin")
    envelope(await client.post(url, json={"resumeValue": {"action": "refine"}}, headers=h), 400, "validation_error")
    envelope(
        await client.post(url, json={"resumeValue": {"action": "accept"}, "x": 1}, headers=h), 400, "validation_error"
    )
    envelope(await client.post(url, json={}, headers=h), 400, "validation_error")
    envelope(
        await client.post(f"/v1/runs/{run_id}/interrupts/elsewhere", json={"resumeValue": 1}, headers=h),
        404,
        "interrupt_not_found",
    )
    envelope(
        await client.post("/v1/runs/run_nope/interrupts/gate", json={"resumeValue": 1}, headers=h), 404, "run_not_found"
    )
    assert (await engine.store.interrupt_at(run_id, "gate")).status == "pending"
    r = await client.post(url, json={"resumeValue": {"action": "accept"}}, headers=h)
    assert r.status_code == 200 and r.json()["status"] == "resolved"
    envelope(
        await client.post(url, json={"resumeValue": {"action": "accept"}}, headers=h), 409, "interrupt_already_resolved"
    )
    assert (await settle(engine, run_id)).status == "completed"


async def test_cancelled_run_refuses_resolution(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, "conformance-approval")
    r = await client.post(f"/v1/runs/{run_id}/cancel", json={"reason": "test"}, headers=auth("admin"))
    assert r.status_code == 200 and r.json()["runId"] == run_id
    await settle(engine, run_id, statuses=("cancelled",))
    again = await client.post(f"/v1/runs/{run_id}/cancel", headers=auth("admin"))
    assert again.status_code == 200 and again.json() == {"runId": run_id, "status": "cancelled"}
    envelope(
        await client.post(
            f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
        ),
        422,
        "interrupt_cancelled",
    )


async def test_legacy_approval_endpoint(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, "conformance-approval")
    r = await client.post(f"/v1/runs/{run_id}/approvals/gate", json={"action": "accept"}, headers=auth("bob"))
    assert r.status_code == 200, r.text
    done = await settle(engine, run_id)
    assert done.state["outputs"]["gate"]["decidedBy"] == "bob"
    run_id = await _start(client, engine, "conformance-approval")
    r = await client.post(f"/v1/runs/{run_id}/approvals/gate", json={"decision": "rejected"}, headers=auth("bob"))
    assert r.status_code == 200
    assert (await settle(engine, run_id)).status == "failed"


async def test_signed_links(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, "conformance-approval")
    snap = (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()
    token = snap["interrupt"]["interruptToken"]
    inspect = await client.get(f"/v1/interrupts/{token}")
    assert inspect.status_code == 200 and inspect.json()["kind"] == "approval" and inspect.json()["intent"] == "resolve"
    link = await client.post(
        f"/v1/runs/{run_id}/interrupts/gate/links", json={"intent": "inspect"}, headers=auth("admin")
    )
    assert link.status_code == 201
    inspect_only = link.json()["token"]
    assert (await client.get(f"/v1/interrupts/{inspect_only}")).status_code == 200
    envelope(
        await client.post(f"/v1/interrupts/{inspect_only}", json={"resumeValue": {"action": "accept"}}),
        403,
        "forbidden",
    )
    record = await engine.store.interrupt_at(run_id, "gate")
    expired, _ = engine.mint_token(record, ttl_ms=1)
    await asyncio.sleep(0.01)
    envelope(
        await client.post(f"/v1/interrupts/{expired}", json={"resumeValue": {"action": "accept"}}),
        410,
        "interrupt_expired",
    )
    envelope(
        await client.post(f"/v1/interrupts/{token}x", json={"resumeValue": {"action": "accept"}}),
        404,
        "interrupt_not_found",
    )
    r = await client.post(f"/v1/interrupts/{token}", json={"resumeValue": {"action": "accept"}})
    assert r.status_code == 200
    envelope(
        await client.post(f"/v1/interrupts/{token}", json={"resumeValue": {"action": "accept"}}),
        409,
        "interrupt_already_resolved",
    )
    envelope(await client.get(f"/v1/interrupts/{token}"), 409, "interrupt_already_resolved")
    done = await settle(engine, run_id)
    assert done.state["outputs"]["gate"]["decidedBy"] == "signed-link"


async def test_link_subject_needs_act_as(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, "conformance-approval")
    envelope(
        await client.post(f"/v1/runs/{run_id}/interrupts/gate/links", json={"subject": "carol"}, headers=auth("bob")),
        403,
        "forbidden",
    )
    link = await client.post(
        f"/v1/runs/{run_id}/interrupts/gate/links", json={"subject": "carol"}, headers=auth("operator")
    )
    assert link.status_code == 201
    await client.post(f"/v1/interrupts/{link.json()['token']}", json={"resumeValue": {"action": "accept"}})
    assert (await settle(engine, run_id)).state["outputs"]["gate"]["decidedBy"] == "carol"


async def test_events_json_sse_and_last_event_id(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, "conformance-approval")
    await client.post(
        f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
    )
    await settle(engine, run_id)
    as_json = await client.get(f"/v1/runs/{run_id}/events", headers={**auth("admin"), "Accept": "application/json"})
    docs = as_json.json()["events"]
    assert [d["sequence"] for d in docs] == list(range(len(docs))) and docs[-1]["type"] == "run.completed"
    for doc in docs:
        assert not spec.validate_event(doc), doc["type"]
    stream = await client.get(f"/v1/runs/{run_id}/events", headers=auth("admin"))
    assert stream.headers["content-type"].startswith("text/event-stream")
    frames = [f for f in stream.text.split("\n\n") if f.startswith("id:")]
    assert len(frames) == len(docs)
    assert frames[0].splitlines()[:2] == ["id: 0", "event: run.started"]
    resumed = await client.get(f"/v1/runs/{run_id}/events", headers={**auth("admin"), "Last-Event-ID": "5"})
    ids = [int(f.splitlines()[0][4:]) for f in resumed.text.split("\n\n") if f.startswith("id:")]
    assert ids == list(range(6, len(docs)))


async def test_long_poll_waits_for_the_next_event(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _start(client, engine, "conformance-approval")
    last = (await engine.store.read_events(run_id))[-1]["sequence"]
    h = auth("admin")
    empty = await client.get(f"/v1/runs/{run_id}/events/poll", params={"lastSequence": last, "timeout": 1}, headers=h)
    assert empty.json()["events"] == [] and empty.json()["isComplete"] is False
    poll = asyncio.create_task(
        client.get(f"/v1/runs/{run_id}/events/poll", params={"lastSequence": last, "timeout": 5}, headers=h)
    )
    await asyncio.sleep(0.1)
    await client.post(f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=h)
    got = (await poll).json()
    assert got["events"] and got["events"][0]["sequence"] == last + 1
    await settle(engine, run_id)
    final = await client.get(f"/v1/runs/{run_id}/events/poll", params={"lastSequence": -1}, headers=h)
    assert final.json()["isComplete"] is True


async def test_inbox_lists_filters_and_paginates(client: httpx.AsyncClient, engine: Engine) -> None:
    for _ in range(3):
        await _start(client, engine, "conformance-approval")
    clar = await _start(client, engine, "conformance-clarification")
    h = auth("admin")
    everything = (await client.get("/v1/interrupts", headers=h)).json()["items"]
    assert len(everything) == 4
    row = everything[0]
    assert set(row) >= {"runId", "nodeId", "kind", "requestedAt", "ageMs", "inspectUrl"}
    inspect = await client.get(row["inspectUrl"].removeprefix("http://bridge.test"))
    assert inspect.status_code == 200 and inspect.json()["intent"] == "inspect"
    only = (await client.get("/v1/interrupts", params={"kind": "clarification"}, headers=h)).json()["items"]
    assert [i["runId"] for i in only] == [clar]
    page1 = (await client.get("/v1/interrupts", params={"limit": 2, "kind": "approval"}, headers=h)).json()
    page2 = (
        await client.get(
            "/v1/interrupts", params={"limit": 2, "kind": "approval", "cursor": page1["nextCursor"]}, headers=h
        )
    ).json()
    assert len(page1["items"]) == 2 and len(page2["items"]) == 1 and page2["nextCursor"] is None
    assert not {i["interruptId"] for i in page1["items"]} & {i["interruptId"] for i in page2["items"]}
    envelope(await client.get("/v1/interrupts", params={"kind": "bogus"}, headers=h), 400, "validation_error")
    envelope(await client.get("/v1/interrupts", params={"limit": "zero"}, headers=h), 400, "validation_error")
    envelope(await client.get("/v1/interrupts", params={"cursor": "!!"}, headers=h), 400, "validation_error")
    huge = base64.urlsafe_b64encode(b'[100000000000000000000,"a"]').decode().rstrip("=")
    for shape in (encode_cursor("x"), encode_cursor(1, 2, 3), huge, encode_cursor(True, "a")):
        for path in ("/v1/interrupts", "/v1/runs"):
            envelope(await client.get(path, params={"cursor": shape}, headers=h), 400, "validation_error")


async def test_last_event_id_out_of_range_is_refused(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = (await client.post("/v1/runs", json={"workflowId": "conformance-approval"}, headers=auth("admin"))).json()[
        "runId"
    ]
    for bad in ("99999999999999999999999", "-5", "abc"):
        r = await client.get(
            f"/v1/runs/{run_id}/events", headers={**auth("admin"), "Accept": "application/json", "Last-Event-ID": bad}
        )
        envelope(r, 400, "validation_error")


async def test_workflows_listing_and_definition(client: httpx.AsyncClient) -> None:
    listing = (await client.get("/v1/workflows", headers=auth("admin"))).json()["workflows"]
    assert "conformance-approval" in {w["id"] for w in listing}
    doc = (await client.get("/v1/workflows/conformance-approval", headers=auth("admin"))).json()
    assert doc == spec.load_fixture("conformance-approval")


async def test_inbox_queries_use_their_index(engine: Engine) -> None:
    reader = engine.store._read()  # type: ignore[attr-defined]
    sent: list[str] = []
    reader.set_trace_callback(sent.append)
    try:
        for kind in ("approval", None):
            await engine.store.inbox("default", kind=kind, status="pending", limit=50, cursor=None)
    finally:
        reader.set_trace_callback(None)
    by_kind, every = (" ".join(row[3] for row in reader.execute("EXPLAIN QUERY PLAN " + sql)) for sql in sent)
    assert "INDEX interrupts_inbox_kind (tenant=? AND status=? AND kind=?)" in by_kind
    # Without a kind: one range of the same index per listed kind, merged in order.
    assert every.count("INDEX interrupts_inbox_kind (tenant=? AND status=? AND kind=?)") >= 2, every
    assert "MERGE (UNION ALL)" in every
    assert "TEMP B-TREE" not in by_kind + every  # no sort: pages come straight off the index
    assert "SCAN interrupts" not in by_kind + every


async def test_create_run_refuses_inputs_that_break_declared_variables(client: httpx.AsyncClient) -> None:
    """A wrong type or a missing required variable is a 400 and creates no run."""
    before = (await client.get("/v1/runs", headers=auth("admin"))).json()
    for inputs, problem in (
        ({"delayMs": "lots"}, "delayMs"),
        ({"delayMs": True}, "delayMs"),
        ({"delayMs": None}, "delayMs"),
    ):
        r = await client.post(
            "/v1/runs", json={"workflowId": "conformance-delay", "inputs": inputs}, headers=auth("admin")
        )
        body = envelope(r, 400, "validation_error")
        assert problem in body["message"]
    r = await client.post(
        "/v1/runs",
        json={"workflowId": "conformance-subworkflow-child", "inputs": {"childResult": 7}},
        headers=auth("admin"),
    )
    assert envelope(r, 400, "validation_error")["details"]["problems"] == [
        {"variable": "childResult", "expected": "string", "got": "number"}
    ]
    after = (await client.get("/v1/runs", headers=auth("admin"))).json()
    assert after == before


async def test_a_path_with_an_empty_id_is_a_404_envelope_not_a_redirect(client: httpx.AsyncClient) -> None:
    """``/v1/runs/`` (a run id left empty, as a shell variable that is not set leaves it) is not found:
    a redirect to ``/v1/runs`` would let ``curl -f`` read an empty body and poll on forever."""
    for path in ("/v1/runs/", "/v1/runs//events", "/v1/workflows/", "/runs/", "/v1/interrupts/"):
        headers = {**auth("admin"), "OpenWOP-Version": "2"} if path == "/runs/" else auth("admin")
        r = await client.get(path, headers=headers)
        assert r.status_code == 404, (path, r.status_code, r.headers.get("location"))
        envelope(r, 404, "not_found")
    assert (await client.get("/v1/runs", headers=auth("admin"))).status_code == 200
