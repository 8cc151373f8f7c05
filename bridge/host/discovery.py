"""``/.well-known/openwop``: what this host offers, checked against ``capabilities.schema.json``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from openwop_bridge import spec
from openwop_bridge.core import kinds
from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.events import ENGINE_VERSION
from openwop_bridge.host.v2.negotiation import PREFERRED, PROTOCOL_VERSIONS

if TYPE_CHECKING:
    from openwop_bridge.runtime.engine import Engine


def discovery_document(engine: Engine) -> dict[str, Any]:
    """The ``/.well-known/openwop`` capabilities document."""
    profiles = [
        "openwop-interrupt-quorum",
        "openwop-interrupt-auth-required",
        "openwop-interrupt-external-event",
        "openwop-interrupt-cascade-cancel",
    ]
    doc: dict[str, Any] = {
        "protocolVersion": "1.1",
        "protocolVersions": PROTOCOL_VERSIONS,  # additive (RFC 0165 §A): one fetch names the other major
        "preferredVersion": PREFERRED,
        "supportedEnvelopes": [],
        "schemaVersions": {},
        "limits": {
            "clarificationRounds": 10,
            "schemaRounds": 3,
            "envelopesPerTurn": 10,
            "maxNodeExecutions": engine.config.max_node_executions,
        },
        "implementation": {
            "name": "openwop-bridge",
            "version": ENGINE_VERSION.split("/")[1],
            "vendor": "openwop-bridge",
        },
        "eventLogSchemaVersion": 1,
        "fixtures": [wf.id for wf in engine.workflows()],
        "conversationPrimitive": engine.conversation_enabled,
        "replay": {"supported": True, "modes": ["replay"]},
        "agents": {"supported": True},
        "multiAgent": {
            "executionModel": {
                "supported": True,
                "version": 2,
                "tier": "experimental",
                "experimentalUntil": iso_ms(engine.clock.now_ms() + 180 * 86_400_000)[:10],
                "confidenceEscalationInterruptKind": kinds.CLARIFICATION.name,
            }
        },
        "authorization": {"supported": True, "failClosed": True},
        "subWorkflow": {"inputMapping": False},
        "extensions": {
            "interrupts": {
                "profiles": profiles,
                "signedCallbackTokens": True,
                "kinds": [k for k in kinds.KINDS if engine.conversation_enabled or not k.startswith("conversation")],
            }
        },
    }
    return doc


def validate_discovery(doc: Mapping[str, Any]) -> list[str]:
    """Problems with a discovery document under ``capabilities.schema.json``."""
    return [e.message for e in spec.validator("capabilities.schema.json").iter_errors(doc)]
