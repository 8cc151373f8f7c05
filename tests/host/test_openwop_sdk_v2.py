"""The OpenWOP v2 reference SDK (``openwop-client`` 2.x) against the host on real uvicorn.

The v2 surface lives at root paths beside ``/v1``, over the same engine and
store. Every call goes through the SDK's typed methods in a process that imports
2.x (see ``tests/sdk_v2_driver.py``); the SDK sends ``OpenWOP-Version: 2.0`` and
tenant-bound ids projected into one path segment.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from openwop_client import OpenwopClient

from openwop_bridge import Engine
from tests.conftest import TOKENS
from tests.helpers import settle

SDK_DIR = Path(__file__).resolve().parents[2] / ".venv" / "openwop-client-v2"
DRIVER = Path(__file__).resolve().parents[1] / "sdk_v2_driver.py"


class SdkV2:
    """Calls into ``openwop-client`` 2.x, one process per call."""

    def __init__(self, url: str, engine: Engine) -> None:
        self.url = url
        self.engine = engine

    async def run(self, op: str, *args: Any, who: str = "admin", **call: Any) -> dict[str, Any]:
        spec = json.dumps({"op": op, "args": list(args), **call})
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(DRIVER),
            str(SDK_DIR),
            self.url,
            TOKENS.get(who, who),
            spec,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
        doc: dict[str, Any] = json.loads(out)
        assert doc["version"].startswith("2."), doc
        return doc

    async def call(self, op: str, *args: Any, **call: Any) -> tuple[str, Any]:
        doc = await self.run(op, *args, **call)
        assert "wopError" not in doc, doc
        return doc["type"], doc["value"]

    async def error(self, op: str, *args: Any, **call: Any) -> dict[str, Any]:
        doc = await self.run(op, *args, **call)
        assert "wopError" in doc, doc
        err: dict[str, Any] = doc["wopError"]
        assert err["error"] and err["message"], err
        assert set(json.loads(err["raw"])) <= {"error", "message", "details"}
        return err

    async def waiting_run(self, workflow_id: str = "conformance-approval") -> str:
        kind, created = await self.call("runs_create", body="CreateRunRequest", bodyArgs={"workflowId": workflow_id})
        assert kind == "CreateRunResponse"
        return str(created["runId"])

    def engine_id(self, bound: str) -> str:
        from openwop_bridge.host.v2 import ids

        return ids.engine_id(bound.split("/", 1)[1])


@pytest.fixture
async def v2(live: tuple[str, Any], engine: Engine) -> AsyncIterator[SdkV2]:
    assert (SDK_DIR / "openwop_client").is_dir(), "run ./scripts/test (it installs openwop-client 2.x there)"
    url, _ = live
    yield SdkV2(url, engine)


async def test_discovery_names_both_majors(v2: SdkV2) -> None:
    kind, caps = await v2.call("discovery_capabilities")
    assert kind == "Capabilities"
    assert caps["protocolVersions"] == ["1.1", "2.0"] and caps["preferredVersion"] == "1.1"
    assert caps["families"]["interrupt"]["facets"]["tokenAlgs"] == ["hs256"]
    _, doc = await v2.call("discovery_openapi")
    assert "/runs/{runId}/events/poll" in doc["paths"] and not any(p.startswith("/v1") for p in doc["paths"])


async def test_create_get_resolve_by_run_and_poll(v2: SdkV2) -> None:
    run_id = await v2.waiting_run()
    tenant, opaque = run_id.split("/")
    assert tenant == "default" and len(opaque) >= 16 and "_" not in opaque
    await settle(v2.engine, v2.engine_id(run_id))
    kind, snap = await v2.call("runs_get", run_id)
    assert kind == "RunSnapshot" and snap["status"] == "waiting-approval" and snap["currentNodeId"] == "gate"
    assert snap["runId"] == run_id and snap["owner"]["subject"]["subjectId"] == "alice"

    kind, resolved = await v2.call(
        "interrupts_resolve_by_run", run_id, "gate", body="ResolveInterruptRequest",
        bodyArgs={"resumeValue": {"action": "accept"}},
    )  # fmt: skip
    assert kind == "ResolveInterruptResponse" and (resolved["runId"], resolved["nodeId"]) == (run_id, "gate")
    assert (await settle(v2.engine, v2.engine_id(run_id))).status == "completed"

    kind, page = await v2.call("runs_poll_events", run_id, kwargs={"after_sequence": 0, "timeout_seconds": 1})
    assert kind == "PollEventsResponse" and page["isTerminal"] and page["status"] == "completed"
    assert page["events"][0]["sequence"] == 1 and page["lastSequence"] == page["events"][-1]["sequence"]
    assert all(e["runId"] == run_id for e in page["events"])

    again = await v2.error(
        "interrupts_resolve_by_run", run_id, "gate", body="ResolveInterruptRequest",
        bodyArgs={"resumeValue": {"action": "accept"}},
    )  # fmt: skip
    assert (again["status"], again["error"]) == (409, "interrupt_already_resolved")


async def test_sse_streams_to_the_terminal_event_and_resumes(v2: SdkV2) -> None:
    run_id = await v2.waiting_run("conformance-noop")
    kinds, events = await v2.call("runs_events", run_id, iterate=True, kwargs={"timeout_seconds": 10})
    assert set(kinds) == {"RunEventDoc"} and events[-1]["type"] == "run.completed"
    assert [e["sequence"] for e in events] == list(range(len(events)))
    _, tail = await v2.call("runs_events", run_id, iterate=True, kwargs={"last_event_id": "1", "reconnect": False})
    assert [e["sequence"] for e in tail] == [e["sequence"] for e in events[2:]]


async def test_inspect_and_resolve_by_token(v2: SdkV2) -> None:
    run_id = await v2.waiting_run()
    record = await settle(v2.engine, v2.engine_id(run_id))
    _, snap = await v2.call("runs_get", run_id)
    token = snap["interrupt"]["interruptToken"]
    assert token.startswith("ow2.hs256.") and len(token.split(".")) == 5, token
    kind, seen = await v2.call("interrupts_inspect_by_token", token)
    assert kind == "InterruptByTokenInspection" and seen["kind"] == "approval" and seen["key"]
    _, answered = await v2.call(
        "interrupts_resolve_by_token",
        token,
        body="ResolveInterruptRequest",
        bodyArgs={"resumeValue": {"action": "accept"}},
    )
    assert (answered["runId"], answered["nodeId"]) == (run_id, "gate")
    assert (await settle(v2.engine, record.run_id)).status == "completed"
    used = await v2.error(
        "interrupts_resolve_by_token",
        token,
        body="ResolveInterruptRequest",
        bodyArgs={"resumeValue": {"action": "accept"}},
    )
    assert (used["status"], used["error"]) == (409, "interrupt_already_resolved")


async def test_token_grammar_refusals(v2: SdkV2) -> None:
    run_id = await v2.waiting_run()
    await settle(v2.engine, v2.engine_id(run_id))
    _, snap = await v2.call("runs_get", run_id)
    token: str = snap["interrupt"]["interruptToken"]
    _, _, kid, payload, mac = token.split(".")
    for bad in (
        f"ow2.hs256.nokid.{payload}.{mac}",
        f"ow2.rs256.{kid}.{payload}.{mac}",
        f"ow2.hs256.{kid}.{payload}.x{mac}",
    ):
        err = await v2.error("interrupts_inspect_by_token", bad)
        assert (err["status"], err["error"]) == (401, "interrupt_token_invalid"), bad
    legacy = f"{payload}.{mac}"  # the v1 spelling of the same link (kid ``legacy``)
    kind, seen = await v2.call("interrupts_inspect_by_token", legacy)
    assert kind == "InterruptByTokenInspection" and seen["kind"] == "approval"


async def test_cancel_errors_and_tenant_binding(v2: SdkV2) -> None:
    run_id = await v2.waiting_run()
    await settle(v2.engine, v2.engine_id(run_id))
    kind, cancelled = await v2.call("runs_cancel", run_id)
    assert kind == "CancelRunResponse" and cancelled["runId"] == run_id
    late = await v2.error(
        "interrupts_resolve_by_run", run_id, "gate", body="ResolveInterruptRequest",
        bodyArgs={"resumeValue": {"action": "accept"}},
    )  # fmt: skip
    assert (late["status"], late["error"]) == (409, "interrupt_already_resolved")
    missing = await v2.error("runs_get", "default/run-01jzzzzzzzzzzzzzzzzzzzzz")
    assert (missing["status"], missing["error"]) == (404, "not_found")
    foreign = await v2.error("runs_get", run_id, who="other")
    assert (foreign["status"], foreign["error"]) == (403, "id_tenant_mismatch")
    bad_wf = await v2.error("runs_create", body="CreateRunRequest", bodyArgs={"workflowId": "no-such-workflow"})
    assert (bad_wf["status"], bad_wf["error"]) == (404, "not_found")


async def test_dual_stack_one_server_both_sdk_majors(v2: SdkV2, live: tuple[str, Any]) -> None:
    """A run created with the 1.x SDK on /v1 is read and answered with the 2.x SDK at the root, and back."""
    url, http = live
    from openwop_client import CreateRunRequest, ResolveInterruptRequest

    v1 = OpenwopClient(base_url=url, api_key=TOKENS["admin"], timeout=10)
    created = await asyncio.to_thread(v1.runs_create, CreateRunRequest(workflowId="conformance-approval"))
    await settle(v2.engine, created.runId)
    bound = "default/" + created.runId.replace("_", "-")
    _, snap = await v2.call("runs_get", created.runId)  # the bare v1 id resolves under the caller's tenant
    assert snap["runId"] == bound and snap["status"] == "waiting-approval"
    percent = await http.get(
        f"/runs/default%2F{created.runId.replace('_', '-')}", headers={"Authorization": "Bearer key-admin-0001"}
    )
    assert percent.status_code == 200 and percent.json()["runId"] == bound
    assert percent.headers["openwop-version"] == "2.0"
    await v2.call(
        "interrupts_resolve_by_run", bound, "gate", body="ResolveInterruptRequest",
        bodyArgs={"resumeValue": {"action": "accept"}},
    )  # fmt: skip
    assert (await settle(v2.engine, created.runId)).status == "completed"
    done = await asyncio.to_thread(v1.runs_get, created.runId)
    assert done.status == "completed" and done.runId == created.runId

    v2_run = await v2.waiting_run()
    await settle(v2.engine, v2.engine_id(v2_run))
    v1_id = v2.engine_id(v2_run)
    answered = await asyncio.to_thread(
        v1.interrupts_resolve_by_run, v1_id, "gate", ResolveInterruptRequest(resumeValue={"action": "accept"})
    )
    assert answered.runId == v1_id
    assert (await settle(v2.engine, v1_id)).status == "completed"
    _, read_back = await v2.call("runs_get", v2_run)
    assert read_back["status"] == "completed"


async def test_version_negotiation(live: tuple[str, Any]) -> None:
    _, http = live
    auth = {"Authorization": "Bearer key-admin-0001"}
    unsupported = await http.get("/runs", headers={**auth, "OpenWOP-Version": "3"})
    assert unsupported.status_code == 406
    assert unsupported.json()["error"] == "protocol_version_unsupported"
    assert unsupported.json()["details"]["protocolVersions"] == ["1.1", "2.0"]
    mismatch = await http.get("/v1/runs", headers={**auth, "OpenWOP-Version": "2.0"})
    assert (mismatch.status_code, mismatch.json()["error"]) == (400, "protocol_version_mismatch")
    v1_doc = await http.get("/.well-known/openwop")
    assert v1_doc.headers["openwop-version"] == "1.1" and v1_doc.json()["protocolVersion"].startswith("1.")
    v2_doc = await http.get("/.well-known/openwop", headers={"OpenWOP-Version": "2"})
    assert v2_doc.headers["openwop-version"] == "2.0" and "protocolVersions" in v2_doc.json()
    assert v1_doc.headers["etag"] != v2_doc.headers["etag"]
    listed = await http.get("/v1/runs", headers=auth)
    assert listed.headers["openwop-version"] == "1.1"


async def test_bulk_cancel(v2: SdkV2) -> None:
    """``runs_bulk_cancel`` reads one typed result per id: the waiting run cancelled, a foreign id refused."""
    run_id = await v2.waiting_run()
    await settle(v2.engine, v2.engine_id(run_id))
    foreign = "openwop-conformance-foreign-tenant/foreignopaque0123456789abcdef"
    kind, done = await v2.call(
        "runs_bulk_cancel", body="BulkCancelRunsRequest", bodyArgs={"runIds": [run_id, foreign], "reason": "sdk"}
    )
    assert kind == "BulkCancelRunsResponse"
    mine, theirs = done["results"]
    assert (mine["runId"], mine["ok"]) == (run_id, True) and mine["status"] in ("cancelling", "cancelled")
    assert (theirs["runId"], theirs["ok"]) == (foreign, False)
    assert theirs["error"]["error"] in ("id_tenant_mismatch", "not_found")
