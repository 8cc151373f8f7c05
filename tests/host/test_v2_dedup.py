"""``OpenWOP-Dedup: enforce`` on ``POST /runs``: one active run per ``(tenantId, scopeId)`` (runs.md §Create).

Over HTTP on real uvicorn: a duplicate while the claiming run is active is ``409 run_already_active`` with
``Retry-After`` and creates nothing; once that run ended, a new create takes the claim.
"""

from __future__ import annotations

import asyncio
import uuid

import httpx

from openwop_bridge import Engine
from openwop_bridge.host.v2 import ids
from tests.helpers import settle
from tests.host.test_v2_schemas import _h, assert_envelope, assert_run_id

DEDUP = {"OpenWOP-Dedup": "enforce"}


async def _count_runs(http: httpx.AsyncClient, who: str = "admin") -> int:
    page = await http.get("/runs", params={"limit": 200}, headers=_h(who))
    assert page.status_code == 200, page.text
    return len(page.json()["runs"])


async def _create(http: httpx.AsyncClient, scope: str, who: str = "admin", **extra: str) -> httpx.Response:
    body = {"workflowId": "conformance-approval", "scopeId": scope, **extra}
    return await http.post("/runs", json=body, headers={**_h(who), **DEDUP})


def _assert_active(resp: httpx.Response) -> None:
    assert_envelope(resp, 409, "run_already_active")
    assert int(resp.headers["Retry-After"]) >= 1
    assert not {"retryAfter", "retryAfterMs", "retryAfterSeconds"} & set(resp.json().get("details", {}))


async def test_a_second_create_for_an_active_scope_is_refused(
    live: tuple[str, httpx.AsyncClient], engine: Engine
) -> None:
    _, http = live
    scope = f"scope-{uuid.uuid4().hex}"
    first = await _create(http, scope)
    assert first.status_code == 201, first.text
    bound = first.json()["runId"]
    assert_run_id(bound)
    await settle(engine, ids.engine_id(bound.split("/", 1)[1]))
    before = await _count_runs(http)
    _assert_active(await _create(http, scope))
    assert await _count_runs(http) == before
    # Another scope, another tenant, or no header: not this claim's business.
    assert (await _create(http, f"{scope}-b")).status_code == 201
    assert (await _create(http, scope, who="other")).status_code == 201
    plain = await http.post("/runs", json={"workflowId": "conformance-approval", "scopeId": scope}, headers=_h())
    assert plain.status_code == 201, plain.text


async def test_the_claim_passes_on_once_the_run_ended(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    scope = f"scope-{uuid.uuid4().hex}"
    first = (await _create(http, scope)).json()["runId"]
    cancelled = await http.post(f"/runs/{ids.project(first)}/cancel", json={}, headers=_h())
    assert cancelled.status_code == 200, cancelled.text
    await settle(engine, ids.engine_id(first.split("/", 1)[1]), statuses=("cancelled",))
    second = await _create(http, scope)
    assert second.status_code == 201, second.text
    assert second.json()["runId"] != first
    _assert_active(await _create(http, scope))
    stored = await engine.adapter_state("openwop.v2.dedup").get(f"default/{scope}")
    assert stored == {"runId": ids.engine_id(second.json()["runId"].split("/", 1)[1])}


async def test_concurrent_creates_for_one_scope_make_one_run(live: tuple[str, httpx.AsyncClient]) -> None:
    _, http = live
    scope = f"scope-{uuid.uuid4().hex}"
    before = await _count_runs(http)
    answers = await asyncio.gather(*(_create(http, scope) for _ in range(6)))
    assert sorted(a.status_code for a in answers) == [201] + [409] * 5, [a.text for a in answers]
    for refused in (a for a in answers if a.status_code == 409):
        _assert_active(refused)
    assert await _count_runs(http) == before + 1


async def test_a_failed_create_frees_the_claim(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    scope = f"scope-{uuid.uuid4().hex}"
    missing = await http.post("/runs", json={"workflowId": "no-such-flow", "scopeId": scope}, headers={**_h(), **DEDUP})
    assert missing.status_code == 404, missing.text
    assert await engine.adapter_state("openwop.v2.dedup").get(f"default/{scope}") is None
    assert (await _create(http, scope)).status_code == 201


async def test_dedup_needs_a_scope_and_the_enforce_value(live: tuple[str, httpx.AsyncClient]) -> None:
    _, http = live
    before = await _count_runs(http)
    bare = await http.post("/runs", json={"workflowId": "conformance-approval"}, headers={**_h(), **DEDUP})
    assert_envelope(bare, 400, "validation_error")
    assert bare.json()["details"]["field"] == "scopeId"
    odd = await http.post(
        "/runs",
        json={"workflowId": "conformance-approval", "scopeId": "s"},
        headers={**_h(), "OpenWOP-Dedup": "maybe"},
    )
    assert_envelope(odd, 400, "validation_error")
    long = await _create(http, "s" * 257)
    assert_envelope(long, 400, "validation_error")
    assert await _count_runs(http) == before
