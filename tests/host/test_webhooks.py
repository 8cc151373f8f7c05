"""v2 webhooks end to end against a real receiver on loopback: registration, signed deliveries that validate
against the v2 event schemas, retries with the same ids, a 3xx never followed, dead letters (content-free,
paged, per tenant), unregistering, scopes and tenants, and the discovery family."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from typing import Any

import httpx
import pytest

from openwop_bridge import Engine
from openwop_bridge.core.notices import RetryPolicy
from openwop_bridge.notify.webhook.channel import WebhookSettings
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.spec import v2 as spec
from tests.conftest import auth
from tests.host.v2_scenario import V2, created_settled, enc, h, suspended
from tests.host.webhook_receiver import bridge, receiver

LOOPBACK = WebhookSettings(allow_loopback=True)
FAMILY = ("Webhook-Id", "Event-Type", "Timestamp", "Signature", "Signature-Algorithm")
SECRET = "a-subscription-secret-0123456789"


def fast_config(attempts: int = 3) -> EngineConfig:
    return EngineConfig(webhook_retry=RetryPolicy(base_ms=20, max_attempts=attempts, max_ms=60, timeout_ms=2_000))


async def register(http: httpx.AsyncClient, url: str, events: list[str], **body: Any) -> httpx.Response:
    return await http.post("/webhooks", json={"url": url, "events": events, **body}, headers=h())


def verify_v1(secret: str, got: Any) -> None:
    """The receiver's check, written from the page: ±5 minutes, HMAC over ``{ts}.{rawBody}``, constant time."""
    ts = got.headers["openwop-timestamp"]
    assert abs(int(ts) - time.time()) < 300
    expected = "sha256=" + hmac.new(secret.encode(), f"{ts}.".encode() + got.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, got.headers["openwop-signature"])


async def test_a_delivery_is_signed_and_carries_the_v2_event(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config())
    async with receiver() as rec, bridge(engine, LOOPBACK) as http:
        resp = await register(http, f"{rec.url}/hook", ["interrupt.requested", "run.started"], secret=SECRET)
        assert resp.status_code == 201, resp.text
        assert resp.headers["openwop-version"].startswith("2.")
        webhook_id = resp.json()["webhookId"]
        assert webhook_id.startswith("default/whk-") and "secret" not in resp.json()
        assert spec.problems("ids.schema.json", webhook_id, "/$defs/subscriptionId") == []
        run_id = await suspended(http)
        await rec.wait(lambda: len(rec.at("/hook")) == 2)
        by_type = {r.headers["openwop-event-type"]: r for r in rec.at("/hook")}
        assert set(by_type) == {"interrupt.requested", "run.started"}  # the filter: nothing else arrives
        for event_type, got in by_type.items():
            verify_v1(SECRET, got)
            for name in FAMILY:  # both families, identical values
                assert got.headers[f"openwop-{name.lower()}"] == got.headers[f"x-openwop-{name.lower()}"]
            assert got.headers["openwop-webhook-id"] == webhook_id
            assert got.headers["openwop-signature-algorithm"] == "v1"
            assert "webhook-signature" not in got.headers  # not opted into Standard Webhooks
            body = got.json()
            assert set(body) == {"runId", "event"} and body["runId"] == run_id == body["event"]["runId"]
            assert spec.problems("ids.schema.json", body["runId"], "/$defs/runId") == []
            assert spec.validate_event(body["event"]) == [], body["event"]
            assert body["event"]["type"] == event_type
        # The delivered event is the one the log holds, verbatim.
        log = (await http.get(f"/runs/{enc(run_id)}/events/poll?timeout=1", headers=h())).json()["events"]
        requested = by_type["interrupt.requested"].json()["event"]
        assert requested in log


async def test_a_failed_attempt_is_retried_with_its_ids_and_a_redirect_is_never_followed(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config(attempts=5))
    async with receiver() as rec, bridge(engine, LOOPBACK) as http:
        rec.script["/flaky"] = [500, 503]
        assert (await register(http, f"{rec.url}/flaky", ["interrupt.requested"], secret=SECRET)).status_code == 201
        assert (await register(http, f"{rec.url}/redirect", ["interrupt.requested"], secret=SECRET)).status_code == 201
        await suspended(http)
        await rec.wait(lambda: len(rec.at("/flaky")) == 3 and len(rec.at("/redirect")) == 5)
        flaky = rec.at("/flaky")
        assert [r.headers["openwop-delivery-attempt"] for r in flaky] == ["1", "2", "3"]
        assert len({r.body for r in flaky}) == 1  # the same delivery, the same event id, every time
        assert rec.at("/target") == []  # 307 answered five times, never followed
        await rec.wait(lambda: engine.notify.counts[("webhook", "dead")] == 1)
        assert engine.notify.counts[("webhook", "delivered")] == 1


async def test_spent_attempts_make_content_free_dead_letters_in_pages(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config(attempts=2))
    async with receiver() as rec, bridge(engine, LOOPBACK) as http:
        rec.script["/down"] = [500] * 10
        resp = await register(http, f"{rec.url}/down", ["interrupt.requested", "run.started"], secret=SECRET)
        webhook_id = resp.json()["webhookId"]
        runs = [await suspended(http) for _ in range(2)]
        await rec.wait(lambda: engine.notify.counts[("webhook", "dead")] == 4)
        path = f"/webhooks/{enc(webhook_id)}/dead-letters"
        first = (await http.get(f"{path}?limit=3", headers=h())).json()
        assert spec.problems("webhook-dead-letter-page.schema.json", first) == [], first  # RFC 0188 §A.1
        assert len(first["deliveries"]) == 3 and first["nextCursor"]
        rest = (await http.get(f"{path}?limit=3&cursor={first['nextCursor']}", headers=h())).json()
        assert spec.problems("webhook-dead-letter-page.schema.json", rest) == [], rest
        assert len(rest["deliveries"]) == 1 and "nextCursor" not in rest  # absent on the last page
        items = first["deliveries"] + rest["deliveries"]
        assert {i["runId"] for i in items} == set(runs)
        ids = [i["deliveryId"] for i in items]
        assert ids == sorted(ids, reverse=True) and len(set(ids)) == 4  # newest first, each once
        log = [
            e
            for run_id in runs
            for e in (await http.get(f"/runs/{enc(run_id)}/events/poll?timeout=1", headers=h())).json()["events"]
        ]
        for item in items:
            assert item["attempts"] == 2 and item["reason"] == "retries_exhausted" and item["lastStatus"] == 500
            assert item["webhookId"] == webhook_id
            [event] = [e for e in log if e["eventId"] == item["eventId"]]  # names the event it carried
            assert event["type"] == item["eventType"] and event["runId"] == item["runId"]
        # A cursor is this subscription's: another's is refused.
        second = (await register(http, f"{rec.url}/down", ["run.started"], secret=SECRET)).json()["webhookId"]
        resp = await http.get(f"/webhooks/{enc(second)}/dead-letters?cursor={first['nextCursor']}", headers=h())
        assert resp.status_code == 400 and resp.json()["error"] == "validation_error"
        assert SECRET not in str(items) and "payload" not in str(items)
        # Another tenant neither reads nor deletes it; an unknown id is 404.
        other = {**auth("other"), **V2}
        assert (await http.get(path, headers=other)).status_code == 403
        assert (await http.delete(f"/webhooks/{enc(webhook_id)}", headers=other)).status_code == 403
        unknown = f"/webhooks/{enc('default/whk-01jd0000000000000000000000')}"
        resp = await http.delete(unknown, headers=h())
        assert resp.status_code == 404 and resp.json()["error"] == "not_found"


async def test_unregistered_subscriptions_get_nothing_more(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config())
    async with receiver() as rec, bridge(engine, LOOPBACK) as http:
        webhook_id = (await register(http, f"{rec.url}/gone", ["run.started"], secret=SECRET)).json()["webhookId"]
        await suspended(http)
        await rec.wait(lambda: len(rec.at("/gone")) == 1)
        assert (await http.delete(f"/webhooks/{enc(webhook_id)}", headers=h())).status_code == 204
        assert (await http.delete(f"/webhooks/{enc(webhook_id)}", headers=h())).status_code == 404
        # A later subscription is the sync point: by the time it hears the next run, the gone one would have too.
        await register(http, f"{rec.url}/later", ["run.started"], secret=SECRET)
        await suspended(http)
        await rec.wait(lambda: len(rec.at("/later")) == 1)
        assert len(rec.at("/gone")) == 1


async def test_registration_needs_the_scope_and_a_valid_body(client: httpx.AsyncClient) -> None:
    bob = {**auth("bob"), **V2}
    resp = await client.post(
        "/webhooks", json={"url": "https://hooks.invalid/x", "events": ["run.started"]}, headers=bob
    )
    assert resp.status_code == 403 and resp.json()["error"] == "forbidden"
    for body in (
        {"url": "https://hooks.invalid/x", "events": []},
        {"url": "https://hooks.invalid/x", "events": ["not an event"]},
        {"url": "https://hooks.invalid/x", "events": ["run.started"], "extra": 1},
        {"url": "https://hooks.invalid/x", "events": ["run.started"], "signatureAlgorithms": ["standard-webhooks-1"]},
        {
            "url": "https://hooks.invalid/x",
            "events": ["run.started"],
            "signatureAlgorithms": ["v1", "standard-webhooks-1"],
        },
    ):
        resp = await client.post("/webhooks", json=body, headers=h())
        assert resp.status_code == 400 and resp.json()["error"] == "validation_error", (body, resp.text)
    resp = await client.post("/webhooks", content=b"{", headers={**h(), "Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.headers["openwop-version"].startswith("2.")


async def test_discovery_advertises_the_webhooks_family(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/.well-known/openwop", headers=V2)).json()
    family = doc["webhooks"]
    assert family["signatureAlgorithms"] == ["v1", "standard-webhooks-1"]
    assert family["retryPolicy"]["backoff"] == "exponential" and family["deadLetter"]["maxPageSize"] == 100
    assert spec.problems("capabilities.schema.json", doc) == []


@pytest.mark.parametrize("events", [["vendorx.thing-done"], ["interrupt.resolved", "run.completed"]])
async def test_vendor_and_registered_event_names_are_accepted(client: httpx.AsyncClient, events: list[str]) -> None:
    # Refused for its URL, after the names passed: the names are not what is wrong.
    resp = await client.post("/webhooks", json={"url": "https://127.0.0.1/x", "events": events}, headers=h())
    assert resp.status_code == 400 and resp.json()["error"] == "webhook_url_rejected"


async def test_a_replay_fork_is_not_delivered_again(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config())
    async with receiver() as rec, bridge(engine, LOOPBACK) as http:
        await register(http, f"{rec.url}/hook", ["run.started", "run.completed"], secret=SECRET)
        source = await created_settled(http)
        forked = await http.post(f"/runs/{enc(source)}:fork", json={"mode": "replay"}, headers=h())
        assert forked.status_code == 201, forked.text
        fork_id = forked.json()["runId"]
        later = await created_settled(http)  # the sync point: by the time it is heard, the fork would have been
        await rec.wait(lambda: {r.json()["runId"] for r in rec.at("/hook")} >= {source, later})
        assert fork_id not in {r.json()["runId"] for r in rec.at("/hook")}
        assert len(rec.at("/hook")) == 4


async def test_tags_narrow_a_subscription_to_runs_that_share_one(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config())
    async with receiver() as rec, bridge(engine, LOOPBACK) as http:
        await register(http, f"{rec.url}/tagged", ["run.started"], secret=SECRET, tags=["finance", "eu"])
        await register(http, f"{rec.url}/all", ["run.started"], secret=SECRET)
        tagged = await created_settled(http, tags=["eu"])
        untagged = await created_settled(http)
        other = await created_settled(http, tags=["hr"])
        await rec.wait(lambda: len(rec.at("/all")) == 3)
        await rec.wait(lambda: len(rec.at("/tagged")) >= 1)
        assert [r.json()["runId"] for r in rec.at("/tagged")] == [tagged]
        assert {r.json()["runId"] for r in rec.at("/all")} == {tagged, untagged, other}


async def test_the_subscription_cap_holds_under_concurrent_registrations(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config())
    async with receiver() as rec, bridge(engine, WebhookSettings(allow_loopback=True, per_tenant=5)) as http:
        answers = await asyncio.gather(
            *(register(http, f"{rec.url}/cap{i}", ["run.started"], secret=SECRET) for i in range(40))
        )
        assert sorted(r.status_code for r in answers) == [201] * 5 + [400] * 35
        refused = next(r for r in answers if r.status_code == 400)
        assert refused.json()["error"] == "validation_error" and refused.json()["details"] == {"max": 5}
        # One run fans out to the five subscriptions kept, no more.
        await suspended(http)
        await rec.wait(lambda: engine.notify.counts[("webhook", "delivered")] == 5)
        assert len(rec.got) == 5
        # Another tenant has a cap of its own.
        other = await http.post(
            "/webhooks", json={"url": f"{rec.url}/o", "events": ["run.started"]}, headers={**auth("other"), **V2}
        )
        assert other.status_code == 201, other.text


@pytest.mark.postgres
async def test_two_instances_on_one_database_share_the_subscription_cap(pg_url: str) -> None:
    from openwop_bridge.store.postgres import PostgresStore
    from tests.conftest import fixture_workflows

    settings = WebhookSettings(allow_loopback=True, per_tenant=4)
    engines = [Engine(PostgresStore(pg_url), workflows=fixture_workflows(), config=fast_config()) for _ in range(2)]
    async with receiver() as rec, bridge(engines[0], settings) as one, bridge(engines[1], settings) as two:
        answers = await asyncio.gather(
            *(register((one, two)[i % 2], f"{rec.url}/cap{i}", ["run.started"], secret=SECRET) for i in range(30))
        )
        assert sorted(r.status_code for r in answers) == [201] * 4 + [400] * 26


async def test_the_owner_redrives_its_dead_letters_one_or_all(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config(attempts=2))
    async with receiver() as rec, bridge(engine, LOOPBACK) as http:
        rec.script["/down"] = [500] * 6
        webhook_id = (await register(http, f"{rec.url}/down", ["run.started"], secret=SECRET)).json()["webhookId"]
        runs = [await suspended(http) for _ in range(3)]
        await rec.wait(lambda: engine.notify.counts[("webhook", "dead")] == 3)
        path = f"/webhooks/{enc(webhook_id)}/dead-letters"
        dead = (await http.get(path, headers=h())).json()["deliveries"]
        assert len(dead) == 3
        # The receiver is fixed: one delivery is sent again, with its id and body, and leaves the sink.
        one = dead[0]
        resp = await http.post(f"{path}/{enc(one['deliveryId'])}/redrive", headers=h())
        assert resp.status_code == 202, resp.text
        assert resp.json() == {"redriven": [one["deliveryId"]]}
        await rec.wait(lambda: engine.notify.counts[("webhook", "delivered")] == 1)
        [again] = [r for r in rec.at("/down") if r.answered == 200]
        assert again.headers["openwop-delivery-attempt"] == "1" and again.json()["runId"] == one["runId"]
        before = [r for r in rec.at("/down") if r.answered == 500 and r.json()["runId"] == one["runId"]]
        assert len(before) == 2 and {r.body for r in before} == {again.body}  # the same delivery, byte for byte
        left = (await http.get(path, headers=h())).json()["deliveries"]
        assert [d["deliveryId"] for d in left] == [d["deliveryId"] for d in dead[1:]]
        # Not a dead letter any more (or never one of this subscription): 404, as an unknown id.
        resp = await http.post(f"{path}/{enc(one['deliveryId'])}/redrive", headers=h())
        assert resp.status_code == 404 and resp.json()["error"] == "not_found"
        unknown = enc("default/ntc-01jd0000000000000000000000")
        resp = await http.post(f"{path}/{unknown}/redrive", headers=h())
        assert resp.status_code == 404 and resp.json()["error"] == "not_found"
        # Another tenant can neither redrive nor name this tenant's deliveries.
        other = {**auth("other"), **V2}
        assert (await http.post(f"{path}/{enc(left[0]['deliveryId'])}/redrive", headers=other)).status_code == 403
        assert (await http.post(f"{path}/redrive", headers=other)).status_code == 403
        # The rest, all at once.
        resp = await http.post(f"{path}/redrive", headers=h())
        assert resp.status_code == 202, resp.text
        assert sorted(resp.json()["redriven"]) == sorted(d["deliveryId"] for d in left)
        await rec.wait(lambda: engine.notify.counts[("webhook", "delivered")] == 3)
        assert (await http.get(path, headers=h())).json() == {"deliveries": []}
        assert {r.json()["runId"] for r in rec.at("/down") if r.answered == 200} == set(runs)


async def test_subscriptions_are_read_again_only_where_other_instances_may_change_them(make_engine) -> None:  # type: ignore[no-untyped-def]
    """A store one server owns (SQLite) changes only through this server, which knows each change at once: its
    subscriptions are read at start and never again. A shared store (PostgreSQL) is read again every 2 s."""
    import asyncio

    from openwop_bridge.core.auth import KeyRing
    from openwop_bridge.host.app import create_app
    from openwop_bridge.notify.webhook.channel import REFRESH_S
    from tests.conftest import KEYS
    from tests.server import uvicorn_server

    engine: Engine = make_engine(fast_config())
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=True, webhooks=LOOPBACK)
    hooks = app.state.webhooks
    reads = 0
    scan = hooks.state.scan

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal reads
        reads += 1
        return await scan(*args, **kwargs)

    hooks.state.scan = counted
    async with receiver() as rec, uvicorn_server(app) as url, httpx.AsyncClient(base_url=url, timeout=15) as http:
        await asyncio.sleep(REFRESH_S * 1.6)
        at_start = reads
        # Known here at once, polled or not: a subscription registered now gets the next run's events.
        assert (await register(http, f"{rec.url}/hook", ["run.started"])).status_code == 201
        run_id = await created_settled(http)
        await rec.wait(lambda: len(rec.at("/hook")) == 1)
        assert rec.at("/hook")[0].json()["runId"] == run_id
    if engine.store.single_instance:
        assert at_start == 1
    else:
        assert at_start >= 2
