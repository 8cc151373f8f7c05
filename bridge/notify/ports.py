"""What the notifications layer needs of the engine above it, as protocols the engine meets.

The engine (:class:`openwop_bridge.Engine`) is built above this layer and owns ``engine.notify``; the
channels, the undeliverable policy, digests and Slack clicks are handed the engine as these narrow views, so
no module here imports the runtime (``tests/process/test_architecture.py`` checks it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.clock import Clock
from openwop_bridge.core.delegations import Delegation
from openwop_bridge.core.notices import Audience
from openwop_bridge.core.records import InterruptRecord

if TYPE_CHECKING:
    from openwop_bridge.notify.service import NotifyService

__all__ = ["InterruptSource", "KeyValue", "NotifyEngine"]


class KeyValue(Protocol):
    """One namespace of the engine's key-value state (``engine.adapter_state(namespace)``)."""

    async def get(self, key: str) -> Any:
        """A remembered value, or None."""
        ...

    async def put(self, key: str, value: Any, *, only_if_absent: bool = False) -> bool:
        """Remember a value (only when none is yet, with ``only_if_absent``); whether it was written."""
        ...

    async def scan(
        self, prefix: str, *, limit: int, after: str | None = None, descending: bool = True
    ) -> list[tuple[str, Any]]:
        """The values under a key prefix."""
        ...


class InterruptSource(Protocol):
    """What minting a notice's link needs of the engine."""

    async def interrupt_record(self, interrupt_id: str) -> InterruptRecord | None:
        """The interrupt's current row."""
        ...

    def mint_token(
        self,
        record: InterruptRecord,
        intent: str = "resolve",
        *,
        subject: str | None = None,
        ttl_ms: int | None = None,
        on_behalf: str | None = None,
    ) -> tuple[str, int]:
        """A signed link for ``record`` and its expiry."""
        ...


class NotifyEngine(InterruptSource, Protocol):
    """The engine as the notify file's channels, its undeliverable policy, digests and Slack clicks use it."""

    notify: NotifyService
    clock: Clock

    def adapter_state(self, namespace: str) -> KeyValue:
        """One namespace of key-value state."""
        ...

    async def waiting_on(
        self, tenant: str, audience: Audience, *, limit: int, after: tuple[int, str] | None = None
    ) -> list[InterruptRecord]:
        """The open interrupts of ``tenant`` that may wait on a person, oldest first."""
        ...

    async def standing_delegations(self, tenant: str, delegator: str) -> list[Delegation]:
        """The delegations of ``delegator`` standing now, newest first (read again at most every few seconds)."""
        ...

    async def resolve(
        self,
        principal: Principal,
        value: Any,
        *,
        run_id: str | None = None,
        node_id: str | None = None,
        interrupt_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Answer an interrupt as ``principal``."""
        ...

    async def cancel_interrupt(
        self, principal: Principal, interrupt_id: str, reason: str = "cancelled"
    ) -> dict[str, Any]:
        """Cancel one interrupt."""
        ...

    async def cancel_run(
        self, run_id: str, principal: Principal, reason: str | None = None, *, parent_run_id: str | None = None
    ) -> dict[str, Any]:
        """Cancel a run."""
        ...
