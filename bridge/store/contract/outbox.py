"""The outbox in a store (see :mod:`openwop_bridge.store.plan_outbox`): notices written with what they announce,
claimed, settled, redriven.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from openwop_bridge.core.notices import DeadLetter, InterruptNotices, Notice, NoticeDraft, NoticePlanning


class OutboxStore(Protocol):
    """The durable outbox of notices, and the planners asked for them in every transaction."""

    #: Who is asked, in every transaction that commits run events or opens interrupts, for the notices it owes,
    #: and the caps on queued notices, checked as they are written (given to the store's constructor).
    notice_planning: NoticePlanning
    #: How many notices the planners have written through this store (a cheap counter; may count a few of
    #: transactions that failed afterwards).
    notices_written: int
    #: The channels of those notices, each with its count (None until the first is written).
    notices_written_by_channel: Counter[str] | None

    async def outbox_add(self, tenant: str, run_id: str, drafts: Sequence[NoticeDraft], now_ms: int) -> list[str]:
        """Write notices of a run now, in a transaction of their own (reminders, escalations); their ids.

        A draft's ``not_before_ms`` in the future makes it a durable delayed notice.
        """

    async def outbox_claim(
        self,
        owner: str,
        now_ms: int,
        lease_ms: int,
        limit: int,
        channels: Sequence[str] = ("webhook",),
        busy: Sequence[str] = (),
        *,
        busy_tenants: Sequence[str] = (),
    ) -> list[Notice]:
        """Lease up to ``limit`` due notices of ``channels`` to ``owner`` for ``lease_ms`` (each attempt numbered),
        oldest first, none addressed to the recipients ``busy`` nor of the tenants ``busy_tenants``.

        Several instances may claim at once: each notice goes to one of them; a lease that runs out
        makes the notice due again for every instance.
        """

    async def outbox_settle(
        self,
        notice_id: str,
        owner: str,
        attempt: int,
        status: str,
        next_attempt_ms: int,
        error: str | None,
        now_ms: int,
    ) -> bool:
        """Record attempt ``attempt``'s outcome (``delivered``, ``dead``, or ``queued`` for ``next_attempt_ms``);
        False when ``owner`` no longer holds that attempt."""

    async def outbox_release(self, notice_ids: Sequence[str], owner: str, next_attempt_ms: int) -> int:
        """Give back claimed notices not attempted (their attempt uncounted), due again at ``next_attempt_ms``."""

    async def outbox_next_due(self, channels: Sequence[str] | None = None) -> int | None:
        """When the earliest queued notice is due (or its lease runs out); of ``channels`` only, if named."""

    async def outbox_of_interrupts(self, interrupt_ids: Sequence[str], per_interrupt: int = 100) -> InterruptNotices:
        """The people-channel notices of the interrupts named (at most ``per_interrupt`` times as many as there
        are interrupts, oldest first), and which of them are undeliverable (every first notice died)."""

    async def outbox_queued(self) -> int:
        """How many notices are queued (waiting or being attempted), every tenant."""

    async def outbox_prune(self, now_ms: int) -> int:
        """Delete delivered notices and dead letters past their retention (a batch); returns how many."""

    async def outbox_redrive(
        self,
        channel: str,
        recipient: str,
        tenant: str,
        notice_ids: Sequence[str] | None,
        now_ms: int,
        *,
        cap: int,
        limit: int = 100,
    ) -> list[str]:
        """Queue a destination's dead letters within ``tenant`` again, due now, with their ids and payloads and
        their attempts counted afresh: those named (or, with None, its oldest ``limit``) that are still kept and
        kept their payload, as many as its queue (``cap``) and the tenant's have room for; the ids queued."""

    async def outbox_dead_letters(
        self, channel: str, recipient: str, tenant: str, *, limit: int, after: str | None = None
    ) -> list[DeadLetter]:
        """One page of a destination's dead letters within ``tenant``, newest first, older than the id ``after``;
        each with the ``eventId`` and ``eventType`` its payload names (nothing else of it)."""

    async def outbox_states(self, notice_ids: Sequence[str]) -> dict[str, tuple[str, int, str | None]]:
        """``notice_id → (status, attempts made, last error)`` for the notices named."""
