"""Digests: what waits on a person (found by who they are, narrowed to what they are told of), and the periods
sent."""

from __future__ import annotations

from openwop_bridge.core.notices import Notice
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.notify.config import NotifyConfig
from openwop_bridge.notify.delegated import DelegatedNotices, DigestCopy
from openwop_bridge.notify.planner import PeoplePlanner, has_voted
from openwop_bridge.notify.ports import NotifyEngine
from openwop_bridge.notify.recipients import Recipient, audience_of

__all__ = ["STATE", "Digests"]

#: Where the sent periods are kept (``person:slot`` → the notice that sends it).
STATE = "notify.digest"
#: The most requests one digest lists (the oldest first; the rest wait for the next one).
MAX_LISTED = 100
#: How many of the interrupts that may wait on a person are read at a time.
PAGE = 200


class Digests:
    """The :class:`~openwop_bridge.notify.email.DigestSource` of an engine."""

    def __init__(
        self,
        engine: NotifyEngine,
        config: NotifyConfig,
        planner: PeoplePlanner,
        delegated: DelegatedNotices | None = None,
    ) -> None:
        self._engine = engine
        self._config = config
        self._planner = planner
        self._delegated = delegated
        self._state = engine.adapter_state(STATE)

    async def waiting_on(self, person: str, tenant: str) -> list[InterruptRecord]:
        """The open interrupts of ``tenant`` the person is told about by e-mail and has not voted on, oldest first:
        read by who the person is (:func:`~openwop_bridge.notify.recipients.audience_of`), however many others
        wait in the
        tenant."""
        audience = audience_of(self._config, person, tenant)
        if audience is None:
            return []
        out: list[InterruptRecord] = []
        after: tuple[int, str] | None = None
        while len(out) < MAX_LISTED:
            page = await self._engine.waiting_on(tenant, audience, limit=PAGE, after=after)
            out += [r for r in page if self._planner.waits_on(person, r) and not has_voted(r, person)]
            if len(page) < PAGE:
                break
            after = (page[-1].requested_at_ms, page[-1].interrupt_id)
        return out[:MAX_LISTED]

    async def copies(self, person: str, tenant: str, address: str, records: list[InterruptRecord]) -> list[DigestCopy]:
        """The mails the digest of ``records`` becomes: the person's, and one per delegate standing in for some of
        them (:meth:`~openwop_bridge.notify.delegated.DelegatedNotices.digest_copies`)."""
        if self._delegated is None:
            return [DigestCopy(address, records)]
        return await self._delegated.digest_copies(tenant, person, address, records)

    async def claim_period(self, person: str, slot: int, notice_id: str) -> bool:
        """The first notice of a period sends it; a retry of that same notice still may."""
        key = f"{person}:{slot}"
        if await self._state.put(key, notice_id, only_if_absent=True):
            return True
        return bool(await self._state.get(key) == notice_id)

    async def schedule_next(self, notice: Notice, run_id: str) -> None:
        """Plan the next period's digest (it sends nothing if by then nothing waits)."""
        every = self._config.people[str(notice.payload["person"])].digest_every_ms
        if every is None:
            return
        # Periods are aligned to multiples of ``every``: planned from this period's start, the draft is due
        # at the next one.
        recipient = Recipient("email", str(notice.payload["address"]), str(notice.payload["person"]))
        tenant = str(notice.payload.get("tenant", notice.tenant))
        draft = self._planner.digest_draft(tenant, recipient, int(notice.payload["slot"]))
        await self._engine.notify.enqueue(notice.tenant, run_id, [draft])
