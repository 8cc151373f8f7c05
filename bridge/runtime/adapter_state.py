"""Adapter state: small JSON values a protocol surface keeps beside the runs it serves.

An adapter (the AG-UI thread bindings, its message projections) stores what
belongs to its protocol in the store's key-value space, under a namespace of its
own. It reaches that space through :meth:`openwop_bridge.runtime.engine.Engine.adapter_state`,
never through the store. A value that must exist exactly when a new run does
(the thread a run was started on) goes with the run's creation
(:meth:`AdapterState.write`, ``Engine.create_run(..., with_state=...)``).
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core.clock import Clock
from openwop_bridge.store.base import KvWrite, Store
from openwop_bridge.store.codec import dumps
from openwop_bridge.store.steps import Recorded


class AdapterState:
    """The key-value values of one namespace (``agui.thread``, …)."""

    def __init__(self, store: Store, clock: Clock, namespace: str) -> None:
        self._store = store
        self._clock = clock
        self.namespace = namespace

    async def get(self, key: str) -> Any:
        """The JSON value stored under ``key``, or None."""
        return await self._store.kv_get(self.namespace, key)

    async def scan(
        self, prefix: str, *, limit: int, after: str | None = None, descending: bool = True
    ) -> list[tuple[str, Any]]:
        """One keyset page of the ``(key, value)`` pairs whose key starts with ``prefix``, by key.

        From the greatest key (``descending``) or the least, past ``after`` (the last key of
        the previous page); at most ``limit`` pairs, and never more than the store's page
        bound (:data:`~openwop_bridge.store.base.KV_SCAN_MAX`). A short page ends the range.
        """
        return await self._store.kv_scan(self.namespace, prefix, limit=limit, after=after, descending=descending)

    async def put(self, key: str, value: Any, *, only_if_absent: bool = False) -> bool:
        """Store a JSON value; with ``only_if_absent`` it returns False (and stores nothing) when the key exists."""
        return await self._store.kv_put(self.namespace, key, value, self._clock.now_ms(), only_if_absent=only_if_absent)

    async def put_capped(
        self, key: str, value: dict[str, Any], *, field: str, cap: int, recorded: Recorded | None = None
    ) -> bool:
        """Store a new object unless the namespace holds ``cap`` objects whose ``field`` equals this one's already
        (then False, nothing stored): counted and stored in one transaction, whatever runs beside it, with the
        decision records ``recorded`` appends when it stores."""
        now = self._clock.now_ms()
        return await self._store.kv_put_capped(self.namespace, key, value, now, field=field, cap=cap, recorded=recorded)

    def write(self, key: str, value: Any, *, only_if_absent: bool = False, expected: Any = None) -> KvWrite:
        """A write of ``value`` that commits with a new run (``Engine.create_run``'s ``with_state``).

        With ``only_if_absent``, a key stored already refuses the run's creation as a whole
        (:class:`~openwop_bridge.core.errors.KeyTakenError`): neither the run nor the value is written.
        So does, with ``expected`` (not None), a key that no longer holds that value.
        """
        held = None if expected is None else dumps(expected)
        return KvWrite(self.namespace, key, dumps(value), self._clock.now_ms(), only_if_absent, held)

    async def replace(self, key: str, expected: Any, value: Any) -> bool:
        """Store ``value`` only while ``key`` still holds ``expected`` (a compare-and-set); False if it changed."""
        return await self._store.kv_replace(self.namespace, key, expected, value, self._clock.now_ms())

    async def forget_if(self, key: str, expected: Any) -> bool:
        """Delete ``key`` only while it still holds ``expected`` (a compare-and-delete); False if it changed."""
        return await self._store.kv_forget_if(self.namespace, key, expected)

    async def put_derived(self, key: str, value: Any) -> None:
        """Store a value derived from committed data (a projection that can be rebuilt from the run's events).

        It costs no commit of its own: it goes with the store's next transaction,
        and reads see it at once. A crash before then loses it, so keep here only
        what can be derived again.
        """
        await self._store.kv_put_soon(self.namespace, key, value, self._clock.now_ms())

    async def forget_older_than(self, age_ms: int) -> int:
        """Delete the values last written more than ``age_ms`` ago; returns how many."""
        return await self._store.kv_forget_before(self.namespace, self._clock.now_ms() - age_ms)
