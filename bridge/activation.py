"""One activation of a node: what it produced, what it waits on, what it needs.

An :class:`Activation` collects what one execution of a node produced for the
executor to commit; an :class:`InterruptHandle` is one interrupt it registered;
:class:`Suspend` unwinds it when it must wait; :class:`ContextHost` is what its
:class:`~bridge.context.NodeContext` needs from the executor that runs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from bridge.errors import InterruptCancelledError, InterruptTimeoutError
from bridge.events import EventDraft
from bridge.store.base import InterruptRecord
from bridge.workflow import WorkflowDefinition

if TYPE_CHECKING:
    from bridge.context import NodeContext


class Suspend(BaseException):
    """Unwinds a node that waits on interrupts (or on a child run)."""

    def __init__(self, waits: Sequence[str]) -> None:
        super().__init__("node suspended")
        self.waits = list(waits)


class ContextHost(Protocol):
    """What a context needs from the executor that created it."""

    default_threshold: float
    conversation_enabled: bool
    workflow: WorkflowDefinition

    def clock_now_ms(self) -> int:
        """The current time in epoch milliseconds."""

    def new_id(self, prefix: str) -> str:
        """A new unique id."""

    async def find_key(self, key: str) -> InterruptRecord | None:
        """An interrupt of this run with ``key`` raised by another node, if any."""

    async def source_interrupt(self, exec_node: str, visit: int, ordinal: int) -> InterruptRecord | None:
        """In a replay fork: the source run's interrupt at the same place."""

    async def source_history(self, exec_node: str, visit: int) -> list[dict[str, Any]]:
        """In a replay fork: the source run's command events of this activation."""

    async def flush(self, ctx: NodeContext) -> None:
        """Commit what the node has emitted so far (before a long wait)."""

    async def start_child(self, ctx: NodeContext, workflow_id: str, inputs: Mapping[str, Any], ordinal: int) -> str:
        """Create (once) a child run; returns its id."""

    async def child_status(self, run_id: str) -> tuple[str, dict[str, Any]]:
        """A child run's status and snapshot summary."""


@dataclass(slots=True)
class InterruptHandle:
    """A registered interrupt and, once settled, its outcome."""

    record: InterruptRecord

    @property
    def interrupt_id(self) -> str:
        """The interruptId."""
        return self.record.interrupt_id

    @property
    def settled(self) -> bool:
        """True once resolved, timed out or cancelled."""
        return not self.record.open

    def result(self) -> Any:
        """The resume value; raises the timeout/cancel error, or :class:`Suspend` if pending."""
        rec = self.record
        if rec.status == "resolved":
            return (rec.resolution or {}).get("resumeValue")
        if rec.status == "expired":
            raise InterruptTimeoutError(f"interrupt {rec.key!r} timed out", details={"interruptId": rec.interrupt_id})
        if rec.status in ("cancelled", "gone"):
            reason = (rec.resolution or {}).get("reason")
            raise InterruptCancelledError(f"interrupt {rec.key!r} was cancelled", reason=reason)
        raise Suspend([rec.interrupt_id])


@dataclass
class Activation:
    """One execution of a node and what it produced for the executor to commit."""

    drafts: list[EventDraft] = field(default_factory=list)
    new_interrupts: list[InterruptRecord] = field(default_factory=list)
    consumed: list[str] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)
    emitted: int = 0
    once: int = 0
    ordinals: int = 0
    children: int = 0
