"""What a channel and a planner are written against.

The records (:class:`Notice`, :class:`NoticeDraft`, :class:`DeliveryOutcome`, …) are plain data of
:mod:`openwop_bridge.core.notices`, which the store writes too; :class:`Channel` is the one thing a delivery
channel (webhooks, e-mail, Slack, Teams) implements.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol

from openwop_bridge.core.notices import (
    DeadLetter,
    DeliveryOutcome,
    Notice,
    NoticeDraft,
    NoticePlanner,
    OutboxLimits,
    RetryPolicy,
)

__all__ = [
    "BoundedChannel",
    "Channel",
    "DeadLetter",
    "DeliveryOutcome",
    "Notice",
    "NoticeDraft",
    "NoticePlanner",
    "OutboxLimits",
    "RetryPolicy",
]


class Channel(Protocol):
    """Delivers notices of one channel (``name``: ``webhook``, ``email``, ``slack``, ``teams`` or any channel
    registered, :mod:`openwop_bridge.notify.channel_types`).

    :meth:`deliver` makes one attempt and says how it went; it should not raise (an exception counts
    as a retryable failure, reason ``error``). The worker bounds each attempt by the channel's
    timeout (:class:`RetryPolicy`), so a hung receiver costs one attempt, not a worker.
    Deliveries run concurrently, at most a few at once per ``(channel, recipient)``.
    """

    name: str

    async def deliver(self, notice: Notice) -> DeliveryOutcome:
        """Make attempt ``notice.attempt`` to deliver ``notice``."""
        ...


class BoundedChannel(Channel, Protocol):
    """A channel whose attempts count against bounds wider than one destination (a tenant's, an endpoint's).

    The worker starts an attempt of a notice only once it holds a place under each bound :meth:`bounds` names
    for it, so the channel is not handed attempts it would only defer: the notices wait in the worker, and
    a tenant's beyond what it may hold there stay in the store, unclaimed.
    """

    def bounds(self, notice: Notice) -> Sequence[tuple[Hashable, int]]:
        """The bounds ``notice``'s attempt counts against: ``(name, how many at once)`` each, always in one
        order for every notice (the narrowest first), a name meaning the same bound whichever notice names it."""
        ...
