"""Run events: drafts built by the engine, envelopes assigned a sequence by the store.

A draft is everything about an event except its ``sequence``, which only the
store can assign atomically. The envelope is the OpenWOP ``RunEventDoc``; an
``interrupt.requested`` also names its ``interruptId`` there (v1's envelope is open,
while its payload, the ``InterruptPayload``, is closed).
Node-issued events carry their place in the node's command history
(``activation``), used to suppress them when the node is replayed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openwop_bridge.core.clock import iso_ms

ENGINE_VERSION = "openwop-bridge/0.1.0"
SCHEMA_VERSION = 1

TERMINAL_EVENT_TYPES = frozenset({"run.completed", "run.failed", "run.cancelled"})


@dataclass(slots=True)
class EventDraft:
    """An event waiting for its sequence number."""

    event_id: str
    type: str
    payload: Any
    timestamp_ms: int
    node_id: str | None = None
    causation_id: str | None = None
    # Where the event sits in a node's command history: (workflow node id, visit, index).
    activation: tuple[str, int, int] | None = None
    # The interrupt an ``interrupt.requested`` opens: the id every later event and surface names it by.
    interrupt_id: str | None = None

    def envelope(self, run_id: str, sequence: int) -> dict[str, Any]:
        """The ``RunEventDoc`` for this draft at ``sequence``."""
        doc: dict[str, Any] = {
            "eventId": self.event_id,
            "runId": run_id,
            "type": self.type,
            "payload": self.payload,
            "timestamp": iso_ms(self.timestamp_ms),
            "sequence": sequence,
            "schemaVersion": SCHEMA_VERSION,
            "engineVersion": ENGINE_VERSION,
        }
        if self.node_id is not None:
            doc["nodeId"] = self.node_id
        if self.causation_id is not None:
            doc["causationId"] = self.causation_id
        if self.interrupt_id is not None:
            doc["interruptId"] = self.interrupt_id
        return doc


def is_terminal(doc: dict[str, Any]) -> bool:
    """True for the event that closes a run's stream."""
    return doc.get("type") in TERMINAL_EVENT_TYPES
