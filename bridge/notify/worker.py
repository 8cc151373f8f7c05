"""The outbox worker: claims due notices, delivers them through their channels, records the outcomes.

It runs beside the engine, off every request path: a commit only writes rows, and
:meth:`OutboxWorker.poke` wakes the worker at once (another instance's commit wakes it through the
store's notifications, or its next poll). Each attempt is bounded by its channel's timeout; at most
``per_destination`` attempts run at once for one ``(channel, recipient)`` and ``in_flight`` in all,
so a hung receiver holds a few slots and nobody else's. A notice claimed for a destination already
busy is given back, due again a moment later, without counting an attempt.

Failures are retried with exponential backoff and jitter (:class:`~openwop_bridge.core.notices.RetryPolicy`)
until the attempts are spent; then the notice is a dead letter. A failed attempt keeps its slots a moment
(:data:`FAILED_PAUSE_MS`), so a receiver that fails at once is tried a few times a second per slot, not
as fast as the machine can. Leases make this safe across
instances and crashes: a notice claimed by an instance that died comes due again for every instance
when its lease runs out, with a new attempt number and the same ``notice_id``.

A destination may have a few notices waiting here for one of its slots (:data:`BACKLOG` times its
share), and a tenant :data:`TENANT_BACKLOG` in all; a claim leaves out the destinations and tenants that
hold as many as they may, so their backlog stays in the store, unclaimed, until they have room. A channel
may bound attempts more widely than by destination (:meth:`~openwop_bridge.notify.notice.Channel.bounds`: a
webhook tenant's deliveries, those to one endpoint): an attempt then starts once it has a place under
each bound, so a notice waits here for its turn rather than being claimed, handed back and claimed again.
One claimed past a backlog is given back at once, due again a moment later, and so is one that waited so
long that its lease would run out during its attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from openwop_bridge.core.clock import Clock
from openwop_bridge.core.notices import DeliveryOutcome, Notice, RetryPolicy
from openwop_bridge.notify.notice import Channel
from openwop_bridge.store.base import Store
from openwop_bridge.store.plan_outbox import QUEUE_FULL, REFUSED

log = logging.getLogger("openwop_bridge.notify.worker")

#: A span around one attempt (its channel, attempt and outcome; never an address, a body or a secret), or a
#: context yielding None while nothing collects spans. The engine hands its tracer's down (``telemetry.notice_span``).
NoticeSpan = Callable[[Notice], AbstractContextManager[Any]]


def no_span(notice: Notice) -> AbstractContextManager[None]:
    """No span: the attempt is not traced."""
    return nullcontext()


#: How long an idle worker sleeps before looking again (another instance's notices, a lost poke).
IDLE_POLL_S = 1.0
#: How long a notice given back for a busy destination waits before it is due again.
BUSY_DEFER_MS = 250
#: Notices one destination may have here, waiting or being attempted, in multiples of its concurrency; a
#: claim takes at most that many (so one round cannot overfill one destination much).
BACKLOG = 4
#: Notices one tenant may have here, waiting or being attempted, every destination of it.
TENANT_BACKLOG = 64
#: The most busy recipients (and tenants) a claim leaves out by name.
MAX_BUSY_LISTED = 256
#: How long, at most, a failed attempt keeps its slots (its destination's, its channel's bounds) after it ended, or
#: until its retry is due if that is sooner: a failing receiver (one that refuses connections fails in a millisecond)
#: is tried a few times a second per slot, not as fast as the machine can, so its backlog costs little.
FAILED_PAUSE_MS = 250
#: How often delivered notices and dead letters past their retention are deleted.
PRUNE_EVERY_S = 10.0
#: The most batches one pruning deletes (each a transaction of its own, a few hundred rows).
PRUNE_BATCHES = 50


@dataclass(frozen=True, slots=True)
class Settled:
    """One attempt's end, as the worker reports it (to events and counters)."""

    notice: Notice
    status: str  # "delivered", "retry", "dead"
    reason: str

    @property
    def outcome(self) -> str:
        """The attempt as metrics count it: ``delivered``, ``retry``, ``dead``, or ``refused`` (a notice written
        past a cap on queued notices, dead without being sent)."""
        return "refused" if self.status == "dead" and self.reason == QUEUE_FULL else self.status


def backoff_ms(policy: RetryPolicy, attempt: int, after_ms: int | None, rand: Callable[[], float]) -> int:
    """The wait before the attempt after ``attempt``: ``base · 2^(attempt-1)`` capped, half of it jittered;
    a receiver's own ``after_ms`` (Retry-After) when it asks for longer, within the cap."""
    delay = min(policy.max_ms, policy.base_ms * (2 ** min(attempt - 1, 40)))
    jittered = int(delay / 2 + rand() * delay / 2)
    if after_ms is not None:
        jittered = max(jittered, min(after_ms, policy.max_ms))
    return jittered


class OutboxWorker:
    """Drains the outbox for this instance (see the module)."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        owner: str,
        channels: Mapping[str, Channel],
        policies: Callable[[str], RetryPolicy],
        *,
        on_settled: Callable[[Settled], Awaitable[None]] | None = None,
        in_flight: int = 256,
        per_destination: int = 4,
        transient: tuple[type[BaseException], ...] = (),
        failed_pause_ms: int = FAILED_PAUSE_MS,
        span: NoticeSpan = no_span,
    ) -> None:
        self._store = store
        self._span = span
        self._clock = clock
        self._owner = owner
        self._channels = channels
        self._policies = policies
        self._on_settled = on_settled
        self._in_flight = in_flight
        self._per_destination = per_destination
        self._transient = transient
        self._failed_pause_ms = failed_pause_ms
        #: How a notice is addressed when it is attempted (a delegate standing in for its person:
        #: :mod:`openwop_bridge.notify.delegated`); as it is, by default.
        self.readdress: Callable[[Notice], Awaitable[Notice]] | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._deliveries: set[asyncio.Task[None]] = set()
        self._busy: dict[tuple[str, str], int] = {}
        self._slots: dict[tuple[str, str], asyncio.Semaphore] = {}
        self._tenants: dict[str, int] = {}
        #: The channels' wider bounds (:meth:`Channel.bounds`): a semaphore each, and how many notices here use it.
        self._bounds: dict[Hashable, tuple[asyncio.Semaphore, int]] = {}
        self._rand = random.SystemRandom().random
        self._pruned_at = 0.0
        self._settled = 0

    def poke(self) -> None:
        """Look for due notices now (a notice was written)."""
        self._wake.set()

    def start(self) -> None:
        """Start draining (idempotent)."""
        if self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self._loop(), name="openwop-bridge-outbox")

    async def stop(self) -> None:
        """Stop claiming and cancel attempts in flight (their notices come due again when their leases run out)."""
        task, self._task = self._task, None
        if task is not None:
            # asyncio.wait_for (Python 3.11) may swallow a cancel that lands in the turn its wait ends
            # (a poke): the loop also ends on this flag, so it stops even then.
            self._stopping = True
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for delivery in list(self._deliveries):
            delivery.cancel()
        if self._deliveries:
            await asyncio.gather(*self._deliveries, return_exceptions=True)

    @property
    def busy(self) -> int:
        """Attempts in flight here."""
        return len(self._deliveries)

    def _lease_ms(self) -> int:
        longest = max((self._policies(name).timeout_ms for name in self._channels), default=10_000)
        return 2 * longest + 5_000

    async def _loop(self) -> None:
        while not self._stopping:
            try:
                await self._round()
            except asyncio.CancelledError:
                raise
            except self._transient:
                log.warning("the outbox is unreachable for now; retrying")
                await asyncio.sleep(IDLE_POLL_S)
            except Exception:
                log.exception("outbox round failed")
                await asyncio.sleep(IDLE_POLL_S)

    async def _round(self) -> None:
        """Claim what is due (when something is, and a slot is free), else sleep until the next notice is due,
        a poke, or the idle poll. An idle worker only reads: it writes only to claim and to settle."""
        self._wake.clear()
        if not self._channels:
            await self._wake.wait()  # a channel registered pokes
            return
        now = self._clock.now_ms()
        # Only what a channel here delivers: a notice of another channel is another instance's to claim,
        # and looking for it would be a transaction each poll.
        due = await self._store.outbox_next_due(list(self._channels))
        free = min(self._in_flight - len(self._deliveries), self._per_destination * BACKLOG)
        if due is not None and due <= now and free > 0:
            lease_ms = self._lease_ms()
            busy = [r for (_, r), held in self._busy.items() if held >= self._per_destination * BACKLOG]
            # A tenant is left out once this claim could take it past its share (the claim may take ``free`` of it).
            full = [t for t, held in self._tenants.items() if held + free > TENANT_BACKLOG]
            notices = await self._store.outbox_claim(
                self._owner,
                now,
                lease_ms,
                free,
                list(self._channels),
                busy[:MAX_BUSY_LISTED],
                busy_tenants=full[:MAX_BUSY_LISTED],
            )
            deferred = [n.notice_id for n in notices if not self._dispatch(n, now + lease_ms)]
            if deferred:
                await self._store.outbox_release(deferred, self._owner, now + BUSY_DEFER_MS)
            if notices and len(deferred) < len(notices):
                return  # more may be due: claim again at once
        await self._maybe_prune()
        wait = IDLE_POLL_S
        if due is not None and due > now:
            wait = min(wait, (due - now) / 1000)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), wait)

    def _dispatch(self, notice: Notice, lease_until_ms: int) -> bool:
        """Start an attempt (once a slot of its destination, and a place under each of its channel's bounds, is
        free), unless the destination or the tenant has as many notices here as it may (then False: give it back)."""
        key = (notice.channel, notice.recipient)
        held = self._busy.get(key, 0)
        if held >= self._per_destination * BACKLOG or self._tenants.get(notice.tenant, 0) >= TENANT_BACKLOG:
            return False
        self._busy[key] = held + 1
        self._tenants[notice.tenant] = self._tenants.get(notice.tenant, 0) + 1
        slots = self._slots.get(key)
        if slots is None:
            slots = self._slots[key] = asyncio.Semaphore(self._per_destination)
        bounds = self._bounds_of(notice)
        for bound, _ in bounds:
            sem, users = self._bounds[bound]
            self._bounds[bound] = (sem, users + 1)
        held_slots = [slots, *(self._bounds[bound][0] for bound, _ in bounds)]
        task = asyncio.create_task(
            self._queued(notice, held_slots, lease_until_ms), name=f"openwop-bridge-notice-{notice.notice_id}"
        )
        self._deliveries.add(task)

        def done(t: asyncio.Task[None]) -> None:
            self._deliveries.discard(t)
            left = self._busy.get(key, 1) - 1
            if left:
                self._busy[key] = left
            else:
                self._busy.pop(key, None)
                self._slots.pop(key, None)
            left = self._tenants.get(notice.tenant, 1) - 1
            if left:
                self._tenants[notice.tenant] = left
            else:
                self._tenants.pop(notice.tenant, None)
            for bound, _ in bounds:
                sem, users = self._bounds[bound]
                if users > 1:
                    self._bounds[bound] = (sem, users - 1)
                else:
                    del self._bounds[bound]
            self._wake.set()

        task.add_done_callback(done)
        return True

    def _bounds_of(self, notice: Notice) -> Sequence[tuple[Hashable, int]]:
        """The channel's wider bounds on ``notice``'s attempt (each with its semaphore made here), or none."""
        channel = self._channels.get(notice.channel)
        of = getattr(channel, "bounds", None)
        if of is None:
            return ()
        try:
            named: Sequence[tuple[Hashable, int]] = of(notice)
        except Exception:
            log.exception("notice %s: the %s channel's bounds failed", notice.notice_id, notice.channel)
            return ()
        bounds: dict[Hashable, int] = {}
        for name, size in named:
            bounds.setdefault((notice.channel, name), size)  # each channel's names apart; each bound once
        for bound, size in bounds.items():
            if bound not in self._bounds:
                self._bounds[bound] = (asyncio.Semaphore(max(1, size)), 0)
        return list(bounds.items())

    async def _queued(self, notice: Notice, slots: Sequence[asyncio.Semaphore], lease_until_ms: int) -> None:
        async with contextlib.AsyncExitStack() as held:
            for slot in slots:  # always in one order (destination, then the channel's): no two wait on each other
                await held.enter_async_context(slot)
            now = self._clock.now_ms()
            if now + self._policies(notice.channel).timeout_ms >= lease_until_ms:
                # Waited too long for its destination: its lease could run out mid-attempt. Given back unattempted.
                with contextlib.suppress(Exception):
                    await self._store.outbox_release([notice.notice_id], self._owner, now)
                return
            pause_ms = await self._attempt(notice)
            if pause_ms > 0:  # a failed attempt: its slots stay taken a moment (:data:`FAILED_PAUSE_MS`)
                await asyncio.sleep(pause_ms / 1000)

    async def _attempt(self, notice: Notice) -> int:
        """Make the attempt and record its outcome; how long its slots stay taken after it (ms)."""
        policy = self._policies(notice.channel)
        readdressed = await self._readdressed(notice)
        with self._span(notice) as span:
            if readdressed is None:  # who it goes to is unknown for now: tried again later, never sent amiss
                outcome = DeliveryOutcome.retry("readdress_failed")
            else:
                notice = readdressed
                outcome = await self._deliver(notice, policy)
            now = self._clock.now_ms()
            if outcome.kind == "deferred":  # the channel did not attempt it: given back, its attempt uncounted
                with contextlib.suppress(Exception):
                    await self._store.outbox_release([notice.notice_id], self._owner, now + (outcome.after_ms or 0))
                return 0
            status, next_ms = "delivered", now
            if outcome.kind == "dead" or (outcome.kind == "retry" and notice.attempt >= policy.max_attempts):
                status = "dead"
            elif outcome.kind == "retry":
                status = "queued"
                next_ms = now + backoff_ms(policy, notice.attempt, outcome.after_ms, self._rand)
            if span is not None:
                ended = Settled(notice, "retry" if status == "queued" else status, outcome.reason)
                span.set_attribute("openwop.notification.outcome", ended.outcome)
                if outcome.reason:
                    span.set_attribute("openwop.notification.reason", outcome.reason)
        try:
            kept = await self._store.outbox_settle(
                notice.notice_id, self._owner, notice.attempt, status, next_ms, outcome.reason or None, now
            )
        except Exception:
            # The lease runs out and the notice is attempted again: at least once, never lost.
            log.exception("could not record the outcome of notice %s", notice.notice_id)
            return 0
        self._settled += int(kept)
        if kept and self._on_settled is not None:
            try:
                await self._on_settled(Settled(notice, "retry" if status == "queued" else status, outcome.reason))
            except Exception:
                log.exception("reporting the outcome of notice %s failed", notice.notice_id)
        return min(self._failed_pause_ms, next_ms - now) if status == "queued" else 0

    async def _readdressed(self, notice: Notice) -> Notice | None:
        """``notice`` as :attr:`readdress` addresses it (None when that failed); a notice refused when it was
        written is never sent, so it stays as it is."""
        if self.readdress is None or notice.payload.get(REFUSED) is not None:
            return notice
        try:
            return await self.readdress(notice)
        except Exception as exc:
            log.warning("notice %s: could not find whom it goes to (%s)", notice.notice_id, type(exc).__name__)
            return None

    async def _deliver(self, notice: Notice, policy: RetryPolicy) -> DeliveryOutcome:
        if notice.payload.get(REFUSED) == QUEUE_FULL:
            return DeliveryOutcome.dead(QUEUE_FULL)  # refused by a cap when written: reported, never sent
        channel = self._channels.get(notice.channel)
        if channel is None:
            return DeliveryOutcome.retry("no_channel")
        try:
            return await asyncio.wait_for(channel.deliver(notice), policy.timeout_ms / 1000)
        except TimeoutError:
            return DeliveryOutcome.retry("timeout")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("notice %s: %s channel raised %s", notice.notice_id, notice.channel, type(exc).__name__)
            return DeliveryOutcome.retry("error")

    async def _maybe_prune(self) -> None:
        """Delete settled notices past their retention, now and then, once this worker settled some."""
        now = self._clock.monotonic()
        if not self._settled or now - self._pruned_at < PRUNE_EVERY_S:
            return
        self._pruned_at, self._settled = now, 0
        for _ in range(PRUNE_BATCHES):
            if await self._store.outbox_prune(self._clock.now_ms()) == 0:
                break
