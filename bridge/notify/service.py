"""``engine.notify``: where planners and channels are registered, and notices enqueued later.

Planners run inside the store's transactions (:class:`~openwop_bridge.core.notices.NoticePlanner`): a notice
is durable exactly when what it announces is. :meth:`NotifyService.enqueue` writes notices in a
transaction of their own, for what is decided later (a reminder, an escalation); a draft's
``not_before_ms`` in the future makes it a durable delayed notice, which the worker honours across
restarts and instances. A notice is addressed when it is attempted (:meth:`NotifyService.readdress_with`: a
delegate standing in for its person). Outcomes of the people channels (e-mail, Slack, Teams) become the run
events ``notification.sent`` and ``notification.failed``; webhook deliveries report none (a
webhook carries run events: reporting them as events would feed itself).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from openwop_bridge.core.clock import Clock
from openwop_bridge.core.notices import (
    POLICY_CHANNEL,
    DeadLetter,
    NoticeDraft,
    NoticePlanner,
    OutboxLimits,
    RetryPolicy,
)
from openwop_bridge.notify.notice import Channel, Notice
from openwop_bridge.notify.states import delivery_fields, public_recipient
from openwop_bridge.notify.worker import NoticeSpan, OutboxWorker, Settled, no_span
from openwop_bridge.store.base import Store

WEBHOOK = "webhook"

#: The run events a people channel's notice ends with.
SENT, FAILED = "notification.sent", "notification.failed"

#: ``(run_id, event type, payload)`` appended to a run's log by the engine.
EventSink = Callable[[str, str, dict[str, Any]], Awaitable[None]]


class NotifyService:
    """The outbox's side of the engine: planners, channels, the worker, enqueueing and reading notices."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        owner: str,
        *,
        notify_retry: RetryPolicy,
        webhook_retry: RetryPolicy,
        recipient_key: Callable[[], bytes],
        in_flight: int = 256,
        per_destination: int = 4,
        span: NoticeSpan = no_span,
    ) -> None:
        self._store = store
        self._clock = clock
        #: The key of e-mail addresses' ids in events and views
        #: (:func:`~openwop_bridge.notify.states.public_recipient`).
        self.recipient_key = recipient_key
        self._policies: dict[str, RetryPolicy] = {"webhook": webhook_retry}
        self._default = notify_retry
        self._planners: list[NoticePlanner] = []
        self._idle: list[Callable[[], bool]] = []
        self._always_plans = False
        self.channels: dict[str, Channel] = {}
        #: Attempts ended here, by ``(channel, outcome)`` (``delivered``, ``retry``, ``dead``).
        self.counts: Counter[tuple[str, str]] = Counter()
        self._sink: EventSink | None = None
        self._seen_written = 0
        self._seen_by_channel: dict[str, int] = {}
        self._listeners: list[Callable[[Settled], None]] = []
        self.worker = OutboxWorker(
            store,
            clock,
            owner,
            self.channels,
            self.policy,
            on_settled=self._settled,
            in_flight=in_flight,
            per_destination=per_destination,
            transient=store.transient_errors,
            span=span,
        )

    # --- registration ---------------------------------------------------------------

    def add_planner(self, planner: NoticePlanner, *, idle: Callable[[], bool] | None = None) -> None:
        """Plan notices in every run transaction from now on (see :class:`~openwop_bridge.core.notices.NoticePlanner`).

        ``idle``: a cheap test, true while ``planner`` would plan nothing whatever the commit (a webhook
        planner without subscriptions). While every planner's is true, transactions skip planning
        altogether; a planner without one is always asked.
        """
        self._planners.append(planner)
        if idle is None:
            self._always_plans = True
        else:
            self._idle.append(idle)
        planning = self._store.notice_planning
        planning.planners = tuple(self._planners)
        planning.idle = None if self._always_plans else self._all_idle

    def _all_idle(self) -> bool:
        return all(idle() for idle in self._idle)

    def add_channel(self, channel: Channel, policy: RetryPolicy | None = None) -> None:
        """Deliver ``channel.name``'s notices through ``channel`` (with its own retry policy, if given)."""
        if not channel.name:
            raise ValueError("a channel needs a name")
        self.channels[channel.name] = channel
        if policy is not None:
            self._policies[channel.name] = policy
        self.worker.poke()

    def readdress_with(self, readdress: Callable[[Notice], Awaitable[Notice]]) -> None:
        """Address each notice with ``readdress`` when it is attempted (to whom it goes now: a delegate standing
        in for its person, :mod:`openwop_bridge.notify.delegated`)."""
        self.worker.readdress = readdress

    def policy(self, channel: str) -> RetryPolicy:
        """The retry policy of a channel's notices."""
        return self._policies.get(channel, self._default)

    def set_limits(self, limits: OutboxLimits) -> None:
        """Caps on queued notices (per tenant, per recipient) and how long settled notices are kept."""
        self._store.notice_planning.limits = limits

    def on_event(self, sink: EventSink) -> None:
        """Where ``notification.sent``/``notification.failed`` go (the engine appends them to the run)."""
        self._sink = sink

    def on_settled(self, listener: Callable[[Settled], None]) -> None:
        """Call ``listener`` after every attempt recorded here (tests, metrics)."""
        self._listeners.append(listener)

    # --- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        """Start delivering."""
        self.worker.start()

    async def stop(self) -> None:
        """Stop delivering; what is queued stays durable."""
        await self.worker.stop()

    def poke(self) -> None:
        """A commit here may have written notices: look for due ones now if it wrote some that a channel here
        delivers (a commit that wrote none costs no look)."""
        written = self._store.notices_written
        if written != self._seen_written:
            self._seen_written = written
            # Only notices a channel here delivers are worth a look (a look is a claim, a transaction);
            # a channel added later looks for what is waiting when it is added.
            by_channel: Mapping[str, int] = self._store.notices_written_by_channel or {}
            seen = {name: by_channel.get(name, 0) for name in self.channels}
            if seen != self._seen_by_channel:
                self._seen_by_channel = seen
                self.worker.poke()

    def poke_remote(self) -> None:
        """Another instance committed events (and perhaps notices): look for due ones now."""
        if self.channels:
            self.worker.poke()

    # --- notices ----------------------------------------------------------------------

    async def enqueue(self, tenant: str, run_id: str, drafts: Sequence[NoticeDraft]) -> list[str]:
        """Write notices of a run now, in a transaction of their own; their ids. A draft whose
        ``not_before_ms`` lies ahead is a durable delayed notice."""
        ids = await self._store.outbox_add(tenant, run_id, drafts, self._clock.now_ms())
        self.worker.poke()
        return ids

    async def dead_letters(
        self, channel: str, recipient: str, tenant: str, *, limit: int, after: str | None = None
    ) -> list[DeadLetter]:
        """One page of a destination's dead letters within ``tenant``."""
        return await self._store.outbox_dead_letters(channel, recipient, tenant, limit=limit, after=after)

    async def redrive(
        self, channel: str, recipient: str, tenant: str, notice_ids: Sequence[str] | None, *, cap: int
    ) -> list[str]:
        """Queue a destination's dead letters again (those named, or its oldest hundred), due now; the ids queued
        (:meth:`~openwop_bridge.store.base.Store.outbox_redrive`)."""
        ids = await self._store.outbox_redrive(channel, recipient, tenant, notice_ids, self._clock.now_ms(), cap=cap)
        if ids:
            self.worker.poke()
        return ids

    async def states(self, notice_ids: Sequence[str]) -> dict[str, tuple[str, int, str | None]]:
        """``notice_id → (status, attempts made, last error)``."""
        return await self._store.outbox_states(notice_ids)

    async def delivery_state(self, interrupt_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Per-person delivery state of the interrupts named (see :mod:`openwop_bridge.notify.states`)."""
        return delivery_fields(await self._store.outbox_of_interrupts(interrupt_ids), self.recipient_key())

    # --- outcomes ---------------------------------------------------------------------

    async def _settled(self, settled: Settled) -> None:
        self.counts[(settled.notice.channel, settled.status)] += 1
        for listener in self._listeners:
            listener(settled)
        await self.report(settled)

    async def report(self, settled: Settled) -> None:
        """Append the run event a people channel's notice ended with (none for webhooks, the bridge's own policy
        notices, or retries)."""
        notice = settled.notice
        if self._sink is None or notice.channel in (WEBHOOK, POLICY_CHANNEL) or settled.status == "retry":
            return
        payload: dict[str, Any] = {
            "noticeId": notice.notice_id,
            "channel": notice.channel,
            "recipient": public_recipient(notice.recipient, self.recipient_key()),
            "attempt": notice.attempt,
        }
        if notice.interrupt_id is not None:
            payload["interruptId"] = notice.interrupt_id
        if notice.payload.get("delegate"):  # a delegate's copy (:mod:`openwop_bridge.notify.delegated`)
            payload["onBehalfOf"] = str(notice.payload.get("person"))
            payload["delegationId"] = str(notice.payload.get("delegationId"))
        if settled.status == "dead":
            payload["reason"] = settled.reason or "failed"
        await self._sink(notice.run_id, SENT if settled.status == "delivered" else FAILED, payload)
