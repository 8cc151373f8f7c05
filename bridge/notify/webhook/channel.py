"""Webhook deliveries: the outbox planner that owes them and the channel that sends them (webhooks.md §Delivery).

The planner runs inside the transaction that commits a run's events: for every event a subscription of
the run's tenant asks for (its ``events`` filter and, if it has tags, an overlapping run tag), it drafts
one notice holding the delivery body ``{runId, event}`` (the v2 event, verbatim, ids tenant-bound),
built then, so every attempt sends the same bytes. The notice's id is the delivery's ``webhook-id``,
the same on every attempt.

The channel signs from the subscription as it stands when it sends (a rotation counts at once; an
unregistered subscription's notices are dead-lettered ``subscription_deleted``), checks the URL again
under :mod:`.egress` and connects to the address it checked, naming the host in ``Host`` and SNI, through
:mod:`.transport`. It never follows a redirect: a ``3xx`` is a failed attempt like any non-``2xx``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from openwop_bridge.core.clock import Clock
from openwop_bridge.core.notices import DeliveryOutcome, Notice, NoticeDraft
from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.notify.ports import KeyValue
from openwop_bridge.notify.service import NotifyService
from openwop_bridge.notify.webhook.egress import Egress, LookupFailedError, Target, WebhookUrlRejectedError
from openwop_bridge.notify.webhook.resolver import AsyncResolver
from openwop_bridge.notify.webhook.subscriptions import NAMESPACE, Snapshot, Subscription, signed_headers
from openwop_bridge.notify.webhook.transport import Transport

log = logging.getLogger("openwop_bridge.host.v2.webhooks")  # its name as before the move: log filters name it

#: How often the subscriptions are read again from the store (those registered on other instances).
REFRESH_S = 2.0
#: How long a delivery waits, at least, when its tenant or endpoint holds as many as it may (jittered up to twice).
DEFER_MS = 1000


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """The webhook knobs of ``serve`` (``--webhook-*``)."""

    allow_loopback: bool = False
    rotation_overlap_s: int = 86_400
    #: Queued deliveries one subscription may hold; more are refused, visibly (a dead letter ``queue_full``).
    per_subscription_queue: int = 1_000
    #: Subscriptions one tenant may hold.
    per_tenant: int = 100


class WireFormat(Protocol):
    """The v2 wire form of a delivery, handed down by the host that serves the webhook surface."""

    def body(self, tenant: str, run_id: str, event: dict[str, Any]) -> dict[str, Any]:
        """The delivery body of a run's event document (``{runId, event}``, ids tenant-bound)."""
        ...

    def webhook_id(self, tenant: str, webhook_id: str) -> str:
        """A subscription's v2 id (``<tenant>/whk-<ULID>``)."""
        ...


class SubscriptionState(KeyValue, Protocol):
    """Where subscriptions are kept (``engine.adapter_state(NAMESPACE)``), with the guarded writes registration uses."""

    async def put_capped(self, key: str, value: dict[str, Any], *, field: str, cap: int) -> bool:
        """Store a new object unless ``cap`` objects with this one's ``field`` are stored already."""
        ...

    async def replace(self, key: str, expected: Any, value: Any) -> bool:
        """Store ``value`` only while ``key`` still holds ``expected``."""
        ...

    async def forget_if(self, key: str, expected: Any) -> bool:
        """Delete ``key`` only while it still holds ``expected``."""
        ...


class WebhookEngine(Protocol):
    """The engine as the webhook channel uses it."""

    notify: NotifyService
    clock: Clock

    @property
    def store_shared(self) -> bool:
        """Whether other instances share the store."""
        ...

    def adapter_state(self, namespace: str) -> SubscriptionState:
        """One namespace of key-value state."""
        ...


class Webhooks:
    """The webhook surface's engine side: subscriptions, the planner, the channel, connections."""

    name = "webhook"

    def __init__(self, engine: WebhookEngine, settings: WebhookSettings, wire: WireFormat) -> None:
        self.engine = engine
        self.settings = settings
        self.wire = wire
        self.egress = Egress(settings.allow_loopback)
        self.state = engine.adapter_state(NAMESPACE)
        self._snapshot = Snapshot()
        #: Connections to receivers (:mod:`.transport`).
        self.transport = Transport()
        self._rand = random.SystemRandom()
        self._refresh: asyncio.Task[None] | None = None

    def install(self) -> None:
        """Plan and deliver through the engine's outbox."""
        self.engine.notify.add_planner(self.plan, idle=self.idle)
        self.engine.notify.add_channel(self)  # its retries: the engine's ``webhook_retry``

    # --- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Load the subscriptions, then keep them fresh: on a store other instances share, they are read again
        every :data:`REFRESH_S`; a store one server owns changes only here, where each change is known at once,
        so nothing is read again."""
        await self.load()
        if self.engine.store_shared:
            self._refresh = asyncio.create_task(self._refreshing(), name="openwop-bridge-webhooks")

    async def stop(self) -> None:
        """Stop refreshing and close connections."""
        if self._refresh is not None:
            self._refresh.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresh
            self._refresh = None
        await self.transport.aclose()
        if isinstance(self.egress.resolver, AsyncResolver):
            await self.egress.resolver.aclose()

    @property
    def connections(self) -> int:
        """Requests sent to receivers (deliveries and verifications), counted before each is tried."""
        return self.transport.connections

    async def _refreshing(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_S)
            try:
                await self.load()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("could not read the webhook subscriptions; keeping the last ones")

    async def load(self) -> None:
        """Read every subscription from the store."""
        found: list[Subscription] = []
        after: str | None = None
        while True:
            page = await self.state.scan("whk_", limit=500, after=after, descending=False)
            found += [Subscription.from_json(value) for _, value in page]
            if len(page) < 500:
                break
            after = page[-1][0]
        self._snapshot = Snapshot.of(found)

    # --- subscriptions ------------------------------------------------------------

    def get(self, webhook_id: str) -> Subscription | None:
        """A subscription this instance knows."""
        return self._snapshot.by_id.get(webhook_id)

    async def fetch(self, webhook_id: str) -> Subscription | None:
        """A subscription as stored now (registered on another instance, or changed there)."""
        doc = await self.state.get(webhook_id)
        return None if doc is None else Subscription.from_json(doc)

    def of_tenant(self, tenant: str) -> tuple[Subscription, ...]:
        """The subscriptions of a tenant this instance knows."""
        return self._snapshot.by_tenant.get(tenant, ())

    def remember(self, sub: Subscription) -> None:
        """Know ``sub`` here at once (registered or rotated here)."""
        self._snapshot = Snapshot.of(
            [*(s for s in self._snapshot.by_id.values() if s.webhook_id != sub.webhook_id), sub]
        )

    def forget(self, webhook_id: str) -> None:
        """Stop planning deliveries to ``webhook_id`` here."""
        self._snapshot = Snapshot.of(s for s in self._snapshot.by_id.values() if s.webhook_id != webhook_id)

    # --- the planner (inside the store's transactions) ---------------------------------

    def idle(self) -> bool:
        """Whether :meth:`plan` plans nothing whatever it is offered: no subscription is known here."""
        return not self._snapshot.by_id

    def plan(
        self, run: RunRecord, events: Sequence[dict[str, Any]], opened: Sequence[InterruptRecord], now_ms: int
    ) -> list[NoticeDraft]:
        """A delivery for each event a subscription of the run's tenant asks for (see the module)."""
        subs = self._snapshot.by_tenant.get(run.tenant)
        if not subs or not events or run.spec.get("replayOf"):
            return []  # a replay fork re-emits fixed history: never delivered again
        tags = frozenset(t for t in run.spec.get("tags") or () if isinstance(t, str))
        drafts: list[NoticeDraft] = []
        cap = self.settings.per_subscription_queue
        for doc in events:
            event_type = str(doc.get("type", ""))
            body: dict[str, Any] | None = None
            for sub in subs:
                if event_type not in sub.events or (sub.tags and not sub.tags & tags):
                    continue
                if body is None:
                    body = self.wire.body(run.tenant, run.run_id, doc)
                payload = {
                    "body": body,
                    "eventType": event_type,
                    "eventId": body["event"].get("eventId"),
                    "sequence": doc.get("sequence"),
                }
                drafts.append(NoticeDraft("webhook", sub.webhook_id, payload, recipient_cap=cap))
        return drafts

    # --- the channel ------------------------------------------------------------------

    def bounds(self, notice: Notice) -> list[tuple[Hashable, int]]:
        """The bounds of :mod:`.transport` a delivery counts against (its endpoint's, then its tenant's):
        the outbox worker starts an attempt only once it has a place under both, so a delivery waits its turn
        there instead of being claimed and deferred again and again."""
        sub = self.get(notice.recipient)
        if sub is None or sub.tenant != notice.tenant:
            return []
        try:
            scheme, host, port, _, _ = self.egress.check_url(sub.url)
        except WebhookUrlRejectedError:
            return []
        return [
            (("endpoint", sub.tenant, scheme, host, port), self.transport.per_endpoint),
            (("tenant", sub.tenant), self.transport.per_tenant),
        ]

    async def deliver(self, notice: Notice) -> DeliveryOutcome:
        """One attempt of a delivery (see the module)."""
        sub = self.get(notice.recipient) or await self.fetch(notice.recipient)
        if sub is None:
            return DeliveryOutcome.dead("subscription_deleted")
        if sub.tenant != notice.tenant:
            return DeliveryOutcome.dead("tenant_mismatch")  # never crosses tenants, whatever the row says
        try:
            target = await self.egress.resolve(sub.url)
        except LookupFailedError:
            return DeliveryOutcome.retry("dns_error")  # a DNS outage passes: retried like a refused connection
        except WebhookUrlRejectedError:
            return DeliveryOutcome.dead("url_rejected")
        slot = self.transport.hold(sub.tenant, target)
        if slot is None:  # the tenant, or this endpoint of it, holds as many deliveries as it may: wait a turn
            return DeliveryOutcome.deferred(DEFER_MS + self._rand.randrange(DEFER_MS))
        with slot:
            return await self._send(notice, sub, target)

    async def _send(self, notice: Notice, sub: Subscription, target: Target) -> DeliveryOutcome:
        """Sign ``notice``'s delivery as ``sub`` stands now and post it to ``target`` (a slot of it held)."""
        raw = orjson.dumps(notice.payload["body"])
        now_ms = self.engine.clock.now_ms()
        headers = signed_headers(
            sub,
            message_id=notice.notice_id,
            event_type=str(notice.payload.get("eventType")),
            timestamp=now_ms // 1000,
            raw=raw,
            now_ms=now_ms,
            wire_id=self.wire.webhook_id(sub.tenant, sub.webhook_id),
        )
        headers["OpenWOP-Delivery-Attempt"] = str(notice.attempt)
        # The worker's own bound on the attempt is this timeout too: end the exchange a little before it.
        timeout = max(self.engine.notify.policy("webhook").timeout_ms / 1000 - 0.25, 0.5)
        import httpx  # loaded with the first delivery, not at start-up

        try:
            status, retry_after, _ = await self.transport.post(sub.tenant, target, raw, headers, timeout)
        except (httpx.TimeoutException, TimeoutError):
            return DeliveryOutcome.retry("timeout")
        except httpx.HTTPError:
            return DeliveryOutcome.retry("connect_error")
        if 200 <= status < 300:
            return DeliveryOutcome.delivered()
        return DeliveryOutcome.retry(f"http_{status}", retry_after)
