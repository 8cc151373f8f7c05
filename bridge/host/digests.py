"""Digests: what waits on a person (their tenant's inbox, filtered by who is told), and the periods sent."""

from __future__ import annotations

from bridge.core.auth import Principal
from bridge.core.notices import Notice
from bridge.core.records import InterruptRecord
from bridge.notify.config import NotifyConfig
from bridge.notify.planner import PeoplePlanner
from bridge.notify.recipients import Recipient
from bridge.runtime.engine import Engine

__all__ = ["STATE", "Digests"]

#: Where the sent periods are kept (``person:slot`` → the notice that sends it).
STATE = "notify.digest"
#: The most requests one digest lists (the oldest first; the rest wait for the next one).
MAX_LISTED = 100


class Digests:
    """The :class:`~bridge.notify.email.DigestSource` of a served engine."""

    def __init__(self, engine: Engine, config: NotifyConfig, planner: PeoplePlanner) -> None:
        self._engine = engine
        self._config = config
        self._planner = planner
        self._state = engine.adapter_state(STATE)

    async def waiting_on(self, person: str, tenant: str) -> list[InterruptRecord]:
        """The open interrupts of ``tenant`` the person is told about by e-mail, oldest first."""
        reader = Principal(id=person, tenant=tenant, scopes=frozenset({"interrupts:read"}))
        page = await self._engine.inbox(reader, limit=500)
        out: list[InterruptRecord] = []
        for item in page["items"]:
            record = await self._engine.interrupt_record(str(item["interruptId"]))
            if record is not None and record.open and self._planner.waits_on(person, record):
                out.append(record)
        out.sort(key=lambda r: r.requested_at_ms)
        return out[:MAX_LISTED]

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
