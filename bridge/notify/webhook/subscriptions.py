"""Webhook subscriptions: their records, where they are kept, and how deliveries are signed.

A subscription is kept in the engine's key-value state (namespace ``webhooks``), so every instance
on one database sees it; each instance holds a snapshot of them all, by tenant, which the outbox
planner reads inside the store's transactions (it must not wait on anything), refreshed on every
registration here and every few seconds from the store (another instance's registrations).

Signatures (webhooks.md §Headers, §Standard Webhooks): ``OpenWOP-Signature`` is
``sha256=<hex HMAC-SHA256(secret, "{ts}.{rawBody}")>``; for a subscription opted into
``standard-webhooks-1``, ``webhook-signature`` holds ``v1,<base64 HMAC-SHA256(decoded secret,
"{webhook-id}.{ts}.{rawBody}")>`` for each secret that signs (two during a rotation's overlap).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

V1 = "v1"
STANDARD = "standard-webhooks-1"
ALGORITHMS = (V1, STANDARD)
#: The key-value namespace of subscriptions.
NAMESPACE = "webhooks"
#: A Standard Webhooks secret: ``whsec_`` and the base64 of 24 to 64 bytes.
WHSEC = "whsec_"


@dataclass(frozen=True, slots=True)
class Subscription:
    """One webhook subscription (``webhook_id`` is the engine's ``whk_…`` id; its v2 form is tenant-bound)."""

    webhook_id: str
    tenant: str
    url: str
    events: frozenset[str]
    secret: str
    algorithms: tuple[str, ...] = (V1,)
    tags: frozenset[str] = frozenset()
    created_ms: int = 0
    previous_secret: str | None = None
    previous_until_ms: int | None = None
    rotated_ms: int | None = None

    @property
    def standard(self) -> bool:
        """Opted into Standard Webhooks signatures."""
        return STANDARD in self.algorithms

    def to_json(self) -> dict[str, Any]:
        """The stored record (secrets included: it never leaves the store but to sign)."""
        return {
            "webhookId": self.webhook_id,
            "tenant": self.tenant,
            "url": self.url,
            "events": sorted(self.events),
            "secret": self.secret,
            "algorithms": list(self.algorithms),
            "tags": sorted(self.tags),
            "createdMs": self.created_ms,
            "previousSecret": self.previous_secret,
            "previousUntilMs": self.previous_until_ms,
            "rotatedMs": self.rotated_ms,
        }

    @staticmethod
    def from_json(doc: dict[str, Any]) -> Subscription:
        """A subscription from its stored record."""
        return Subscription(
            webhook_id=doc["webhookId"],
            tenant=doc["tenant"],
            url=doc["url"],
            events=frozenset(doc.get("events", ())),
            secret=doc["secret"],
            algorithms=tuple(doc.get("algorithms", (V1,))),
            tags=frozenset(doc.get("tags", ())),
            created_ms=int(doc.get("createdMs", 0)),
            previous_secret=doc.get("previousSecret"),
            previous_until_ms=doc.get("previousUntilMs"),
            rotated_ms=doc.get("rotatedMs"),
        )

    def rotated(self, new_secret: str, now_ms: int, overlap_s: int) -> Subscription:
        """This subscription with ``new_secret``, the current one signing beside it for ``overlap_s``."""
        return replace(
            self,
            secret=new_secret,
            previous_secret=self.secret,
            previous_until_ms=now_ms + overlap_s * 1000,
            rotated_ms=now_ms,
        )

    def signing_secrets(self, now_ms: int) -> tuple[str, str | None]:
        """``(secret for OpenWOP-Signature, the other Standard Webhooks secret or None)``: during a rotation's
        overlap ``OpenWOP-Signature`` stays on the previous secret and both sign ``webhook-signature``."""
        if self.previous_secret is not None and self.previous_until_ms is not None and now_ms < self.previous_until_ms:
            return self.previous_secret, self.secret
        return self.secret, None


def whsec_bytes(secret: str) -> bytes | None:
    """The key a ``whsec_<base64>`` secret stands for (24 to 64 bytes), or None if it is not one."""
    if not secret.startswith(WHSEC):
        return None
    try:
        key = base64.b64decode(secret[len(WHSEC) :], validate=True)
    except (binascii.Error, ValueError):
        return None
    return key if 24 <= len(key) <= 64 else None


def openwop_signature(secret: str, timestamp: int, raw: bytes) -> str:
    """``OpenWOP-Signature``: ``sha256=`` and the hex HMAC-SHA256 of ``{timestamp}.{raw}`` under the secret."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + raw, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def standard_signature(secrets: Iterable[str], message_id: str, timestamp: int, raw: bytes) -> str:
    """``webhook-signature``: a ``v1,<base64>`` entry per ``whsec_`` secret over ``{id}.{timestamp}.{raw}``."""
    signed = f"{message_id}.{timestamp}.".encode() + raw
    entries = []
    for secret in secrets:
        key = whsec_bytes(secret)
        if key is not None:
            entries.append("v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode())
    return " ".join(entries)


def signed_headers(
    sub: Subscription,
    *,
    message_id: str,
    event_type: str | None,
    timestamp: int,
    raw: bytes,
    now_ms: int,
    wire_id: str | None = None,
) -> dict[str, str]:
    """The headers of one delivery (``event_type``, and ``wire_id``: the subscription's v2 id, such as
    ``<tenant>/whk-<ULID>``) or of the endpoint challenge (``event_type`` None: only the three ``webhook-*``
    headers, it is not a delivery)."""
    primary, other = sub.signing_secrets(now_ms)
    headers: dict[str, str] = {"Content-Type": "application/json"}
    if event_type is not None:
        if wire_id is None:
            raise ValueError("a delivery's headers name the subscription's v2 id (wire_id)")
        family = {
            "Webhook-Id": wire_id,
            "Event-Type": event_type,
            "Timestamp": str(timestamp),
            "Signature": openwop_signature(primary, timestamp, raw),
            "Signature-Algorithm": V1,
        }
        for name, value in family.items():
            headers[f"OpenWOP-{name}"] = value
            headers[f"X-openwop-{name}"] = value
    if sub.standard or event_type is None:
        secrets = [sub.secret] if other is None else [sub.secret, primary]  # the new one, and the previous
        headers["webhook-id"] = message_id
        headers["webhook-timestamp"] = str(timestamp)
        headers["webhook-signature"] = standard_signature(secrets, message_id, timestamp, raw)
    return headers


@dataclass
class Snapshot:
    """Every subscription this instance knows, by tenant and by id (replaced whole, never changed in place)."""

    by_tenant: dict[str, tuple[Subscription, ...]] = field(default_factory=dict)
    by_id: dict[str, Subscription] = field(default_factory=dict)

    @staticmethod
    def of(subs: Iterable[Subscription]) -> Snapshot:
        """A snapshot of ``subs``."""
        by_tenant: dict[str, list[Subscription]] = {}
        by_id: dict[str, Subscription] = {}
        for sub in subs:
            by_tenant.setdefault(sub.tenant, []).append(sub)
            by_id[sub.webhook_id] = sub
        return Snapshot({t: tuple(s) for t, s in by_tenant.items()}, by_id)
