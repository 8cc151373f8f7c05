"""``onUndeliverable``: what happens once every first notice of an interrupt has died.

The planner writes, into each first notice of an interrupt whose routes ask for it, how many
first notices there are (``of``) and the policy. The store counts them as they die: the
transaction that dead-letters the last one also writes a notice on the bridge's own channel
(:data:`~openwop_bridge.core.notices.POLICY_CHANNEL`, see
:func:`openwop_bridge.store.plan_outbox.undeliverable_policy`),
so a crash right after it loses nothing: the outbox worker of any instance delivers that notice
to :class:`UndeliverablePolicy`, which applies the policy while the interrupt is still open:

- ``fail``: the interrupt is cancelled with reason ``undeliverable``: an approval fails closed
  (rejected, never accepted), any other kind fails its node. When the gate does not let the
  host decide it (an ``approversList``), the run itself is cancelled;
- ``escalate``: the route's ``escalateTo`` are told at once, with links of their own.

Applying it again (an attempt whose outcome was not recorded) is harmless: a closed interrupt
is left alone. ``wait`` (the default) writes nothing: the interrupt keeps waiting, shows
``undeliverable``, and its ``notification.failed`` events show why nobody was told.
"""

from __future__ import annotations

import logging

from openwop_bridge.core.auth import SYSTEM
from openwop_bridge.core.errors import BridgeError, ForbiddenError
from openwop_bridge.core.notices import POLICY_CHANNEL, DeliveryOutcome, Notice
from openwop_bridge.notify.planner import PeoplePlanner
from openwop_bridge.notify.ports import NotifyEngine

__all__ = ["REASON", "UndeliverablePolicy"]

log = logging.getLogger("openwop_bridge.host.undeliverable")  # its name as before the move: log filters name it

#: The reason an interrupt (or its run) is cancelled with under ``fail``.
REASON = "undeliverable"


class UndeliverablePolicy:
    """The channel of the bridge's own policy notices: applies an interrupt's ``onUndeliverable``."""

    name = POLICY_CHANNEL

    def __init__(self, engine: NotifyEngine, planner: PeoplePlanner) -> None:
        self._engine = engine
        self._planner = planner

    async def deliver(self, notice: Notice) -> DeliveryOutcome:
        """Apply the policy ``notice`` carries to its interrupt (idempotent); a store failure is retried."""
        if notice.interrupt_id is None:
            return DeliveryOutcome.dead("no_interrupt")
        try:
            await self._apply(notice.interrupt_id, str(notice.payload.get("policy", "")))
        except BridgeError as exc:  # closed meanwhile: nothing left to do
            log.info("onUndeliverable for interrupt %s: %s", notice.interrupt_id, exc.message)
        return DeliveryOutcome.delivered()

    async def _apply(self, interrupt_id: str, policy: str) -> None:
        record = await self._engine.interrupt_record(interrupt_id)
        if record is None or not record.open:
            return
        if policy == "escalate":
            drafts = self._planner.escalation_now(record)
            if drafts:
                await self._engine.notify.enqueue(record.tenant, record.run_id, drafts)
            return
        if policy == "fail":
            try:
                await self._engine.cancel_interrupt(SYSTEM, interrupt_id, REASON)
            except ForbiddenError:
                # The gate names who may decide it, and the host is not among them: end the run instead.
                await self._engine.cancel_run(record.run_id, SYSTEM, REASON)
