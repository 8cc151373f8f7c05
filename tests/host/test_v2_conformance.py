"""The v2 conformance scenarios' interrupt behaviours, against the host on real uvicorn.

One test per scenario (``conformance/`` in openwop/openwop), each checking what its
name and the spec page it rolls up require; documents are checked against the
vendored v2 schemas as well.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from openwop_bridge import Engine
from openwop_bridge.host.v2 import ids
from tests.helpers import settle
from tests.host.test_v2_schemas import V2, _h, assert_envelope, assert_event, create, poll_all

TERMINAL = ("run.completed", "run.failed", "run.cancelled")


def engine_id(bound: str) -> str:
    return ids.engine_id(bound.split("/", 1)[1])


async def test_v2_interrupt_resolve_terminal(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    bound, wire = await create(http, "conformance-approval", engine)
    token = (await http.get(f"/runs/{wire}", headers=_h())).json()["interrupt"]["interruptToken"]
    assert (await http.post(f"/runs/{wire}/cancel", headers=_h())).status_code == 200
    await settle(engine, engine_id(bound), statuses=("cancelled",))
    by_run = await http.post(f"/runs/{wire}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=_h())
    assert_envelope(by_run, 409, "interrupt_already_resolved")
    by_token = await http.post(f"/interrupts/{token}", json={"resumeValue": {"action": "accept"}}, headers=V2)
    assert_envelope(by_token, 409, "interrupt_already_resolved")
    assert (await http.get(f"/runs/{wire}", headers=_h())).json()["status"] == "cancelled"


async def test_v2_interrupt_token_scheme(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    _, wire = await create(http, "conformance-approval", engine)
    token: str = (await http.get(f"/runs/{wire}", headers=_h())).json()["interrupt"]["interruptToken"]
    prefix, alg, kid, payload, mac = token.split(".")
    assert (prefix, alg) == ("ow2", "hs256") and kid and payload and mac
    assert alg in (await http.get("/.well-known/openwop", headers=V2)).json()["interrupt"]["tokenAlgs"]
    for bad in (f"ow2.hs256.unknown.{payload}.{mac}", f"ow2.none.{kid}.{payload}.{mac}", f"ow2.hs256.{kid}.{payload}"):
        assert_envelope(await http.get(f"/interrupts/{bad}", headers=V2), 401, "interrupt_token_invalid")
    assert (await http.get(f"/interrupts/{token}", headers=V2)).json()["kind"] == "approval"
    assert (await http.get(f"/interrupts/{payload}.{mac}", headers=V2)).status_code == 200  # kid legacy


async def test_v2_approval_reject_disposition(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    bound, wire = await create(http, "conformance-approval-reject-routed", engine)
    no = await http.post(f"/runs/{wire}/interrupts/gate", json={"resumeValue": {"action": "reject"}}, headers=_h())
    assert no.status_code == 200, no.text
    done = await settle(engine, engine_id(bound), statuses=("completed", "failed"))
    assert done.status == "completed"  # a routed reject is a decision, not a failure
    events = (await poll_all(http, wire))["events"]
    resolved = next(e for e in events if e["type"] == "interrupt.resolved")["payload"]
    assert (resolved["action"], resolved["decision"]) == ("reject", "rejected")
    skipped = {e["payload"]["nodeId"] for e in events if e["type"] == "node.skipped"}
    completed = {e["payload"]["nodeId"] for e in events if e["type"] == "node.completed"}
    assert "on-accept" in skipped and "on-reject" in completed


async def _sse(http: httpx.AsyncClient, wire: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    async with http.stream("GET", f"/runs/{wire}/events", headers=headers) as resp:
        assert resp.status_code == 200
        event_id = None
        async for line in resp.aiter_lines():
            if line.startswith("id:"):
                event_id = line[3:].strip()
            if line.startswith("data:"):
                doc = json.loads(line[5:])
                assert event_id == str(doc["sequence"])  # the SSE id is the sequence, the resume cursor
                docs.append(doc)
    return docs


async def test_v2_sse_last_event_id(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    bound, wire = await create(http, "conformance-approval", engine)
    await http.post(f"/runs/{wire}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=_h())
    await settle(engine, engine_id(bound), statuses=("completed",))
    everything = await _sse(http, wire, _h())
    cut = everything[2]["sequence"]
    resumed = await _sse(http, wire, {**_h(), "Last-Event-ID": str(cut)})
    assert [d["sequence"] for d in resumed] == [d["sequence"] for d in everything if d["sequence"] > cut]
    for doc in resumed:
        assert_event(doc)


async def test_v2_poll_cursor_v2(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    bound, wire = await create(http, "conformance-approval", engine)
    first = await poll_all(http, wire)
    assert first["isTerminal"] is False and first["status"] == "waiting-approval"
    assert first["lastSequence"] == first["events"][-1]["sequence"]
    await http.post(f"/runs/{wire}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=_h())
    await settle(engine, engine_id(bound), statuses=("completed",))
    params = {"afterSequence": first["lastSequence"], "timeout": 1}
    rest = (await http.get(f"/runs/{wire}/events/poll", params=params, headers=_h())).json()
    assert rest["events"][0]["sequence"] == first["lastSequence"] + 1 and rest["isTerminal"] is True
    assert rest["lastSequence"] == rest["events"][-1]["sequence"] and rest["status"] == "completed"
    params = {"afterSequence": rest["lastSequence"], "timeout": 1}
    empty = (await http.get(f"/runs/{wire}/events/poll", params=params, headers=_h())).json()
    assert empty["events"] == [] and empty["lastSequence"] == rest["lastSequence"] and empty["isTerminal"] is True
    bad = await http.get(f"/runs/{wire}/events/poll", params={"afterSequence": "x"}, headers=_h())
    assert_envelope(bad, 400, "validation_error")


async def test_v2_terminal_event_once(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    bound, wire = await create(http, "conformance-approval", engine)
    await http.post(f"/runs/{wire}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=_h())
    await settle(engine, engine_id(bound), statuses=("completed",))
    late = await http.post(f"/runs/{wire}/cancel", headers=_h())
    assert_envelope(late, 409, "run_terminal")  # runs.md §Cancel: no second terminal event, no 200
    streamed = await _sse(http, wire, _h())  # the stream closes after the terminal event
    polled = (await poll_all(http, wire))["events"]
    for docs in (streamed, polled):
        assert [d["type"] for d in docs if d["type"] in TERMINAL] == ["run.completed"]
        assert docs[-1]["type"] == "run.completed"


async def test_v2_malformed_body_envelope(live: tuple[str, httpx.AsyncClient]) -> None:
    _, http = live
    for path, version in (("/runs", "2.0"), ("/v1/runs", "1")):
        headers = {**_h(), "OpenWOP-Version": version, "Content-Type": "application/json"}
        resp = await http.post(path, content=b"{", headers=headers)
        assert_envelope(resp, 400, "validation_error")
        assert resp.headers["openwop-version"].startswith(version[0])
