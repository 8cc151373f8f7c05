"""Standard Webhooks (``standard-webhooks-1``) against a real receiver, verified with the ``standardwebhooks``
library: the endpoint challenge before ``201`` (nothing stored when it fails), the ``webhook-*`` headers on
every delivery, and a rotation during whose overlap both secrets sign."""

from __future__ import annotations

import base64
import hashlib
import hmac

import httpx
import orjson
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from openwop_bridge import Engine
from openwop_bridge.notify.webhook.subscriptions import STANDARD, V1, Subscription, signed_headers
from openwop_bridge.spec import v2 as spec
from tests.host.test_webhooks import LOOPBACK, fast_config, register, verify_v1
from tests.host.v2_scenario import enc, h, suspended
from tests.host.webhook_receiver import bridge, receiver

OLD = "whsec_" + base64.b64encode(b"o" * 32).decode()
NEW = "whsec_" + base64.b64encode(b"n" * 32).decode()
BOTH = [V1, STANDARD]


async def test_the_challenge_must_be_echoed_before_201_and_nothing_is_kept_otherwise(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config())
    async with receiver() as rec, bridge(engine, LOOPBACK) as http:
        for path in ("/plain", "/redirect"):  # answers 200 {} / 307 to /target: neither echoes
            resp = await register(http, f"{rec.url}{path}", ["run.started"], secret=OLD, signatureAlgorithms=BOTH)
            assert resp.status_code == 400 and resp.json()["error"] == "webhook_endpoint_unverified", resp.text
        assert rec.at("/target") == [] and len(rec.at("/plain")) == len(rec.at("/redirect")) == 1  # no retry
        resp = await register(http, f"{rec.url}/echo", ["run.started"], secret=OLD, signatureAlgorithms=BOTH)
        assert resp.status_code == 201, resp.text
        assert resp.json()["signatureAlgorithms"] == BOTH and "secret" not in resp.json()
        [challenge] = rec.at("/echo")
        assert "openwop-event-type" not in challenge.headers  # not a delivery
        sent = Webhook(OLD).verify(challenge.body, challenge.headers)
        assert spec.problems("webhook-verification.schema.json", sent) == [], sent  # RFC 0201 §D
        assert sent["type"] == "openwop.webhook.verification"
        # The refused subscriptions were never stored: the next run is heard at /echo only.
        await suspended(http)
        await rec.wait(lambda: len(rec.at("/echo")) == 2)
        assert len(rec.at("/plain")) == len(rec.at("/redirect")) == 1


async def test_deliveries_carry_standard_signatures_and_a_rotation_overlaps(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config())
    async with receiver() as rec, bridge(engine, LOOPBACK) as http:
        resp = await register(http, f"{rec.url}/echo", ["run.started"], secret=OLD, signatureAlgorithms=BOTH)
        webhook_id = resp.json()["webhookId"]
        await suspended(http)
        await rec.wait(lambda: len(rec.at("/echo")) == 2)
        first = rec.at("/echo")[1]
        assert Webhook(OLD).verify(first.body, first.headers)["event"]["type"] == "run.started"
        assert first.headers["webhook-timestamp"] == first.headers["openwop-timestamp"]
        assert first.headers["webhook-id"].startswith("ntc_")
        verify_v1(OLD, first)

        resp = await http.post(f"/webhooks/{enc(webhook_id)}/rotate-secret", json={"secret": NEW}, headers=h())
        assert resp.status_code == 200, resp.text
        assert set(resp.json()) == {"webhookId", "rotatedAt", "previousSecretExpiresAt"}
        await suspended(http)
        await rec.wait(lambda: len(rec.at("/echo")) == 3)
        rotated = rec.at("/echo")[2]
        # Inside the overlap both secrets sign webhook-signature; OpenWOP-Signature stays on the previous one.
        assert len(rotated.headers["webhook-signature"].split(" ")) == 2
        Webhook(NEW).verify(rotated.body, rotated.headers)
        Webhook(OLD).verify(rotated.body, rotated.headers)
        verify_v1(OLD, rotated)
        with pytest.raises(WebhookVerificationError):
            Webhook("whsec_" + base64.b64encode(b"x" * 32).decode()).verify(rotated.body, rotated.headers)


async def test_rotation_is_for_opted_in_subscriptions_with_a_whsec_secret(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config())
    async with receiver() as rec, bridge(engine, LOOPBACK) as http:
        plain = (await register(http, f"{rec.url}/a", ["run.started"], secret="a-plain-secret-0123456789")).json()
        resp = await http.post(f"/webhooks/{enc(plain['webhookId'])}/rotate-secret", json={"secret": NEW}, headers=h())
        assert resp.status_code == 400 and resp.json()["error"] == "validation_error"
        opted = (await register(http, f"{rec.url}/echo", ["run.started"], secret=OLD, signatureAlgorithms=BOTH)).json()
        path = f"/webhooks/{enc(opted['webhookId'])}/rotate-secret"
        resp = await http.post(path, json={"secret": "not-a-whsec-secret-at-all"}, headers=h())
        assert resp.status_code == 400
        other = await http.post(path, json={"secret": NEW}, headers={**h(), "Authorization": "Bearer key-other-0001"})
        assert other.status_code == 403


def test_after_the_overlap_only_the_new_secret_signs() -> None:
    sub = Subscription("whk_01jd0000000000000000000000", "t", "https://x.test/", frozenset(), OLD, (V1, STANDARD))
    rotated = sub.rotated(NEW, now_ms=1_000_000, overlap_s=60)
    raw = orjson.dumps({"a": 1})
    later = signed_headers(
        rotated,
        message_id="ntc_0123456789abcdef",
        event_type="run.started",
        timestamp=2_000,
        raw=raw,
        now_ms=1_060_000,
        wire_id=f"{rotated.tenant}/whk-1",
    )
    assert len(later["webhook-signature"].split(" ")) == 1
    key = base64.b64decode(NEW.removeprefix("whsec_"))
    mac = hmac.new(key, b"ntc_0123456789abcdef.2000." + raw, hashlib.sha256).digest()
    assert later["webhook-signature"] == "v1," + base64.b64encode(mac).decode()
    expected = "sha256=" + hmac.new(NEW.encode(), b"2000." + raw, hashlib.sha256).hexdigest()
    assert later["OpenWOP-Signature"] == later["X-openwop-Signature"] == expected


async def test_standard_webhooks_needs_a_whsec_secret(client: httpx.AsyncClient) -> None:
    body = {"url": "https://hooks.invalid/", "events": ["run.started"], "signatureAlgorithms": BOTH}
    for secret in (None, "plain-secret-0123456789", "whsec_" + base64.b64encode(b"short").decode()):
        resp = await client.post("/webhooks", json={**body, **({"secret": secret} if secret else {})}, headers=h())
        assert resp.status_code == 400 and resp.json()["error"] == "validation_error", secret


async def test_webhook_answers_validate_against_the_served_document(make_engine) -> None:  # type: ignore[no-untyped-def]
    from tests.host.test_v2_openapi_bodies import _document

    engine: Engine = make_engine(fast_config(attempts=1))
    async with receiver() as rec, bridge(engine, LOOPBACK) as http:
        doc = await _document(http)
        assert {"registerWebhook", "unregisterWebhook", "rotateWebhookSecret", "listWebhookDeadLetters"} <= {
            op["operationId"] for item in doc.doc["paths"].values() for op in item.values()
        }
        rec.script["/echo"] = []
        made = await register(http, f"{rec.url}/down", ["run.started"])  # no secret sent: one is made and shown
        assert made.status_code == 201 and doc.problems("/webhooks", "post", made.json(), "201") == []
        assert len(made.json()["secret"]) >= 32
        rec.script["/down"] = [500]
        await suspended(http)
        await rec.wait(lambda: engine.notify.counts[("webhook", "dead")] == 1)
        page = await http.get(f"/webhooks/{enc(made.json()['webhookId'])}/dead-letters", headers=h())
        assert len(page.json()["deliveries"]) == 1
        assert doc.problems("/webhooks/{webhookId}/dead-letters", "get", page.json()) == []
        opted = await register(http, f"{rec.url}/echo", ["run.started"], secret=OLD, signatureAlgorithms=BOTH)
        assert doc.problems("/webhooks", "post", opted.json(), "201") == []
        rotated = await http.post(
            f"/webhooks/{enc(opted.json()['webhookId'])}/rotate-secret", json={"secret": NEW}, headers=h()
        )
        assert doc.problems("/webhooks/{webhookId}/rotate-secret", "post", rotated.json()) == []
