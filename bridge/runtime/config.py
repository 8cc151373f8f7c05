"""The engine's settings: one dataclass, so that every service reads the same knobs."""

from __future__ import annotations

from dataclasses import dataclass, field

from bridge.core.approvals import AskLimits
from bridge.core.notices import OutboxLimits, RetryPolicy
from bridge.core.tokens import DEFAULT_TTL_MS


@dataclass
class EngineConfig:
    """Knobs with sensible defaults."""

    conversation_enabled: bool = True
    default_threshold: float = 0.7
    lease_ms: int = 30_000
    token_ttl_ms: int = DEFAULT_TTL_MS
    max_node_executions: int = 10_000
    #: How long an ``Idempotency-Key`` and its response are kept (the OpenWOP minimum is 24 hours).
    idempotency_ttl_ms: int = 24 * 3600 * 1000
    #: Bounds on ``ask`` questions to an approval (see :class:`bridge.core.approvals.AskLimits`).
    ask_limits: AskLimits = field(default_factory=AskLimits)
    #: Retries of e-mail, Slack and Teams notices (``--notify-retry-base-ms``, ``--notify-max-attempts``).
    notify_retry: RetryPolicy = field(default_factory=RetryPolicy)
    #: Retries of webhook deliveries (``--webhook-retry-base-ms``, ``--webhook-max-attempts``,
    #: ``--webhook-timeout-ms``).
    webhook_retry: RetryPolicy = field(default_factory=RetryPolicy)
    #: Caps on queued notices and how long settled ones are kept.
    outbox_limits: OutboxLimits = field(default_factory=OutboxLimits)
    #: Delivery attempts at once on this instance, and per destination (``(channel, recipient)``).
    notify_in_flight: int = 256
    notify_per_destination: int = 4
