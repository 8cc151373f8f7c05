"""Interrupt routes as the OpenWOP v1 conformance scenarios exercise them."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from openwop_bridge import Engine
from tests.conftest import auth
from tests.helpers import ADMIN, settle


@pytest.mark.parametrize(
    "body",
    [{"correlation": {"orderId": "noop", "status": "whatever"}}, {}, [], "text", None],
    ids=["no-resumeValue", "empty", "array", "string", "null"],
)
@pytest.mark.parametrize("token", ["tok_" + "A" * 43, "!!!not-a-valid-token!!!", "x"])
async def test_an_unknown_or_malformed_token_is_404_whatever_the_body(
    client: httpx.AsyncClient, token: str, body: object
) -> None:
    r = await client.post(f"/v1/interrupts/{token}", json=body)
    assert r.status_code == 404, r.text
    assert r.json()["error"] == "interrupt_not_found"


async def test_a_valid_token_still_checks_its_body(client: httpx.AsyncClient, engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-approval")
    await settle(engine, run.run_id)
    record = await engine.store.interrupt_at(run.run_id, "gate")
    assert record is not None
    token, _ = engine.mint_token(record)
    r = await client.post(f"/v1/interrupts/{token}", json={"correlation": {}})
    assert r.status_code == 400 and r.json()["error"] == "validation_error", r.text
    assert (await engine.store.interrupt_at(run.run_id, "gate")).open  # type: ignore[union-attr]


async def test_the_legacy_route_after_a_cancel_is_409_and_the_run_scoped_route_keeps_422(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    run = await engine.create_run(ADMIN, "conformance-approval")
    await settle(engine, run.run_id)
    cancel = await client.post(f"/v1/runs/{run.run_id}/cancel", json={"reason": "race"}, headers=auth("admin"))
    assert cancel.status_code == 200
    await settle(engine, run.run_id, statuses=("cancelled",))
    legacy = await client.post(
        f"/v1/runs/{run.run_id}/approvals/gate", json={"action": "accept"}, headers=auth("admin")
    )
    assert legacy.status_code == 409, legacy.text
    assert legacy.json()["error"] == "interrupt_cancelled" and legacy.json()["message"]
    scoped = await client.post(
        f"/v1/runs/{run.run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
    )
    assert (scoped.status_code, scoped.json()["error"]) == (422, "interrupt_cancelled")


async def test_the_legacy_route_racing_a_cancel_answers_a_status_the_scenario_allows(
    live: tuple[str, httpx.AsyncClient], engine: Engine
) -> None:
    _, http = live
    for _ in range(10):
        run = await engine.create_run(ADMIN, "conformance-approval")
        await settle(engine, run.run_id)
        cancel, resolve = await asyncio.gather(
            http.post(f"/v1/runs/{run.run_id}/cancel", json={"reason": "interrupt-race-test"}, headers=auth("admin")),
            http.post(f"/v1/runs/{run.run_id}/approvals/gate", json={"action": "accept"}, headers=auth("admin")),
        )
        assert cancel.status_code in (200, 202, 409), cancel.text
        assert resolve.status_code in (200, 202, 400, 404, 409), resolve.text
        assert cancel.status_code in (200, 202) or resolve.status_code in (200, 202)
        final = await settle(engine, run.run_id, statuses=("completed", "cancelled", "failed"))
        if cancel.status_code in (200, 202) and resolve.status_code not in (200, 202):
            assert final.status == "cancelled"
