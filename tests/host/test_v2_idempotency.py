"""``Idempotency-Key`` over v2 (idempotency.md §Layer 1); ``OpenWOP-Dedup`` is in test_v2_dedup.py.

Raw HTTP on real uvicorn: the v2 SDK sends neither header.
"""

from __future__ import annotations

import uuid

import httpx

from openwop_bridge import Engine
from openwop_bridge.host.v2 import ids
from tests.helpers import settle
from tests.host.test_v2_schemas import _h, assert_envelope, assert_run_id, create

REPLAY = "OpenWOP-Idempotent-Replay"


def key() -> str:
    """A fresh key in v2's grammar (a UUIDv4, 36 characters)."""
    return str(uuid.uuid4())


async def _count_runs(http: httpx.AsyncClient, who: str = "admin") -> int:
    page = await http.get("/runs", params={"limit": 200}, headers=_h(who))
    assert page.status_code == 200, page.text
    return len(page.json()["runs"])


async def test_a_replayed_create_makes_one_run(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    before = await _count_runs(http)
    k = key()
    first = await http.post(
        "/runs", json={"workflowId": "conformance-approval"}, headers={**_h(), "Idempotency-Key": k}
    )
    assert first.status_code == 201, first.text
    assert REPLAY not in first.headers
    assert_run_id(first.json()["runId"])
    again = await http.post(
        "/runs", json={"workflowId": "conformance-approval"}, headers={**_h(), "Idempotency-Key": k}
    )
    assert again.status_code == 201 and again.headers[REPLAY] == "true"
    assert again.json() == first.json() and again.headers["location"] == first.headers["location"]
    await settle(engine, ids.engine_id(first.json()["runId"].split("/", 1)[1]))
    assert await _count_runs(http) == before + 1


async def test_the_key_grammar_is_v2s_and_a_refused_key_records_nothing(live: tuple[str, httpx.AsyncClient]) -> None:
    _, http = live
    body = {"workflowId": "conformance-approval"}
    for bad in ("short-key", "a" * 129, "has space in it but long enough", "slash/is/not/allowed/in/keys"):
        assert_envelope(
            await http.post("/runs", json=body, headers={**_h(), "Idempotency-Key": bad}),
            400,
            "idempotency_key_invalid",
        )
    before = await _count_runs(http)
    assert (await http.post("/runs", json=body, headers={**_h(), "Idempotency-Key": "a" * 22})).status_code == 201
    assert await _count_runs(http) == before + 1
    # /v1 keeps its own grammar: a short key is fine there.
    v1 = await http.post("/v1/runs", json=body, headers={**_h(), "OpenWOP-Version": "1.1", "Idempotency-Key": "k1"})
    assert v1.status_code == 201, v1.text


async def test_another_request_under_a_used_key_is_a_mismatch(live: tuple[str, httpx.AsyncClient]) -> None:
    _, http = live
    k = key()
    assert (
        await http.post("/runs", json={"workflowId": "conformance-approval"}, headers={**_h(), "Idempotency-Key": k})
    ).status_code == 201
    other = await http.post(
        "/runs", json={"workflowId": "demo-expense-approval"}, headers={**_h(), "Idempotency-Key": k}
    )
    assert_envelope(other, 409, "idempotency_key_mismatch")
    assert REPLAY not in other.headers


async def test_the_record_is_per_tenant_not_per_principal(live: tuple[str, httpx.AsyncClient]) -> None:
    _, http = live
    k = key()
    body = {"workflowId": "conformance-approval"}
    first = await http.post("/runs", json=body, headers={**_h("admin"), "Idempotency-Key": k})
    assert first.status_code == 201
    same_tenant = await http.post("/runs", json=body, headers={**_h("bob"), "Idempotency-Key": k})
    assert same_tenant.headers.get(REPLAY) == "true" and same_tenant.json()["runId"] == first.json()["runId"]
    other_tenant = await http.post("/runs", json=body, headers={**_h("other"), "Idempotency-Key": k})
    assert other_tenant.status_code == 201 and REPLAY not in other_tenant.headers
    assert other_tenant.json()["runId"].startswith("other/")


async def test_final_refusals_replay_and_fixable_ones_do_not(
    live: tuple[str, httpx.AsyncClient], engine: Engine
) -> None:
    _, http = live
    k = key()
    missing = "/runs/default~2Frun-01jzzzzzzzzzzzzzzzzzzzzzzz/interrupts/gate"
    answer = {"resumeValue": {"action": "accept"}}
    first = await http.post(missing, json=answer, headers={**_h(), "Idempotency-Key": k})
    assert_envelope(first, 404, "not_found")
    again = await http.post(missing, json=answer, headers={**_h(), "Idempotency-Key": k})
    assert_envelope(again, 404, "not_found")
    assert again.headers[REPLAY] == "true"
    # 400 validation_error and 401 are not recorded: the same key works once the request is fixed.
    k2 = key()
    bad = await http.post(
        "/runs", json={"workflowId": "conformance-approval", "x": 1}, headers={**_h(), "Idempotency-Key": k2}
    )
    assert_envelope(bad, 400, "validation_error")
    unauth = await http.post(
        "/runs",
        json={"workflowId": "conformance-approval", "x": 1},
        headers={"OpenWOP-Version": "2.0", "Idempotency-Key": k2},
    )
    assert unauth.status_code == 401 and REPLAY not in unauth.headers
    bad_again = await http.post(
        "/runs", json={"workflowId": "conformance-approval", "x": 1}, headers={**_h(), "Idempotency-Key": k2}
    )
    assert_envelope(bad_again, 400, "validation_error")
    assert REPLAY not in bad_again.headers


async def test_a_replayed_resolve_answers_once(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    bound, wire = await create(http, "conformance-approval", engine)
    k = key()
    answer = {"resumeValue": {"action": "accept"}}
    first = await http.post(f"/runs/{wire}/interrupts/gate", json=answer, headers={**_h(), "Idempotency-Key": k})
    assert first.status_code == 200, first.text
    again = await http.post(f"/runs/{wire}/interrupts/gate", json=answer, headers={**_h(), "Idempotency-Key": k})
    assert again.status_code == 200 and again.headers[REPLAY] == "true" and again.json() == first.json()
    other = await http.post(
        f"/runs/{wire}/interrupts/gate",
        json={"resumeValue": {"action": "reject"}},
        headers={**_h(), "Idempotency-Key": k},
    )
    assert_envelope(other, 409, "idempotency_key_mismatch")
    await settle(engine, ids.engine_id(bound.split("/", 1)[1]), statuses=("completed", "failed"))


async def test_get_does_not_honour_the_key(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, http = live
    _, wire = await create(http, "conformance-approval", engine)
    got = await http.get(f"/runs/{wire}", headers={**_h(), "Idempotency-Key": "bad"})
    assert got.status_code == 200 and REPLAY not in got.headers


async def test_a_key_without_the_scope_is_refused_before_any_replay(
    live: tuple[str, httpx.AsyncClient], engine: Engine
) -> None:
    """Keys are shared across a tenant, so the scope is checked before a recorded response is replayed."""
    _, http = live
    k = key()
    body = {"workflowId": "conformance-approval"}
    first = await http.post("/runs", json=body, headers={**_h("admin"), "Idempotency-Key": k})
    assert first.status_code == 201, first.text
    reused = await http.post("/runs", json=body, headers={**_h("reader"), "Idempotency-Key": k})
    assert_envelope(reused, 403, "forbidden")
    assert REPLAY not in reused.headers and "runs:create" in reused.json()["message"]
    fork = f"/runs/{ids.project(first.json()['runId'])}:fork"
    forked = await http.post(fork, json={"mode": "replay"}, headers={**_h("admin"), "Idempotency-Key": k})
    assert forked.status_code == 201, forked.text
    assert_envelope(
        await http.post(fork, json={"mode": "replay"}, headers={**_h("reader"), "Idempotency-Key": k}), 403, "forbidden"
    )

    bound, wire = await create(http, "conformance-approval", engine)
    answer = {"resumeValue": {"action": "accept"}}
    url = f"/runs/{wire}/interrupts/gate"
    k2 = key()
    assert (await http.post(url, json=answer, headers={**_h("admin"), "Idempotency-Key": k2})).status_code == 200
    reused = await http.post(url, json=answer, headers={**_h("reader"), "Idempotency-Key": k2})
    assert_envelope(reused, 403, "forbidden")
    assert REPLAY not in reused.headers and "approvals:respond" in reused.json()["message"]
    await settle(engine, ids.engine_id(bound.split("/", 1)[1]), statuses=("completed", "failed"))

    other, other_wire = await create(http, "conformance-approval", engine)
    k3 = key()
    cancel = f"/runs/{other_wire}/cancel"
    assert (await http.post(cancel, json={}, headers={**_h("admin"), "Idempotency-Key": k3})).status_code == 200
    assert_envelope(await http.post(cancel, json={}, headers={**_h("reader"), "Idempotency-Key": k3}), 403, "forbidden")
    bulk = {"runIds": [other]}
    k4 = key()
    assert (await http.post("/runs:bulk-cancel", json=bulk, headers={**_h("admin"), "Idempotency-Key": k4})).is_success
    assert_envelope(
        await http.post("/runs:bulk-cancel", json=bulk, headers={**_h("reader"), "Idempotency-Key": k4}),
        403,
        "forbidden",
    )
