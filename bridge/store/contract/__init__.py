"""The store contract by concern, one protocol each; :class:`openwop_bridge.store.base.Store` is their union."""

from __future__ import annotations

from openwop_bridge.store.contract.analytics import AnalyticsStore
from openwop_bridge.store.contract.events import RunLogStore
from openwop_bridge.store.contract.idempotency import IdempotencyStore
from openwop_bridge.store.contract.interrupts import InterruptStore
from openwop_bridge.store.contract.keys import SigningKeyStore
from openwop_bridge.store.contract.kv import KeyValueStore
from openwop_bridge.store.contract.lifecycle import StoreLifecycle
from openwop_bridge.store.contract.outbox import OutboxStore
from openwop_bridge.store.contract.records import DecisionRecordStore
from openwop_bridge.store.contract.runs import RunStore

__all__ = [
    "AnalyticsStore",
    "DecisionRecordStore",
    "IdempotencyStore",
    "InterruptStore",
    "KeyValueStore",
    "OutboxStore",
    "RunLogStore",
    "RunStore",
    "SigningKeyStore",
    "StoreLifecycle",
]
