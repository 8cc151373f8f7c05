"""The store contract is the union of one protocol per concern (:mod:`openwop_bridge.store.contract`)."""

from __future__ import annotations

import inspect
from collections import Counter

from openwop_bridge.store import contract
from openwop_bridge.store.base import Store


def _methods(cls: type) -> set[str]:
    return {
        k for k, v in vars(cls).items() if not k.startswith("_") and (inspect.isfunction(v) or isinstance(v, property))
    }


def _members(cls: type) -> set[str]:
    return _methods(cls) | set(getattr(cls, "__annotations__", {}))


def test_every_member_of_the_store_belongs_to_exactly_one_concern() -> None:
    parts = [getattr(contract, name) for name in contract.__all__]
    assert set(Store.__bases__) - {object} >= set(parts)
    counted = Counter(m for part in parts for m in _members(part))
    assert [m for m, n in counted.items() if n > 1] == []
    assert _members(Store) == set()  # declares nothing of its own
    assert {"commit", "answer_and_step", "mutate_interrupt", "kv_put", "outbox_claim", "audit"} <= set(counted)


def test_both_stores_implement_every_method() -> None:
    from openwop_bridge.store.postgres import PostgresStore
    from openwop_bridge.store.sqlite import SqliteStore

    for part in (getattr(contract, name) for name in contract.__all__):
        for method in _methods(part):
            for store in (SqliteStore, PostgresStore):
                assert callable(getattr(store, method, None)) or isinstance(getattr(store, method, None), property), (
                    store.__name__,
                    method,
                )
