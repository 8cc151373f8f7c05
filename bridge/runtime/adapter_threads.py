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
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from bridge.core.auth import Principal
from bridge.core.errors import KeyTakenError
from bridge.core.records import RunRecord
from bridge.runtime.adapter_state import AdapterState
from bridge.runtime.engine import Engine
from bridge.store.base import KvWrite


class ThreadRecord(ABC):
    """What every adapter's thread has: its id, its tenant and its runs (the adapter's dataclass declares them)."""

    thread_id: str
    tenant: str
    runs: list[str]

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

    async def load(self, tenant: str, thread_id: str, *older_keys: str) -> T | None:
        """The thread ``thread_id`` of a tenant, if any.

        ``older_keys`` are looked at in turn when the thread is not under its key; what
        they hold counts only when it records this tenant and thread.
        """
        raw = None
        for key in (self.key(tenant, thread_id), *older_keys):
            raw = await self._state.get(key)
            if raw is not None:
                break
        if not isinstance(raw, dict) or raw.get("tenant") != tenant or raw.get("threadId") != thread_id:
            return None
        return self._decode(raw)

    def _write(self, thread: T, *, create: bool) -> KvWrite:
        return self._state.write(self.key(thread.tenant, thread.thread_id), thread.as_json(), only_if_absent=create)

    async def save(self, thread: T, *, create: bool = False) -> bool:
        """Store a thread; with ``create``, only when it is not stored yet (False if it was)."""
        return await self._state.put(self.key(thread.tenant, thread.thread_id), thread.as_json(), only_if_absent=create)

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
        ``thread`` gains the run once it is created.
        """

        def bound(run: RunRecord) -> list[KvWrite]:
            thread.runs.append(run.run_id)
            try:
                return [self._write(thread, create=create)]
            finally:
                thread.runs.pop()

        try:
            run = await self._engine.create_run(
                principal, workflow_id, inputs=inputs, metadata=metadata, with_state=bound
            )
        except KeyTakenError:
            if create:
                return None
            raise
        thread.runs.append(run.run_id)
        return run
