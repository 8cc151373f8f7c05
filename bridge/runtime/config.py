"""The engine's settings: one dataclass, so that every service reads the same knobs."""

from __future__ import annotations

from dataclasses import dataclass, field

from openwop_bridge.core.approvals import AskLimits
from openwop_bridge.core.conversation_limits import ConversationLimits
from openwop_bridge.core.notices import OutboxLimits, RetryPolicy
from openwop_bridge.core.quota import RunRate
from openwop_bridge.core.tokens import DEFAULT_TTL_MS


@dataclass
class EngineConfig:
    """Knobs with sensible defaults."""

    conversation_enabled: bool = True
    #: Every decision appends a signed record to its tenant's hash chain (:mod:`openwop_bridge.core.decision_record`).
    #: Off only to measure what the record costs (``openwop-bridge bench``).
    decision_record: bool = True
    #: Every approval separates duties unless it says ``"separationOfDuties": false``
    #: (``serve --separation-of-duties``; see :mod:`openwop_bridge.core.separation`).
    separation_of_duties: bool = False
    default_threshold: float = 0.7
    lease_ms: int = 30_000
    token_ttl_ms: int = DEFAULT_TTL_MS
    max_node_executions: int = 10_000
    #: How long an ``Idempotency-Key`` and its response are kept (the OpenWOP minimum is 24 hours).
    idempotency_ttl_ms: int = 24 * 3600 * 1000
    #: Bounds on ``ask`` questions to an approval (see :class:`openwop_bridge.core.approvals.AskLimits`).
    ask_limits: AskLimits = field(default_factory=AskLimits)
    #: Bounds on what the answers of a conversation may store (see
    #: :class:`openwop_bridge.core.conversation_limits.ConversationLimits`).
    conversation_limits: ConversationLimits = field(default_factory=ConversationLimits)
    #: The entries of a message channel a run snapshot shows: the last ones, with a count and a link to
    #: the rest (``GET /v1/runs/{runId}/channels/{name}``).
    snapshot_messages: int = 50
    #: The settled interrupts one decision report reads at most (``GET /v1/analytics/decisions``); a window
    #: holding more is cut there and the report says ``truncated``.
    decision_rows_cap: int = 100_000
    #: How fast one key may create runs on this instance (see :mod:`openwop_bridge.core.quota`); None: no bound.
    run_rate: RunRate | None = None
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
