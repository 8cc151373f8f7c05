"""Fork, run listing, the pending-interrupts list and ``Idempotency-Key`` over v2.

Through ``openwop-client`` 2.x where it has the method (``runs_fork``, ``runs_list``,
``runs_create`` with ``idempotency_key`` and ``dedup``), raw HTTP for the
pending-interrupts list, which the SDK does not call; every document is checked
against the parts the vendored v2 schemas define.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from openwop_bridge.host.v2 import tokens
from openwop_bridge.spec import v2 as spec
from tests.helpers import settle
from tests.host.test_openwop_sdk_v2 import SdkV2, v2  # noqa: F401  (the fixture)
from tests.host.test_v2_schemas import _h, assert_run_id, check_snapshot


def _interrupt_id(value: str) -> None:
    assert spec.problems("ids.schema.json", value, "/$defs/interruptId") == [], value


async def test_sdk_create_with_idempotency_key_and_dedup(v2: SdkV2) -> None:  # noqa: F811
    key = str(uuid.uuid4())
    body = {"workflowId": "conformance-approval"}
    _, first = await v2.call("runs_create", body="CreateRunRequest", bodyArgs=body, kwargs={"idempotency_key": key})
    _, again = await v2.call("runs_create", body="CreateRunRequest", bodyArgs=body, kwargs={"idempotency_key": key})
    assert again["runId"] == first["runId"]
    assert_run_id(first["runId"])
    await settle(v2.engine, v2.engine_id(first["runId"]))
    err = await v2.error("runs_create", body="CreateRunRequest", bodyArgs=body, kwargs={"idempotency_key": "short"})
    assert (err["status"], err["error"]) == (400, "idempotency_key_invalid")
    scoped = {**body, "scopeId": f"scope-{uuid.uuid4().hex}"}
    _, claimed = await v2.call("runs_create", body="CreateRunRequest", bodyArgs=scoped, kwargs={"dedup": True})
    await settle(v2.engine, v2.engine_id(claimed["runId"]))
    err = await v2.error("runs_create", body="CreateRunRequest", bodyArgs=scoped, kwargs={"dedup": True})
    assert (err["status"], err["error"]) == (409, "run_already_active")


async def test_sdk_fork_replays_the_source(v2: SdkV2) -> None:  # noqa: F811
    source = await v2.waiting_run()
    await settle(v2.engine, v2.engine_id(source))
    await v2.call(
        "interrupts_resolve_by_run", source, "gate", body="ResolveInterruptRequest",
        bodyArgs={"resumeValue": {"action": "accept"}},
    )  # fmt: skip
    assert (await settle(v2.engine, v2.engine_id(source))).status == "completed"
    key = str(uuid.uuid4())
    fork_args = {"fromSeq": 0, "mode": "replay"}
    kind, fork = await v2.call(
        "runs_fork", source, body="ForkRunRequest", bodyArgs=fork_args, kwargs={"idempotency_key": key}
    )
    assert kind == "ForkRunResponse" and fork["sourceRunId"] == source and fork["mode"] == "replay"
    assert fork["fromSeq"] == 0 and fork["runId"] != source
    assert_run_id(fork["runId"])
    _, again = await v2.call(
        "runs_fork", source, body="ForkRunRequest", bodyArgs=fork_args, kwargs={"idempotency_key": key}
    )
    assert again["runId"] == fork["runId"]  # the replayed fork is the same run
    done = await settle(v2.engine, v2.engine_id(fork["runId"]), statuses=("completed", "failed"))
    assert done.status == "completed"  # the answer came from the source's log: nobody was asked again
    _, snap = await v2.call("runs_get", fork["runId"])
    assert snap["status"] == "completed"
    bad = await v2.error("runs_fork", source, body="ForkRunRequest", bodyArgs={"fromSeq": 3, "mode": "replay"})
    assert (bad["status"], bad["error"]) == (400, "validation_error")
    bad = await v2.error("runs_fork", source, body="ForkRunRequest", bodyArgs={"fromSeq": 0, "mode": "branch"})
    assert (bad["status"], bad["error"]) == (400, "validation_error")


async def test_sdk_run_listing_pages_bound_snapshots(v2: SdkV2, live: tuple[str, httpx.AsyncClient]) -> None:  # noqa: F811
    _, http = live
    made = [await v2.waiting_run("conformance-approval") for _ in range(3)]
    for run_id in made:
        await settle(v2.engine, v2.engine_id(run_id))
    seen: list[str] = []
    cursor = None
    for _ in range(20):
        kwargs: dict[str, Any] = {"limit": 2, "workflow_id": "conformance-approval"}
        if cursor:
            kwargs["cursor"] = cursor
        kind, page = await v2.call("runs_list", kwargs=kwargs)
        assert kind == "RunListResponse" and len(page["runs"]) <= 2
        seen += [r["runId"] for r in page["runs"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert set(made) <= set(seen) and len(seen) == len(set(seen))
    raw = (await http.get("/runs", params={"limit": 5}, headers=_h())).json()
    assert set(raw) == {"runs"}  # the last page has no nextCursor (run-list-response.schema.json: a string or absent)
    for snap in raw["runs"]:
        check_snapshot(snap)
    other = (await http.get("/runs", headers=_h("other"))).json()["runs"]
    assert not set(made) & {r["runId"] for r in other}  # tenant-scoped
    bad = await v2.error("runs_list", kwargs={"cursor": "not-a-cursor"})
    assert (bad["status"], bad["error"]) == (400, "validation_error")


async def test_pending_interrupts_list_over_v2(v2: SdkV2, live: tuple[str, httpx.AsyncClient]) -> None:  # noqa: F811
    url, http = live
    run_id = await v2.waiting_run()
    await settle(v2.engine, v2.engine_id(run_id))
    listed = await http.get("/interrupts", params={"status": "pending", "limit": 200}, headers=_h())
    assert listed.status_code == 200, listed.text
    doc = listed.json()
    items = doc.get("interrupts", doc.get("items"))
    assert isinstance(items, list)
    mine = [i for i in items if i["runId"] == run_id]
    assert len(mine) == 1, items
    item = mine[0]
    assert_run_id(item["runId"])
    _interrupt_id(item["interruptId"])
    assert item["interruptId"].startswith("default/") and item["nodeId"] == "gate" and item["kind"] == "approval"
    # the inspect link is a v2 link at a root path, one the host and the SDK accept
    assert item["inspectUrl"].startswith(f"{url}/interrupts/{tokens.PREFIX}.hs256."), item["inspectUrl"]
    token = item["inspectUrl"].rsplit("/", 1)[1]
    kind, seen = await v2.call("interrupts_inspect_by_token", token)
    assert kind == "InterruptByTokenInspection" and seen["kind"] == "approval"
    for other in items:
        assert_run_id(other["runId"])
        _interrupt_id(other["interruptId"])
    # another tenant does not see it; once answered, it leaves the list
    theirs = (await http.get("/interrupts", headers=_h("other"))).json()
    assert run_id not in {i["runId"] for i in theirs.get("interrupts", theirs.get("items", []))}
    await v2.call(
        "interrupts_resolve_by_run", run_id, "gate", body="ResolveInterruptRequest",
        bodyArgs={"resumeValue": {"action": "accept"}},
    )  # fmt: skip
    await settle(v2.engine, v2.engine_id(run_id), statuses=("completed", "failed"))
    after = (await http.get("/interrupts", params={"limit": 200}, headers=_h())).json()
    assert run_id not in {i["runId"] for i in after.get("interrupts", after.get("items", []))}
