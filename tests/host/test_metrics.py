"""``GET /metrics`` on real uvicorn, read with prometheus_client's own parser: pending interrupts by
kind and the age of the oldest, how long answers took, refused link answers; the scope it needs and
labels that never name a run, a person or a tenant."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from openwop_bridge import Engine
from tests.conftest import auth
from tests.helpers import ADMIN, settle


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def _scrape(client: httpx.AsyncClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = await client.get("/metrics", headers=auth("admin"))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return _samples(r.text)


async def test_metrics_need_a_key_with_the_metrics_scope(live: tuple[str, httpx.AsyncClient]) -> None:
    _, client = live
    anonymous = await client.get("/metrics")
    assert anonymous.status_code == 401 and anonymous.json()["error"] == "unauthenticated", anonymous.text
    lacking = await client.get("/metrics", headers=auth("bob"))
    assert lacking.status_code == 403 and lacking.json()["error"] == "forbidden", lacking.text


async def test_pending_resolution_and_refused_links(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, client = live
    engine.metrics.pending_ttl_s = 0
    runs = [await engine.create_run(ADMIN, "conformance-approval") for _ in range(3)]
    for run in runs:
        await settle(engine, run.run_id)
    seen = await _scrape(client)
    assert seen[("openwop_interrupts_pending", (("kind", "approval"),))] == 3
    assert seen[("openwop_interrupt_oldest_pending_seconds", (("kind", "approval"),))] >= 0

    answered = await client.post(
        f"/v1/runs/{runs[0].run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
    )
    assert answered.status_code == 200, answered.text
    again = await client.post(
        f"/v1/runs/{runs[0].run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=auth("admin")
    )
    assert again.status_code in (200, 409), again.text
    refused = await client.post("/v1/interrupts/tok_" + "A" * 43, json={"resumeValue": {"action": "accept"}})
    assert refused.status_code == 404
    record = await engine.store.interrupt_at(runs[1].run_id, "gate")
    assert record is not None
    token, _ = engine.mint_token(record)
    invalid = await client.post(f"/v1/interrupts/{token}", json={"correlation": {}})
    assert invalid.status_code == 400

    seen = await _scrape(client)
    assert seen[("openwop_interrupts_pending", (("kind", "approval"),))] == 2
    assert seen[("openwop_interrupt_resolution_seconds_count", (("kind", "approval"),))] == 1, "one answer, once"
    assert seen[("openwop_callbacks_rejected_total", (("reason", "interrupt_not_found"),))] == 1
    assert seen[("openwop_callbacks_rejected_total", (("reason", "validation_error"),))] == 1
    labels = {name for (_, pairs) in seen for name, _ in pairs}
    assert labels <= {"kind", "reason", "channel", "outcome", "le"}, labels
    text = (await client.get("/metrics", headers=auth("admin"))).text
    assert all(run.run_id not in text for run in runs) and "alice" not in text


async def test_a_kind_with_nothing_open_reads_zero(live: tuple[str, httpx.AsyncClient], engine: Engine) -> None:
    _, client = live
    engine.metrics.pending_ttl_s = 0
    run = await engine.create_run(ADMIN, "conformance-approval")
    await settle(engine, run.run_id)
    assert (await _scrape(client))[("openwop_interrupts_pending", (("kind", "approval"),))] == 1
    await engine.cancel_run(run.run_id, ADMIN)
    await settle(engine, run.run_id)
    after = await _scrape(client)
    assert after[("openwop_interrupts_pending", (("kind", "approval"),))] == 0
    assert after[("openwop_interrupt_oldest_pending_seconds", (("kind", "approval"),))] == 0
