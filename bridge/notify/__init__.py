"""Notices to the world outside: the outbox's worker, channels and planners (engine side; no HTTP routes).

:mod:`openwop_bridge.notify.notice` holds the types a channel or a planner is written against,
:mod:`openwop_bridge.notify.service` the engine's ``engine.notify`` (register planners and channels, enqueue
notices later), :mod:`openwop_bridge.notify.worker` the worker that delivers them.
"""

from openwop_bridge.notify.notice import (
    Channel,
    DeadLetter,
    DeliveryOutcome,
    Notice,
    NoticeDraft,
    NoticePlanner,
    OutboxLimits,
    RetryPolicy,
)

__all__ = [
    "Channel",
    "DeadLetter",
    "DeliveryOutcome",
    "Notice",
    "NoticeDraft",
    "NoticePlanner",
    "OutboxLimits",
    "RetryPolicy",
]
