"""AG-UI threads, bound durably to the OpenWOP runs they started.

A binding is a thread of the host's shared face (:class:`openwop_bridge.host.Threads`),
stored under ``agui.thread``: only ever returned to the tenant it records, so two
tenants never share a thread, and written with the run that starts on it, in one
transaction. It names the thread's current run and remembers which user
messages were already taken (as conversation turns, or to start a run), so a
reconnect that resends them has no second effect.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from openwop_bridge import Engine
from openwop_bridge.host import ThreadRecord, Threads

NAMESPACE = "agui.thread"
_MAX_REMEMBERED = 200


@dataclass
class ThreadBinding(ThreadRecord):
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

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ThreadBinding:
        """A binding from its stored form."""
        return cls(
            thread_id=raw["threadId"],
            tenant=raw["tenant"],
            workflow_id=raw["workflowId"],
            runs=list(raw.get("runs", [])),
            consumed_messages=list(raw.get("consumedMessages", [])),
            started_with=list(raw.get("startedWith", [])),
            idless_resumes=list(raw.get("idlessResumes", [])),
        )


def bindings(engine: Engine) -> Threads[ThreadBinding]:
    """The engine's AG-UI thread bindings (:meth:`~openwop_bridge.host.Threads.start_run` starts a run on one)."""
    return Threads(engine, NAMESPACE, ThreadBinding.from_json)


def _older_key(tenant: str, thread_id: str) -> str:
    """The key bindings were stored under before keys were structured (ambiguous when a name has a ':')."""
    return f"{tenant}:{thread_id}"


async def load(engine: Engine, tenant: str, thread_id: str) -> ThreadBinding | None:
    """The binding of a thread in a tenant, if any.

    A binding stored under the older ``tenant:threadId`` key is still read, but
    only when the tenant and thread it records are the ones asked for; the next
    save stores it under the structured key.
    """
    return await bindings(engine).load(tenant, thread_id, _older_key(tenant, thread_id))


async def save(engine: Engine, binding: ThreadBinding) -> None:
    """Store a binding."""
    await bindings(engine).save(binding)
