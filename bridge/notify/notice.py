"""What a channel and a planner are written against.

The records (:class:`Notice`, :class:`NoticeDraft`, :class:`DeliveryOutcome`, …) are plain data of
:mod:`bridge.core.notices`, which the store writes too; :class:`Channel` is the one thing a delivery
channel (webhooks, e-mail, Slack, Teams) implements.
"""

from __future__ import annotations

from typing import Protocol

from bridge.core.notices import (
    CHANNELS,
    DeadLetter,
    DeliveryOutcome,
    Notice,
    NoticeDraft,
    NoticePlanner,
    OutboxLimits,
    RetryPolicy,
)

__all__ = [
    "CHANNELS",
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
    """Delivers notices of one channel (``name``: ``webhook``, ``email``, ``slack`` or ``teams``).

    :meth:`deliver` makes one attempt and says how it went; it should not raise (an exception counts
    as a retryable failure, reason ``error``). The worker bounds each attempt by the channel's
    timeout (:class:`RetryPolicy`), so a hung receiver costs one attempt, not a worker.
    Deliveries run concurrently, at most a few at once per ``(channel, recipient)``.
    """

    name: str

    async def deliver(self, notice: Notice) -> DeliveryOutcome:
        """Make attempt ``notice.attempt`` to deliver ``notice``."""
        ...
