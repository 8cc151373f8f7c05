"""Notices to the world outside: everything that decides, plans, delivers, retries, digests, applies
``onUndeliverable`` or takes a channel's callback (no HTTP routes: the host serves those).

One layer between the store and the runtime: it imports only the core, the store and itself, and what it needs of
the engine is a protocol of :mod:`openwop_bridge.notify.ports`. :mod:`openwop_bridge.notify.notice` holds the types
a channel or a planner is written against, :mod:`openwop_bridge.notify.channel_types` the open set of channels
(each declared in its own module, registered by entry point), :mod:`openwop_bridge.notify.service` the engine's
``engine.notify`` (register planners and channels, enqueue notices later), :mod:`openwop_bridge.notify.worker` the
worker that delivers them, :mod:`openwop_bridge.notify.install` the notify file joined to an engine, and
:mod:`openwop_bridge.notify.webhook` the v2 webhook channel.
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
