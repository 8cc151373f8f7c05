"""The v2 representation of ``/.well-known/openwop`` (capabilities.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openwop_bridge.core.events import ENGINE_VERSION
from openwop_bridge.host.http.deps import PAGE_LIMIT
from openwop_bridge.host.v2 import snapshots, tokens
from openwop_bridge.host.v2.negotiation import PREFERRED, PROTOCOL_VERSIONS, V2
from openwop_bridge.host.v2.webhooks import DEAD_LETTER_PAGE

if TYPE_CHECKING:
    from openwop_bridge.runtime.engine import Engine


def discovery_document(engine: Engine) -> dict[str, Any]:
    """The v2 capabilities document: both majors, the interrupt family with its token algorithms."""
    return {
        "protocolVersions": PROTOCOL_VERSIONS,
        "preferredVersion": PREFERRED,
        "implementation": {
            "name": "openwop-bridge",
            "version": ENGINE_VERSION.split("/")[1],
            "vendor": "openwop-bridge",
        },
        "eventLogSchemaVersion": snapshots.ERA,
        "fixtures": [wf.id for wf in engine.workflows()],
        "runList": {
            "status": "stable",
            "since": V2,
            "witness": "witnessable-gated",
            "maxPageSize": PAGE_LIMIT["high"],
            "filters": ["workflowId", "status"],
        },
        "interrupt": {
            "status": "stable",
            "since": V2,
            "witness": "witnessable-unaided",
            "tokenAlgs": list(tokens.ALGS),
        },
        **_webhooks(engine),
    }


def _webhooks(engine: Engine) -> dict[str, Any]:
    """The ``webhooks`` family, when the engine delivers webhooks (an app over it installed them)."""
    hooks = engine.notify.channels.get("webhook")
    settings = getattr(hooks, "settings", None)
    if settings is None:
        return {}
    policy = engine.notify.policy("webhook")
    return {
        "webhooks": {
            "status": "stable",
            "since": V2,
            "witness": "witnessable-gated",
            "signatureAlgorithms": ["v1", "standard-webhooks-1"],
            "retryPolicy": {"maxAttempts": policy.max_attempts, "backoff": "exponential"},
            "deadLetter": {
                "retentionDays": max(1, engine.config.outbox_limits.dead_ttl_ms // 86_400_000),
                "maxPageSize": DEAD_LETTER_PAGE,
            },
            "secretRotation": {"overlapSeconds": settings.rotation_overlap_s},
        }
    }
