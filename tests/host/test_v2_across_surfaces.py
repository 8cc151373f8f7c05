"""Runs started over v2 keep working elsewhere: a quorum answered by several keys, a sub-workflow.

AG-UI and the LangGraph API answer only interrupts of runs bound to their own
threads, and bind a thread only to a run they start, so a run created over v2 is
answered here over v2 and ``/v1`` (REST).
"""

from __future__ import annotations

import httpx

from openwop_bridge import Engine
from openwop_bridge.host.v2 import ids
from tests.conftest import auth
from tests.helpers import settle
from tests.host.test_v2_schemas import _h, assert_event, check_snapshot, create, poll_all


async def test_a_quorum_started_over_v2_is_answered_by_three_keys_over_both_majors(
    live: tuple[str, httpx.AsyncClient], engine: Engine
) -> None:
    _, http = live
    bound, wire = await create(http, "conformance-interrupt-quorum", engine)
    run_id = ids.engine_id(bound.split("/", 1)[1])
    accept = {"resumeValue": {"action": "accept"}}
    for who in ("admin", "bob"):
        vote = await http.post(f"/runs/{wire}/interrupts/gate", json=accept, headers=_h(who))
        assert vote.status_code == 200, vote.text
        assert (await http.get(f"/runs/{wire}", headers=_h())).json()["status"] == "waiting-approval"
    last = await http.post(
        f"/v1/runs/{run_id}/interrupts/gate", json=accept, headers={**auth("operator"), "OpenWOP-Version": "1.1"}
    )
    assert last.status_code == 200, last.text
    assert (await settle(engine, run_id, statuses=("completed", "failed"))).status == "completed"
    events = (await poll_all(http, wire))["events"]
    for doc in events:
        assert_event(doc)
    voters = [e["payload"]["resolvedBy"]["subjectId"] for e in events if e["type"] == "approval.granted"]
    assert voters == ["alice", "bob", "opal"]


async def test_a_sub_workflow_started_over_v2(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    bound, wire = await create(http, "conformance-subworkflow-parent", engine)
    done = await settle(engine, ids.engine_id(bound.split("/", 1)[1]), statuses=("completed", "failed"))
    assert done.status == "completed"
    snap = (await http.get(f"/runs/{wire}", headers=_h())).json()
    check_snapshot(snap)
    [child] = snap["extensions"]["openwop-bridge.run"]["childRuns"]
    assert child["runId"].startswith("default/run-")
    child_snap = await http.get(f"/runs/{ids.project(child['runId'])}", headers=_h())
    assert child_snap.status_code == 200 and child_snap.json()["status"] == "completed"
    assert child_snap.json()["parentRunId"] == bound
    for doc in (await poll_all(http, wire))["events"]:
        assert_event(doc)
