"""A parent waiting on a child that waits for a person is listed with the child's waiting status, over
``/v1`` (``GET /v1/runs``, its ``status`` filter, the run) and over v2 (``GET /runs``, the run)."""

from __future__ import annotations

import httpx

from openwop_bridge import Engine
from openwop_bridge.host.v2 import ids
from tests.conftest import auth
from tests.host import v2_scenario as v2
from tests.runtime.test_parent_status import only_child, stored


async def test_v1_and_v2_list_the_parent_as_waiting(client: httpx.AsyncClient, engine: Engine) -> None:
    r = await client.post(
        "/v1/runs", json={"workflowId": "conformance-interrupt-parent-child-cancel"}, headers=auth("admin")
    )
    parent = r.json()["runId"]
    child = await only_child(engine, parent)
    await stored(engine, child.run_id, "waiting-approval")
    await stored(engine, parent, "waiting-approval")
    listed = (await client.get("/v1/runs?status=waiting-approval", headers=auth("admin"))).json()["runs"]
    assert {r["runId"]: r["status"] for r in listed} == {parent: "waiting-approval", child.run_id: "waiting-approval"}
    everything = (await client.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    assert {r["runId"]: r["status"] for r in everything}[parent] == "waiting-approval"
    assert (await client.get(f"/v1/runs/{parent}", headers=auth("admin"))).json()["status"] == "waiting-approval"
    page = (await client.get("/runs", headers=v2.h())).json()["runs"]
    shown = {r["runId"]: r["status"] for r in page}
    assert shown[ids.bind("default", parent)] == "waiting-approval"
