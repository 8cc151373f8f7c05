"""The link a notice carries, minted when the notice is delivered, for the person it goes to.

A person's link is a ``resolve`` link whose subject is their principal id: their answer
counts as their vote and nobody else's, so a quorum of three gets three different links.
A shared address (a team mailbox, a Slack or Teams channel) holds no identity and gets an
``inspect`` link, which shows the request and answers nothing. A link lives as long as
the interrupt may wait (never past its deadline; at most :data:`MAX_LINK_TTL_MS` without
one), shortened by the channel's ``linkTtlMs``. It is refused once the interrupt closes,
whoever answered and wherever.

A delegate's copy of a person's notice (:mod:`openwop_bridge.notify.delegated`: the payload's ``delegate``)
carries a link made out to the delegate; on a gate that counts votes it answers in the person's place
(the token's ``for``), through the delegation, which must still stand when the link is used.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core import kinds
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.notify.config import MAX_LINK_TTL_MS
from openwop_bridge.notify.content import NoticeContent
from openwop_bridge.notify.notice import Notice
from openwop_bridge.notify.planner import still_owed
from openwop_bridge.notify.ports import InterruptSource

__all__ = ["InterruptSource", "NoticeLinks"]


class NoticeLinks:
    """Reads a notice's interrupt and mints the link the notice carries (see the module docstring)."""

    def __init__(self, source: InterruptSource, base_url: str) -> None:
        self._source = source
        self.base_url = base_url.rstrip("/")

    async def interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        """An interrupt's current row, open or not."""
        return await self._source.interrupt_record(interrupt_id)

    async def open_interrupt(self, notice: Notice) -> InterruptRecord | None:
        """The notice's interrupt while the notice is still owed (it is open; a reminder's person has not voted)."""
        if notice.interrupt_id is None:
            return None
        record = await self._source.interrupt_record(notice.interrupt_id)
        return record if record is not None and still_owed(record, notice.payload) else None

    def content(self, record: InterruptRecord, payload: dict[str, Any], link_ttl_ms: int | None) -> NoticeContent:
        """What the notice says, with a fresh link for its person (or an ``inspect`` link for a shared address)."""
        person = payload.get("person")
        delegate = payload.get("delegate") if person else None
        intent = "resolve" if person else "inspect"
        votes = kinds.kind_of(record.kind).votes
        token, _ = self._source.mint_token(
            record,
            intent,
            subject=str(delegate or person) if person else None,
            ttl_ms=link_ttl_ms or MAX_LINK_TTL_MS,
            on_behalf=str(person) if delegate and votes else None,
        )
        return NoticeContent.of(
            record,
            link=f"{self.base_url}/v1/interrupts/{token}",
            link_answers=intent == "resolve",
            purpose=str(payload.get("purpose", "notice")),
            on_behalf_of=str(person) if delegate else None,
        )
