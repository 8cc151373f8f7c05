"""``onUndeliverable``: what happens once every first notice of an interrupt has died.

The planner writes, into each first notice of an interrupt whose routes ask for it, how many
first notices there are (``of``) and the policy. This watch listens to the outbox's outcomes:
each dead one is added to the interrupt's tally (the engine's adapter state, namespace
``notify.undeliverable``, compare-and-set, so instances count together); the one that
completes the tally applies the policy, while the interrupt is still open:

- ``fail``: the interrupt is cancelled with reason ``undeliverable``: an approval fails closed
  (rejected, never accepted), any other kind fails its node. When the gate does not let the
  host decide it (an ``approversList``), the run itself is cancelled;
- ``escalate``: the route's ``escalateTo`` are told at once, with links of their own.

``wait`` (the default) plans nothing here: the interrupt keeps waiting, and its
``notification.failed`` events show why nobody was told.
"""

from __future__ import annotations

import asyncio
import logging

from bridge.core.auth import SYSTEM
from bridge.core.errors import BridgeError, ForbiddenError
from bridge.core.notices import Notice
from bridge.notify.planner import PeoplePlanner
from bridge.notify.worker import Settled
from bridge.runtime.engine import Engine

__all__ = ["STATE", "UndeliverableWatch"]

log = logging.getLogger("bridge.host.undeliverable")

#: Where the dead first notices of each interrupt are tallied.
STATE = "notify.undeliverable"
REASON = "undeliverable"


class UndeliverableWatch:
    """An outbox listener (``engine.notify.on_settled``) applying ``onUndeliverable`` (see the module docstring)."""

    def __init__(self, engine: Engine, planner: PeoplePlanner) -> None:
        self._engine = engine
        self._planner = planner
        self._state = engine.adapter_state(STATE)
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, settled: Settled) -> None:
        """Take one attempt's end; a dead first notice of a watched interrupt is tallied off the worker's path."""
        notice = settled.notice
        if settled.status != "dead" or notice.interrupt_id is None or "onUndeliverable" not in notice.payload:
            return
        task = asyncio.create_task(self.dead(notice))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for the tallies under way (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def dead(self, notice: Notice) -> None:
        """Tally one dead first notice; apply the policy when it was the last one."""
        assert notice.interrupt_id is not None
        dead = await self._tally(notice.interrupt_id, notice.notice_id)
        if dead is None or dead < int(notice.payload.get("of", 0)):
            return
        try:
            await self._apply(notice.interrupt_id, str(notice.payload["onUndeliverable"]))
        except BridgeError as exc:  # closed meanwhile: nothing left to do
            log.info("onUndeliverable for interrupt %s: %s", notice.interrupt_id, exc.message)

    async def _tally(self, interrupt_id: str, notice_id: str) -> int | None:
        """Add ``notice_id`` to the interrupt's dead notices; how many there are now (None if counted already)."""
        for _ in range(50):
            current = await self._state.get(interrupt_id)
            dead = list(current) if isinstance(current, list) else []
            if notice_id in dead:
                return None
            grown = [*dead, notice_id]
            if current is None:
                if await self._state.put(interrupt_id, grown, only_if_absent=True):
                    return len(grown)
            elif await self._state.replace(interrupt_id, current, grown):
                return len(grown)
        log.warning("could not tally a dead notice of interrupt %s", interrupt_id)
        return None

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
