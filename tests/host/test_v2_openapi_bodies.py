"""Real v2 responses validate against the response schemas of the served ``GET /openapi.json``.

The document's 200 bodies are real schemas (the vendored ``RunSnapshot`` and
``RunListResponse``, and the cancel, resolve and inspect bodies); each is checked
here against what the host answers on real uvicorn, for runs in every state.
"""

from __future__ import annotations

from typing import Any

import httpx
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from tests.host.v2_scenario import V2, create, created_settled, enc, h, suspended, wait_status

DOC_URI = "urn:openwop-bridge:openapi-v2"


class Document:
    """The served document, and its response schemas as validators."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.registry: Registry = Registry().with_resource(DOC_URI, Resource.from_contents(doc, DRAFT202012))

    def problems(self, path: str, method: str, body: Any, status: str = "200") -> list[str]:
        """Every way ``body`` fails the document's schema for that response (the schema must exist)."""
        content = self.doc["paths"][path][method]["responses"][status]["content"]["application/json"]
        assert content["schema"] != {"type": "object"}, f"{method} {path} {status} is described only as an object"
        pointer = "/".join(p.replace("~", "~0").replace("/", "~1") for p in ("paths", path, method, "responses"))
        ref = f"{DOC_URI}#/{pointer}/{status}/content/application~1json/schema"
        validator = Draft202012Validator({"$ref": ref}, registry=self.registry)
        return [f"{'/'.join(map(str, e.absolute_path)) or '.'}: {e.message}" for e in validator.iter_errors(body)]


async def _document(http: httpx.AsyncClient) -> Document:
    resp = await http.get("/openapi.json", headers=V2)
    assert resp.status_code == 200
    return Document(resp.json())


async def test_snapshot_and_list_bodies_validate(live: tuple[str, httpx.AsyncClient]) -> None:
    _, http = live
    doc = await _document(http)
    waiting = await suspended(http)
    rejected = await suspended(http)
    await http.post(f"/runs/{enc(rejected)}/interrupts/gate", json={"resumeValue": {"action": "reject"}}, headers=h())
    assert (await wait_status(http, rejected, ("failed",)))["error"]["code"] == "approval_rejected"
    parent = await created_settled(http, "conformance-subworkflow-parent")
    forked = await http.post(f"/runs/{enc(parent)}:fork", json={"mode": "replay"}, headers=h())
    child_of_fork = forked.json()["runId"]
    await wait_status(http, child_of_fork, ("completed",))
    runs = (await http.get("/runs?limit=500", headers=h())).json()
    sub = next(r["runId"] for r in runs["runs"] if r["workflowId"] == "conformance-subworkflow-child")
    assert doc.problems("/runs", "get", runs) == []
    seen = set()
    for run_id in (waiting, rejected, parent, child_of_fork, sub):
        snap = (await http.get(f"/runs/{enc(run_id)}", headers=h())).json()
        assert doc.problems("/runs/{runId}", "get", snap) == [], (run_id, snap)
        seen |= set(snap) | set(snap.get("extensions", {}).get("openwop-bridge.run", {}))
    assert {"interrupt", "error", "parentRunId", "parentNodeId", "extensions", "childRuns", "replayOf"} <= seen


async def test_cancel_resolve_and_inspect_bodies_validate(live: tuple[str, httpx.AsyncClient]) -> None:
    _, http = live
    doc = await _document(http)
    running = await create(http, "conformance-cancellable", inputs={"delayMs": 15_000})
    await wait_status(http, running, ("running",))
    cancel = await http.post(f"/runs/{enc(running)}/cancel", json={}, headers=h())
    assert cancel.status_code == 200 and doc.problems("/runs/{runId}/cancel", "post", cancel.json()) == []
    by_run = "/runs/{runId}/interrupts/{nodeId}"
    quorum = await suspended(http, "conformance-interrupt-quorum")
    vote = {"resumeValue": {"action": "accept", "voter": "approver-1"}}
    pending = await http.post(f"/runs/{enc(quorum)}/interrupts/gate", json=vote, headers=h())
    assert pending.json()["status"] == "pending" and doc.problems(by_run, "post", pending.json()) == []
    again = await http.post(f"/runs/{enc(quorum)}/interrupts/gate", json=vote, headers=h())
    assert doc.problems(by_run, "post", again.json()) == [], again.json()
    waiting = await suspended(http)
    token = (await http.get(f"/runs/{enc(waiting)}", headers=h())).json()["interrupt"]["interruptToken"]
    seen = await http.get(f"/interrupts/{token}", headers=V2)
    assert seen.status_code == 200 and doc.problems("/interrupts/{token}", "get", seen.json()) == []
    answered = await http.post(f"/interrupts/{token}", json={"resumeValue": {"action": "accept"}}, headers=V2)
    assert answered.status_code == 200 and doc.problems("/interrupts/{token}", "post", answered.json()) == []
    other = await suspended(http)
    rejected = await http.post(
        f"/runs/{enc(other)}/interrupts/gate", json={"resumeValue": {"action": "reject"}}, headers=h()
    )
    assert rejected.json()["status"] == "resolved" and doc.problems(by_run, "post", rejected.json()) == []
    assert rejected.json()["decision"] == "rejected"


async def test_bulk_cancel_body_validates(live: tuple[str, httpx.AsyncClient]) -> None:
    _, http = live
    doc = await _document(http)
    running = await create(http, "conformance-cancellable", inputs={"delayMs": 15_000})
    await wait_status(http, running, ("running",))
    done = await created_settled(http)
    foreign = "openwop-conformance-foreign-tenant/foreignopaque0123456789abcdef"
    resp = await http.post("/runs:bulk-cancel", json={"runIds": [running, foreign, done]}, headers=h())
    assert resp.status_code == 200 and doc.problems("/runs:bulk-cancel", "post", resp.json()) == [], resp.json()
    assert [r["ok"] for r in resp.json()["results"]] == [True, False, False]
