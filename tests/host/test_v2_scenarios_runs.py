"""The official v2 run scenarios (ids, snapshot, list, cancel, fork, idempotency), leg by leg, on real uvicorn.

Each test names its scenario (``conformance/src/scenarios/<id>.test.ts`` in openwop/openwop).
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
from typing import Any

import httpx

from openwop_bridge.host.v2 import ids
from openwop_bridge.host.v2.snapshots import SDK_FIELDS
from openwop_bridge.spec import v2 as spec
from tests.conftest import auth
from tests.host.test_v2_schemas import assert_envelope
from tests.host.v2_scenario import TERMINAL, V2, code_of, create, created_settled, enc, events, h, wait_status

RUN_ID = re.compile(r"[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}")
FOREIGN = "openwop-conformance-foreign-tenant/foreignopaque0123456789abcdef"


def closed(snap: dict[str, Any]) -> dict[str, Any]:
    """The snapshot less the two root fields the v2 SDK reads and the closed schema does not name."""
    return {k: v for k, v in snap.items() if k not in SDK_FIELDS}


def _key() -> str:
    return base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()  # 128 bits, 22 characters


async def test_v2_id_grammar(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-id-grammar: the snapshot and the events validate (every id of its kind); a foreign tenant is refused."""
    _, http = live
    run_id = await create(http, "conformance-noop")
    assert RUN_ID.fullmatch(run_id)
    snap = await http.get(f"/runs/{enc(run_id)}", headers=h())
    assert snap.status_code == 200 and spec.problems("run-snapshot.schema.json", closed(snap.json())) == []
    for event in await events(http, run_id):
        assert spec.validate_event(event) == [] and event["runId"] == run_id
    foreign = await http.get(f"/runs/{enc(FOREIGN)}", headers=h())
    assert (foreign.status_code, code_of(foreign)) in ((403, "id_tenant_mismatch"), (404, "not_found"))


async def test_v2_closed_snapshot_keeps_engine_state_under_its_extension(live: tuple[str, httpx.AsyncClient]) -> None:
    """The closed snapshot (runs.md §Snapshot) keeps the SDK's ``interrupt`` and the rest as an extension."""
    _, http = live
    waiting = await create(http, "conformance-approval")
    snap = await wait_status(http, waiting, ("waiting-approval",))
    assert spec.problems("run-snapshot.schema.json", closed(snap)) == []
    held = snap["interrupt"]
    assert held["nodeId"] == snap["currentNodeId"] == "gate" and held["interruptToken"].startswith("ow2.")
    parent = await created_settled(http, "conformance-subworkflow-parent")
    done = (await http.get(f"/runs/{enc(parent)}", headers=h())).json()
    assert spec.problems("run-snapshot.schema.json", closed(done)) == [] and done["eventLogSchemaVersion"] == 3
    assert [c["status"] for c in done["extensions"]["openwop-bridge.run"]["childRuns"]] == ["completed"]


async def test_v2_bound_id_path_projection(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-bound-id-path-projection: the ~ projection reads back, links use it, a double projection and a
    malformed escape do not resolve."""
    _, http = live
    created = (await http.post("/runs", json={"workflowId": "conformance-noop"}, headers=h())).json()
    run_id = created["runId"]
    projected = ids.project(run_id)
    assert enc(projected) == projected
    read = await http.get(f"/runs/{projected}", headers=h())
    assert read.status_code == 200 and read.json()["runId"] == run_id
    assert "%2F" not in created["eventsUrl"].upper() and projected in created["eventsUrl"]
    doubled = await http.get(f"/runs/{ids.project(projected)}", headers=h())
    assert doubled.status_code == 404  # both majors advertised: the decoded bare form is looked up, and is not found
    assert_envelope(await http.get(f"/runs/{run_id.split('/')[0]}~2", headers=h()), 400, "validation_error")


async def test_v2_run_list(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-run-list: gated on runList; pages validate, created runs appear, tenant-bound, bounded, foreign cursor,
    the workflowId filter."""
    _, http = live
    family = (await http.get("/.well-known/openwop", headers=V2)).json()["runList"]
    max_page = family["maxPageSize"]
    assert isinstance(max_page, int) and max_page >= 1 and "workflowId" in family["filters"]
    a, b = await create(http, "conformance-noop"), await create(http, "conformance-approval")
    walked, pages, cursor = [], [], None
    for _ in range(50):
        query = f"?limit={max_page}" + (f"&cursor={cursor}" if cursor else "")
        page = (await http.get(f"/runs{query}", headers=h())).json()
        pages.append(page)
        walked += [r["runId"] for r in page["runs"]]
        cursor = page.get("nextCursor")
        if not isinstance(cursor, str):
            break
    for page in pages:
        page_closed = {**page, "runs": [closed(r) for r in page["runs"]]}
        assert spec.problems("run-list-response.schema.json", page_closed) == [] and len(page["runs"]) <= max_page
    assert a in walked and b in walked and {i.split("/")[0] for i in walked} == {a.split("/")[0]}
    refused = await http.get("/runs?cursor=openwop-conformance-not-a-cursor", headers=h())
    assert_envelope(refused, 400, "validation_error")
    only = (await http.get(f"/runs?workflowId=conformance-noop&limit={max_page}", headers=h())).json()["runs"]
    assert {r["workflowId"] for r in only} == {"conformance-noop"} and a in [r["runId"] for r in only]


async def test_v2_run_cancel(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-run-cancel: a terminal run is 409 run_terminal; a running one answers 200 and ends cancelled."""
    _, http = live
    done = await created_settled(http)
    assert_envelope(await http.post(f"/runs/{enc(done)}/cancel", json={}, headers=h()), 409, "run_terminal")
    run_id = await create(http, "conformance-cancellable", inputs={"delayMs": 15_000})
    assert (await wait_status(http, run_id, ("running", *TERMINAL), 5))["status"] == "running"
    resp = await http.post(f"/runs/{enc(run_id)}/cancel", json={"reason": "conformance"}, headers=h())
    assert resp.status_code == 200 and resp.json()["runId"] == run_id
    assert resp.json()["status"] in ("cancelling", "cancelled")
    assert (await wait_status(http, run_id, ("cancelled",), 5))["status"] == "cancelled"
    assert "run.cancelled" in [e["type"] for e in await events(http, run_id)]


async def test_v2_run_fork_refusals(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-run-fork-refusals' legs (the scenario is gated on ``replay``, which this host does not advertise)."""
    _, http = live
    doc = (await http.get("/.well-known/openwop", headers=V2)).json()
    assert "replay" not in doc  # the family needs an effect-seams manifest this host does not publish
    run_id = await created_settled(http)
    parent = (await http.get(f"/runs/{enc(run_id)}", headers=h())).json()
    fork = f"/runs/{enc(run_id)}:fork"
    overlay = await http.post(fork, json={"mode": "replay", "runOptionsOverlay": {"tags": ["c"]}}, headers=h())
    assert overlay.status_code == 400
    # The scenario's 422 fork_point_invalid leg forks in ``branch`` mode, which this host does not serve: 400.
    bad = await http.post(fork, json={"mode": "branch", "fromSeq": 999_999}, headers=h())
    assert_envelope(bad, 400, "validation_error")
    ok = await http.post(fork, json={"mode": "replay"}, headers=h())
    assert ok.status_code == 201 and ok.json()["sourceRunId"] == run_id and ok.json()["mode"] == "replay"
    child = (await http.get(f"/runs/{enc(ok.json()['runId'])}", headers=h())).json()
    assert child["owner"] == parent["owner"] and child["parentRunId"] == run_id


async def test_v2_run_snapshot_etag(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-run-snapshot-etag: the ETag is a SHOULD; this host sends none, so the 304 leg does not apply."""
    _, http = live
    run_id = await created_settled(http)
    for spelling in ({"OpenWOP-Version": "2.0"}, {"OpenWOP-Version": "2"}, {"OpenWOP-Version": "2", "Accept": "*/*"}):
        resp = await http.get(f"/runs/{enc(run_id)}", headers={**h(), **spelling})
        assert resp.status_code == 200 and "etag" not in resp.headers
    miss = await http.get(f"/runs/{enc(run_id)}", headers=h(**{"If-None-Match": '"openwop-conformance-no-such-tag"'}))
    assert miss.status_code == 200 and miss.json()["runId"] == run_id


async def test_v2_idempotency_key_grammar(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-idempotency-key-grammar: a 128-bit base64url key is accepted; ``short`` is 400 idempotency_key_invalid."""
    _, http = live
    body = {"workflowId": "conformance-noop"}
    assert (await http.post("/runs", json=body, headers=h(**{"Idempotency-Key": _key()}))).status_code == 201
    refused = await http.post("/runs", json=body, headers=h(**{"Idempotency-Key": "short"}))
    assert_envelope(refused, 400, "idempotency_key_invalid")


async def test_v2_idempotency_in_flight(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-idempotency-in-flight: five concurrent same-key creates make one run; losers replay or are 409."""
    _, http = live
    key = _key()
    body = {"workflowId": "conformance-delay", "inputs": {"delayMs": 1500}}
    rs = await asyncio.gather(*(http.post("/runs", json=body, headers=h(**{"Idempotency-Key": key})) for _ in range(5)))
    wins = [r for r in rs if 200 <= r.status_code < 300]
    assert wins and len({r.json()["runId"] for r in wins}) == 1
    assert len([r for r in wins if r.headers.get("openwop-idempotent-replay") != "true"]) == 1
    for r in (r for r in rs if not 200 <= r.status_code < 300):
        assert (r.status_code, code_of(r)) == (409, "idempotency_in_flight")
        assert not [k for k in r.json().get("details", {}) if k.lower().startswith("retryafter")]
        assert r.headers.get("retry-after", "1").isdigit()


async def test_v2_era_key(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-era-key: a run created now reads back with eventLogSchemaVersion 3, the value discovery advertises."""
    _, http = live
    advertised = (await http.get("/.well-known/openwop", headers=V2)).json()["eventLogSchemaVersion"]
    run_id = await create(http, "conformance-noop")
    snap = (await http.get(f"/runs/{enc(run_id)}", headers=h())).json()
    assert advertised == snap["eventLogSchemaVersion"] == 3


async def test_v2_run_completed_outputs(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-run-completed-outputs: run.completed carries an ``outputs`` object and validates."""
    _, http = live
    run_id = await created_settled(http)
    [completed] = [e for e in await events(http, run_id) if e["type"] == "run.completed"]
    assert isinstance(completed["payload"]["outputs"], dict) and spec.validate_event(completed) == []


async def test_v2_run_options_limits(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-run-options-limits: over-limit tags and an unknown root key are 400; odd tags and metadata round-trip."""
    _, http = live
    for body in (
        {"workflowId": "conformance-noop", "tags": [f"t{i}" for i in range(101)]},
        {"workflowId": "conformance-noop", "tags": ["y" * 257]},
        {"workflowId": "conformance-noop", "conformanceUnknownRootKey": 1},
    ):
        assert_envelope(await http.post("/runs", json=body, headers=h()), 400, "validation_error")
    tags = ["has space", "emoji \U0001f680", "slash/colon:pipe|", "UPPER-and_under", "x" * 256]
    metadata = {"nested": {"a": 1, "b": [1, "2", None, True]}, "s": "unicode \u221e ok", "n": 0}
    run_id = await create(http, "conformance-noop", tags=tags, metadata=metadata)
    snap = (await http.get(f"/runs/{enc(run_id)}", headers=h())).json()
    assert (snap["tags"], snap["metadata"]) == (tags, metadata)


async def test_v2_run_bulk_cancel_cap(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-run-bulk-cancel, leg 1: 101 well-formed ids are 400 validation_error naming the cap in ``details``."""
    _, http = live
    run_ids = [f"openwop-conformance-bulk-cap/opaque{i:03d}0123456789abcdef" for i in range(101)]
    resp = await http.post("/runs:bulk-cancel", json={"runIds": run_ids}, headers=h())
    assert_envelope(resp, 400, "validation_error")
    assert resp.json()["details"]["maxRunIds"] == 100


async def test_v2_run_bulk_cancel_entries(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-run-bulk-cancel, leg 2: ``[own, foreign, own]`` is 200 with results in request order; the foreign id
    is refused in its entry, whose ``error`` is the error envelope; an own entry is cancelled, or ``run_terminal``
    when it had already ended."""
    _, http = live
    a, b = (
        await create(http, "conformance-noop"),
        await create(http, "conformance-cancellable", inputs={"delayMs": 15_000}),
    )
    assert (await wait_status(http, b, ("running", *TERMINAL), 5))["status"] == "running"
    run_ids = [a, FOREIGN, b]
    resp = await http.post("/runs:bulk-cancel", json={"runIds": run_ids, "reason": "conformance"}, headers=h())
    assert resp.status_code == 200, resp.text
    entries = resp.json()["results"]
    assert [e["runId"] for e in entries] == run_ids
    foreign = entries[1]
    assert foreign["ok"] is False and spec.problems("error-envelope.schema.json", foreign["error"]) == []
    assert foreign["error"]["error"] in ("id_tenant_mismatch", "not_found")
    for own in (entries[0], entries[2]):
        assert (own["ok"] is True and own["status"] in ("cancelling", "cancelled")) or (
            own["ok"] is False and own["error"]["error"] == "run_terminal"
        ), own
    assert entries[2] == {"runId": b, "ok": True, "status": entries[2]["status"]}
    assert (await wait_status(http, b, ("cancelled",), 5))["status"] == "cancelled"
    again = await http.post("/runs:bulk-cancel", json={"runIds": [b]}, headers=h())
    assert again.json()["results"][0]["error"]["error"] == "run_terminal"


async def test_v2_run_bulk_cancel_refuses_what_it_cannot_read(live: tuple[str, httpx.AsyncClient]) -> None:
    """An empty list, an unknown key and a non-id are 400 before anything is cancelled; a malformed id in a
    well-formed list is refused in its own entry."""
    _, http = live
    for body in ({"runIds": []}, {"runIds": ["x/0123456789abcdef0"], "extra": 1}, {"runIds": "nope"}, {}):
        assert_envelope(await http.post("/runs:bulk-cancel", json=body, headers=h()), 400, "validation_error")
    resp = await http.post("/runs:bulk-cancel", json={"runIds": ["not/an id"]}, headers=h())
    assert resp.status_code == 200 and resp.json()["results"][0]["error"]["error"] == "validation_error"


async def test_v2_run_bulk_cancel_another_tenants_id(live: tuple[str, httpx.AsyncClient]) -> None:
    """A tenant's key naming another tenant's run is refused in the entry with ``id_tenant_mismatch``, and the run
    goes on; a key without ``runs:cancel`` is refused the operation (403)."""
    _, http = live
    run_id = await create(http, "conformance-cancellable", inputs={"delayMs": 15_000})
    assert (await wait_status(http, run_id, ("running", *TERMINAL), 5))["status"] == "running"
    other = {**auth("other"), **V2}
    resp = await http.post("/runs:bulk-cancel", json={"runIds": [run_id]}, headers=other)
    assert resp.status_code == 200, resp.text
    [entry] = resp.json()["results"]
    assert entry["ok"] is False and entry["error"]["error"] == "id_tenant_mismatch"
    assert_envelope(
        await http.post("/runs:bulk-cancel", json={"runIds": [run_id]}, headers={**auth("bob"), **V2}), 403, "forbidden"
    )
    assert (await http.get(f"/runs/{enc(run_id)}", headers=h())).json()["status"] == "running"
    await http.post(f"/runs/{enc(run_id)}/cancel", json={}, headers=h())


async def test_a_fork_copies_its_sources_owner_whoever_forks_it(live: tuple[str, httpx.AsyncClient]) -> None:
    """runs.md §fork: "The child's owner is copied verbatim from the parent", also when another principal forks."""
    _, http = live
    made = await http.post("/runs", json={"workflowId": "conformance-noop"}, headers={**auth("bob"), **V2})
    assert made.status_code == 201, made.text
    run_id = made.json()["runId"]
    parent = await wait_status(http, run_id, TERMINAL)
    assert parent["owner"]["subject"]["subjectId"] == "bob"
    forked = await http.post(f"/runs/{enc(run_id)}:fork", json={"mode": "replay"}, headers=h())  # alice, an admin
    assert forked.status_code == 201, forked.text
    child = (await http.get(f"/runs/{enc(forked.json()['runId'])}", headers=h())).json()
    assert child["owner"] == parent["owner"]
