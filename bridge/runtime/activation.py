"""One activation of a node: what it produced, what it waits on, what it needs.

An :class:`Activation` collects what one execution of a node produced for the
executor to commit; an :class:`InterruptHandle` is one interrupt it registered;
:class:`Suspend` unwinds it when it must wait; :class:`~openwop_bridge.runtime.context.ContextHost` is what its
:class:`~openwop_bridge.runtime.context.NodeContext` needs from the executor that runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from openwop_bridge.core.errors import InterruptCancelledError, InterruptTimeoutError
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord


class Suspend(BaseException):
    """Unwinds a node that waits on interrupts (or on a child run)."""

    def __init__(self, waits: Sequence[str]) -> None:
        super().__init__("node suspended")
        self.waits = list(waits)


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
