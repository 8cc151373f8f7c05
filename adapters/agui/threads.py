"""AG-UI threads, bound durably to the OpenWOP runs they started.

A binding lives in the adapter's key-value state (``agui.thread``), keyed by the
JSON array ``[tenant, threadId]`` (no separator a name could contain), and a
binding is only ever returned to the tenant it records, so two tenants never
share a thread. It names the thread's
current run and remembers which user messages were already taken (as
conversation turns, or to start a run), so a reconnect that resends them has
no second effect.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from bridge import Engine

NAMESPACE = "agui.thread"
_MAX_REMEMBERED = 200


@dataclass
class ThreadBinding:
    """A thread's runs (the last is current) and the user messages it has already taken.

    ``consumed_messages`` were answers to conversation turns; ``started_with``
    holds the last user message of each request that started a run, so a
    reconnect resending the same messages starts nothing new.
    """

    thread_id: str
    tenant: str
    workflow_id: str
    runs: list[str] = field(default_factory=list)
    consumed_messages: list[str] = field(default_factory=list)
    started_with: list[str] = field(default_factory=list)
    #: Client run ids of requests whose resume named no interrupt (older shapes); the same
    #: request again must not answer whatever interrupt is open by then.
    idless_resumes: list[str] = field(default_factory=list)

    def has_seen(self, message_id: str) -> bool:
        """Whether a user message already started a run or answered a turn on this thread."""
        return message_id in self.consumed_messages or message_id in self.started_with

    @property
    def run_id(self) -> str | None:
        """The thread's current OpenWOP run."""
        return self.runs[-1] if self.runs else None

    def as_json(self) -> dict[str, Any]:
        """The stored form."""
        return {
            "threadId": self.thread_id,
            "tenant": self.tenant,
            "workflowId": self.workflow_id,
            "runs": self.runs[-_MAX_REMEMBERED:],
            "consumedMessages": self.consumed_messages[-_MAX_REMEMBERED:],
            "startedWith": self.started_with[-_MAX_REMEMBERED:],
            "idlessResumes": self.idless_resumes[-_MAX_REMEMBERED:],
        }


def _key(tenant: str, thread_id: str) -> str:
    return json.dumps([tenant, thread_id], ensure_ascii=False, separators=(",", ":"))


def _older_key(tenant: str, thread_id: str) -> str:
    """The key bindings were stored under before keys were structured (ambiguous when a name has a ':')."""
    return f"{tenant}:{thread_id}"


async def load(engine: Engine, tenant: str, thread_id: str) -> ThreadBinding | None:
    """The binding of a thread in a tenant, if any.

    A binding stored under the older ``tenant:threadId`` key is still read, but
    only when the tenant and thread it records are the ones asked for; the next
    save stores it under the structured key.
    """
    state = engine.adapter_state(NAMESPACE)
    raw = await state.get(_key(tenant, thread_id))
    if raw is None:
        raw = await state.get(_older_key(tenant, thread_id))
    if not isinstance(raw, dict) or raw.get("tenant") != tenant or raw.get("threadId") != thread_id:
        return None
    return ThreadBinding(
        thread_id=raw["threadId"],
        tenant=raw["tenant"],
        workflow_id=raw["workflowId"],
        runs=list(raw.get("runs", [])),
        consumed_messages=list(raw.get("consumedMessages", [])),
        started_with=list(raw.get("startedWith", [])),
        idless_resumes=list(raw.get("idlessResumes", [])),
    )


async def save(engine: Engine, binding: ThreadBinding, *, create: bool = False) -> bool:
    """Store a binding; with ``create``, only when the thread has none yet (False if it had)."""
    return await engine.adapter_state(NAMESPACE).put(
        _key(binding.tenant, binding.thread_id), binding.as_json(), only_if_absent=create
    )
