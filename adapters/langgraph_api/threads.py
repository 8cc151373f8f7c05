"""LangGraph threads, kept durably beside the OpenWOP runs started on them.

A thread is a thread of the host's shared face (:class:`openwop_bridge.host.Threads`),
stored under ``langgraph.thread``: only ever returned to the tenant it records
(another tenant's thread does not exist for the caller), and written with the
run that starts on it, in one transaction. It names the OpenWOP runs started on
it (the last is current), its metadata, and values set with ``update_state``
before a run took them as inputs.

``POST /threads/search`` reads a tenant's threads page by page from the range
of their keys (:func:`listed`): no index is kept beside them, so two instances
creating threads at once cannot drop one from the listing. Ids the host makes
are time-ordered, so newest first is descending id order. (Databases written
before kept a list of the newest thread ids under ``langgraph.threads``; it is
no longer read or written, and every thread is still under its own key.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from openwop_bridge import Engine
from openwop_bridge.host import ThreadRecord, Threads

NAMESPACE = "langgraph.thread"
RUNS_LIMIT = 500
#: Threads read from the store at a time while listing.
PAGE = 100


@dataclass
class Thread(ThreadRecord):
    """A LangGraph thread: its OpenWOP runs (the last is current), metadata and pending values."""

    thread_id: str
    tenant: str
    created_at_ms: int
    updated_at_ms: int
    metadata: dict[str, Any] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The stored form."""
        return {
            "threadId": self.thread_id,
            "tenant": self.tenant,
            "createdAt": self.created_at_ms,
            "updatedAt": self.updated_at_ms,
            "metadata": self.metadata,
            "runs": self.runs[-RUNS_LIMIT:],
            "values": self.values,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Thread:
        """A thread from its stored form."""
        return cls(
            thread_id=raw["threadId"],
            tenant=raw["tenant"],
            created_at_ms=int(raw["createdAt"]),
            updated_at_ms=int(raw["updatedAt"]),
            metadata=dict(raw.get("metadata") or {}),
            runs=list(raw.get("runs") or []),
            values=dict(raw.get("values") or {}),
        )


def stored(engine: Engine) -> Threads[Thread]:
    """The engine's LangGraph threads (:meth:`~openwop_bridge.host.Threads.start_run` starts a run on one)."""
    return Threads(engine, NAMESPACE, Thread.from_json)


async def load(engine: Engine, tenant: str, thread_id: str) -> Thread | None:
    """The thread ``thread_id`` of a tenant, if any."""
    return await stored(engine).load(tenant, thread_id)


async def save(engine: Engine, thread: Thread, *, create: bool = False) -> bool:
    """Store a thread; with ``create``, only when it does not exist yet (False if it did)."""
    thread.updated_at_ms = engine.clock.now_ms()
    return await stored(engine).save(thread, create=create)


async def listed(
    engine: Engine, tenant: str, *, descending: bool = True, ids: Iterable[str] | None = None
) -> AsyncIterator[Thread]:
    """A tenant's threads by id (newest first when ``descending``), or only those of ``ids`` that exist.

    Read a page at a time: a caller that stops early reads no further.
    """
    threads = stored(engine)
    if ids is not None:
        for thread_id in sorted(set(ids), key=lambda i: threads.key(tenant, i), reverse=descending):
            thread = await threads.load(tenant, thread_id)
            if thread is not None:
                yield thread
        return
    cursor: str | None = None
    while True:
        page, cursor = await threads.page(tenant, limit=PAGE, after=cursor, descending=descending)
        for thread in page:
            yield thread
        if cursor is None:
            return
