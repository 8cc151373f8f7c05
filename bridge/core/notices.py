"""Notices: what the outbox holds, what a channel's delivery of one returns, and who plans them.

A notice is a message owed to someone outside the bridge (a webhook subscription, a person's
mailbox, a Slack channel, a Teams channel, or any channel registered:
:mod:`openwop_bridge.notify.channel_types`) about a run. It is planned by a pure
:class:`NoticePlanner` inside the very transaction that commits what it announces (an interrupt
opened, a run event), so it is durable exactly when that is. The outbox worker
(:mod:`openwop_bridge.notify.worker`) delivers it later, off the request path.

Nothing here does I/O: the records are plain data, the planner a pure function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from openwop_bridge.core.records import InterruptRecord, RunRecord

#: The bridge's own channel: a notice to itself to apply an interrupt's ``onUndeliverable`` policy, written in
#: the transaction that dead-letters the interrupt's last notice (so no crash can lose it), never sent anywhere.
POLICY_CHANNEL = "undeliverable"

#: Where an interrupt whose every first notice died is marked (adapter state: key the interrupt id, value
#: ``{"policy", "at"}``), in the transaction of its last dead letter; the interrupt's views read it.
UNDELIVERABLE_NS = "notify.undelivered"

#: A notice's life in the outbox: waiting (or being delivered), delivered, or given up on (dead letter).
NoticeStatus = Literal["queued", "delivered", "dead"]

#: The most characters of a notice's last error kept (a reason code and a status, never content).
ERROR_MAX = 200


@dataclass(frozen=True, slots=True)
class NoticeDraft:
    """A notice a planner wants written; the store gives it its id when it writes it.

    ``recipient`` names the destination without being it: a person id, ``email:<address>``,
    ``slack:<channel or user id>``, ``teams:<name>`` or a webhook subscription id. ``payload`` is
    the channel's document, built now (a webhook's delivery body, a mail's fields), so a retry
    sends what the first attempt sent. ``not_before_ms`` delays the first attempt (a reminder);
    None means at once. ``interrupt_id`` ties the notice to the interrupt it announces, if any.
    """

    channel: str
    recipient: str
    payload: dict[str, Any]
    interrupt_id: str | None = None
    not_before_ms: int | None = None
    #: Counted against this cap of queued notices for the same ``(channel, recipient)``; None: no cap of its own.
    recipient_cap: int | None = None


@dataclass(frozen=True, slots=True)
class Notice:
    """One notice of the outbox, as the worker hands it to its channel.

    ``notice_id`` is a ULID (``ntc_…``) fixed when the notice is written and kept across every
    retry: it is the webhook delivery's ``webhook-id`` and the seed of a mail's ``Message-ID``,
    so a receiver can drop a duplicate. ``attempt`` counts from 1 (the attempt being made).
    """

    notice_id: str
    channel: str
    tenant: str
    run_id: str
    interrupt_id: str | None
    recipient: str
    payload: dict[str, Any]
    attempt: int
    not_before_ms: int
    created_ms: int = 0


@dataclass(frozen=True, slots=True)
class DeliveryOutcome:
    """What one delivery attempt came to.

    ``delivered``: done. ``retry``: try again later (after ``after_ms`` if the receiver said
    when, else per the channel's backoff); once the attempts are spent it becomes a dead letter.
    ``dead``: give up now (a permanent refusal). ``deferred``: not attempted (the channel holds as much for
    that tenant or destination as it may): due again after ``after_ms``, the attempt not counted. ``reason``
    is a short, content-free code such as
    ``http_503`` or ``timeout``: it is stored and shown, so it never carries an address or a body.
    """

    kind: Literal["delivered", "retry", "dead", "deferred"]
    reason: str = ""
    after_ms: int | None = None

    @staticmethod
    def delivered() -> DeliveryOutcome:
        """The receiver took it."""
        return DeliveryOutcome("delivered")

    @staticmethod
    def retry(reason: str, after_ms: int | None = None) -> DeliveryOutcome:
        """A failure worth another attempt."""
        return DeliveryOutcome("retry", reason[:ERROR_MAX], after_ms)

    @staticmethod
    def dead(reason: str) -> DeliveryOutcome:
        """A failure no retry will mend."""
        return DeliveryOutcome("dead", reason[:ERROR_MAX])

    @staticmethod
    def deferred(after_ms: int) -> DeliveryOutcome:
        """Not attempted now, and not counted as an attempt: due again after ``after_ms``."""
        return DeliveryOutcome("deferred", "", after_ms)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a channel's failed attempts are retried: ``base_ms · 2^(attempt-1)`` (capped at ``max_ms``) with
    full jitter, and a dead letter once ``max_attempts`` were made."""

    base_ms: int = 1000
    max_attempts: int = 8
    max_ms: int = 3_600_000
    #: How long one attempt may take before it counts as failed (``timeout``).
    timeout_ms: int = 10_000


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A notice given up on, as a dead-letter read shows it: which delivery, never what it carried."""

    notice_id: str
    channel: str
    recipient: str
    run_id: str
    interrupt_id: str | None
    attempts: int
    reason: str
    created_ms: int
    dead_ms: int
    #: The event the notice was about, when its payload names one (``eventId``, ``eventType``): labels, not content.
    event_id: str | None = None
    event_type: str | None = None


@dataclass(frozen=True, slots=True)
class NoticeState:
    """Where one notice about an interrupt stands, as its views show it (no payload, no address)."""

    interrupt_id: str
    channel: str
    recipient: str
    status: str
    attempts: int
    #: When its last attempt ended (ms), None before its first.
    attempted_ms: int | None


@dataclass(frozen=True, slots=True)
class Audience:
    """A person as the interrupts that may be waiting on them are found (the store's ``waiting_on``).

    An open interrupt may wait on ``person`` when its ``approversList`` names them, when its ``requiredRole``
    is one of their ``roles``, or when it matches one of ``matches``: the ``(workflowId, kind)`` of each route
    that tells them (None matches any). The caller narrows what is found to what truly waits on them.
    """

    person: str
    roles: frozenset[str] = frozenset()
    matches: tuple[tuple[str | None, str | None], ...] = ()


@dataclass(frozen=True, slots=True)
class InterruptNotices:
    """The notices of some interrupts, and those of them marked undeliverable (every first notice died)."""

    notices: list[NoticeState]
    undeliverable: frozenset[str]


class NoticePlanner(Protocol):
    """Plans the notices a commit owes, inside that commit's transaction.

    Called by the store with the run (its identity, spec and tenant), the event documents the
    transaction appends (with their sequences), the interrupts it opens, and the time. It must be
    pure and quick, and safe to call from the store's writer thread: it reads only what it is given
    and immutable snapshots of its own configuration. The drafts it returns are written in the
    same transaction. A planner that raises is logged and skipped: the commit goes on without its notices.
    """

    def __call__(
        self, run: RunRecord, events: Sequence[dict[str, Any]], opened: Sequence[InterruptRecord], now_ms: int
    ) -> list[NoticeDraft]: ...


@dataclass(frozen=True, slots=True)
class OutboxLimits:
    """Caps on queued notices, checked as a notice is written: a notice past one is written as a dead letter
    with reason ``queue_full`` instead (counted and visible, never dropped in silence, and the commit goes on)."""

    per_tenant: int = 10_000
    per_recipient: int = 1_000
    #: How long a delivered notice's row is kept, and a dead letter's.
    delivered_ttl_ms: int = 3_600_000
    dead_ttl_ms: int = 7 * 24 * 3_600_000


@dataclass
class NoticePlanning:
    """What a store asks, in every transaction that commits run events or opens interrupts, of whoever plans the
    notices it owes: the planners, whether any of them would plan anything now, and the caps on queued notices.

    A store is given one when it is built (an empty one of its own otherwise) and only reads it; the
    notifications layer (``engine.notify``) registers its planners and caps on the store's. So the store calls
    planners through this core protocol and knows nothing of the layer above it.
    """

    planners: tuple[NoticePlanner, ...] = ()
    limits: OutboxLimits = field(default_factory=OutboxLimits)
    #: When set and true, no planner would plan anything now (no webhook subscription, no notify file):
    #: transactions skip planning altogether.
    idle: Callable[[], bool] | None = None

    def asks(self) -> bool:
        """Whether a commit now should ask the planners (some are registered, and they are not all idle)."""
        return bool(self.planners) and not (self.idle is not None and self.idle())
