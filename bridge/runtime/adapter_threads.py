"""Threads a protocol surface binds to runs: one face for every adapter that has threads.

AG-UI and the LangGraph API both speak of threads that span OpenWOP runs. A
thread's record lives in the adapter's key-value state under the adapter's own
namespace, keyed by the JSON array ``[tenant, threadId]`` (no separator a name
could contain), and is only ever returned to the tenant it records: another
tenant's thread does not exist for the caller. It names the runs started on it,
the last being current; what else it holds is the adapter's.

A run started on a thread is created with the thread's new record in one
transaction (:meth:`Threads.start_run`): a thread never names a run that does
not exist, and a run whose creation was acknowledged is always on its thread.
That write is a compare-and-set on the record as it was read (or saved), so two
requests that read the same record cannot both start a run on it and lose one.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.errors import KeyTakenError
from openwop_bridge.core.records import RunRecord
from openwop_bridge.runtime.adapter_state import AdapterState
from openwop_bridge.runtime.engine import Engine
from openwop_bridge.store.base import KV_SCAN_MAX, KvWrite
from openwop_bridge.store.codec import dumps, loads


class ThreadRecord(ABC):
    """What every adapter's thread has: its id, its tenant and its runs (the adapter's dataclass declares them)."""

    thread_id: str
    tenant: str
    runs: list[str]
    #: The stored form as last read or written here (None: not stored under its key yet).
    stored_form: dict[str, Any] | None = None

    @property
    def run_id(self) -> str | None:
        """The thread's current run."""
        return self.runs[-1] if self.runs else None

    @abstractmethod
    def as_json(self) -> dict[str, Any]:
        """The stored form: it records ``threadId`` and ``tenant`` as given."""


T = TypeVar("T", bound=ThreadRecord)


class Threads(Generic[T]):
    """The threads of one adapter, stored under ``namespace`` and read back with ``decode``."""

    def __init__(self, engine: Engine, namespace: str, decode: Callable[[dict[str, Any]], T]) -> None:
        self._engine = engine
        self._state: AdapterState = engine.adapter_state(namespace)
        self._decode = decode

    @staticmethod
    def key(tenant: str, thread_id: str) -> str:
        """The stored key of a tenant's thread."""
        return json.dumps([tenant, thread_id], ensure_ascii=False, separators=(",", ":"))

    @staticmethod
    def tenant_prefix(tenant: str) -> str:
        """What the stored key of every thread of a tenant starts with (and no other tenant's does)."""
        return json.dumps([tenant], ensure_ascii=False, separators=(",", ":"))[:-1] + ","

    async def page(
        self, tenant: str, *, limit: int, after: str | None = None, descending: bool = True
    ) -> tuple[list[T], str | None]:
        """One keyset page of a tenant's threads, by thread id, and the cursor of the next (None: no more).

        Ids the host makes (``thread_…``) are time-ordered, so ``descending`` lists the newest of
        them first. ``after`` is the cursor a previous page returned; ``limit`` is bounded by the
        store's page size. A stored value that is not this tenant's thread is passed over.
        """
        pairs = await self._state.scan(self.tenant_prefix(tenant), limit=limit, after=after, descending=descending)
        threads: list[T] = []
        for key, raw in pairs:
            thread_id = raw.get("threadId") if isinstance(raw, dict) else None
            if isinstance(thread_id, str) and raw.get("tenant") == tenant and key == self.key(tenant, thread_id):
                thread = self._decode(raw)
                thread.stored_form = raw
                threads.append(thread)
        return threads, (pairs[-1][0] if len(pairs) == min(limit, KV_SCAN_MAX) and pairs else None)

    async def load(self, tenant: str, thread_id: str, *older_keys: str) -> T | None:
        """The thread ``thread_id`` of a tenant, if any.

        ``older_keys`` are looked at in turn when the thread is not under its key; what
        they hold counts only when it records this tenant and thread.
        """
        keys = (self.key(tenant, thread_id), *older_keys)
        raw = None
        for key in keys:
            raw = await self._state.get(key)
            if raw is not None:
                break
        if not isinstance(raw, dict) or raw.get("tenant") != tenant or raw.get("threadId") != thread_id:
            return None
        thread = self._decode(raw)
        thread.stored_form = raw if key == keys[0] else None
        return thread

    async def save(self, thread: T, *, create: bool = False) -> bool:
        """Store a thread; with ``create``, only when it is not stored yet (False if it was)."""
        value = loads(dumps(thread.as_json()))  # as stored, apart from the thread's own objects
        saved = await self._state.put(self.key(thread.tenant, thread.thread_id), value, only_if_absent=create)
        if saved:
            thread.stored_form = value
        return saved

    async def start_run(
        self,
        principal: Principal,
        workflow_id: str,
        thread: T,
        *,
        create: bool = False,
        inputs: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> RunRecord | None:
        """Start a run on ``thread``, stored in the run's own transaction with the run as its current one.

        With ``create``, only while the thread is not stored yet: None, and no run, when it is.
        Otherwise only while the thread is stored as it was read or saved here; if it changed
        meanwhile, :class:`~openwop_bridge.core.errors.KeyTakenError` (409) and no run. ``thread``
        gains the run once it is created.
        """
        written: list[KvWrite] = []

        def bound(run: RunRecord) -> list[KvWrite]:
            key, before = self.key(thread.tenant, thread.thread_id), thread.stored_form
            thread.runs.append(run.run_id)
            try:  # encoded at once, with the run
                value = thread.as_json()
                written.append(self._state.write(key, value, only_if_absent=create or before is None, expected=before))
            finally:
                thread.runs.pop()
            return written

        try:
            run = await self._engine.create_run(
                principal, workflow_id, inputs=inputs, metadata=metadata, with_state=bound
            )
        except KeyTakenError:
            if create:
                return None
            raise
        thread.runs.append(run.run_id)
        thread.stored_form = loads(written[0].text)
        return run
