"""LangGraph threads, kept durably beside the OpenWOP runs started on them.

A thread is a thread of the host's shared face (:class:`bridge.host.Threads`),
stored under ``langgraph.thread``: only ever returned to the tenant it records
(another tenant's thread does not exist for the caller), and written with the
run that starts on it, in one transaction. It names the OpenWOP runs started on
it (the last is current), its metadata, and values set with ``update_state``
before a run took them as inputs.

Each tenant also has an index of its newest threads (``langgraph.threads``),
which ``POST /threads/search`` reads. The index keeps the newest
:data:`INDEX_LIMIT` thread ids; an older thread is still reachable by its id.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from bridge import Engine
from bridge.host import ThreadRecord, Threads

NAMESPACE = "langgraph.thread"
INDEX = "langgraph.threads"
INDEX_LIMIT = 2000
RUNS_LIMIT = 500

_index_lock = asyncio.Lock()


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
    """The engine's LangGraph threads (:meth:`~bridge.host.Threads.start_run` starts a run on one)."""
    return Threads(engine, NAMESPACE, Thread.from_json)


async def load(engine: Engine, tenant: str, thread_id: str) -> Thread | None:
    """The thread ``thread_id`` of a tenant, if any."""
    return await stored(engine).load(tenant, thread_id)


async def save(engine: Engine, thread: Thread, *, create: bool = False) -> bool:
    """Store a thread; with ``create``, only when it does not exist yet (False if it did)."""
    thread.updated_at_ms = engine.clock.now_ms()
    saved = await stored(engine).save(thread, create=create)
    if saved and create:
        await remember(engine, thread)
    return saved


async def remember(engine: Engine, thread: Thread) -> None:
    """Name a new thread in its tenant's index of newest threads."""
    async with _index_lock:
        ids = await index(engine, thread.tenant)
        ids = [*[i for i in ids if i != thread.thread_id], thread.thread_id][-INDEX_LIMIT:]
        await engine.adapter_state(INDEX).put(thread.tenant, ids)


async def index(engine: Engine, tenant: str) -> list[str]:
    """The ids of a tenant's newest threads, oldest first."""
    raw = await engine.adapter_state(INDEX).get(tenant)
    return [str(i) for i in raw] if isinstance(raw, list) else []
