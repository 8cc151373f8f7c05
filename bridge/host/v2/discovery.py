"""The v2 representation of ``/.well-known/openwop`` (capabilities.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from openwop_bridge.core.auth import LINK_ISSUER, SLACK_ISSUER
from openwop_bridge.core.events import ENGINE_VERSION
from openwop_bridge.host.http.deps import PAGE_LIMIT
from openwop_bridge.host.v2 import snapshots, tokens
from openwop_bridge.host.v2.negotiation import PREFERRED, PROTOCOL_VERSIONS, V2
from openwop_bridge.host.v2.subjects import API_KEY_ISSUER
from openwop_bridge.host.v2.webhooks import DEAD_LETTER_PAGE

if TYPE_CHECKING:
    from openwop_bridge.runtime.engine import Engine


#: The API-key lane (identity.md §2.2): the secrets the host holds, each refused on the next request once
#: removed: its API keys and its link-signing secret (a decision by signed link), each realm a trust root of
#: its own; with Slack configured, the Slack app's signing secret too (:func:`api_key_lane`).
API_KEY_LANE: dict[str, Any] = {
    "lane": "api-key",
    "issuers": [API_KEY_ISSUER, LINK_ISSUER],
    "revocation": "next-request",
    "minimumAssurance": "bearer",
}


def api_key_lane(engine: Engine) -> dict[str, Any]:
    """:data:`API_KEY_LANE`, with the Slack realm when the engine sends Slack notices (a click decides there)."""
    if "slack" not in engine.notify.channels:
        return API_KEY_LANE
    return {**API_KEY_LANE, "issuers": [*API_KEY_LANE["issuers"], SLACK_ISSUER]}


def discovery_document(engine: Engine, *, lanes: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The v2 capabilities document: both majors, the interrupt family with its token algorithms, the
    ``auth`` lanes (API keys, and ``lanes``: those of the identity providers)."""
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
        "auth": {
            "status": "stable",
            "since": V2,
            "witness": "witnessable-gated",
            "lanes": [api_key_lane(engine), *(dict(lane) for lane in lanes)],
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
