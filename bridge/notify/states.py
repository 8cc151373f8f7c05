"""Per-person delivery state: what an interrupt's detail and its inbox row show about its notices.

One entry per ``(recipient, channel)`` told about the interrupt (a person id, or a route target with an e-mail
address shown as a keyed digest of itself: never an address, and nothing a guess list could confirm), with the
state of its latest attempted notice (``queued``: not attempted yet or being attempted; ``failed``: the last
attempt failed and another is due; ``delivered``; ``dead``: given up on), the attempts made across its notices
(first, reminders, escalations) and when the last one ended. Recipients are bounded by the notify file; the
list is capped at :data:`MAX_LISTED` all the same, with the total beside it.

Delivered notices are kept in the outbox for its retention (``OutboxLimits.delivered_ttl_ms``, an hour
by default) and dead letters for theirs: past it, the notice leaves this summary. The ``undeliverable``
mark is kept with the interrupt.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence
from typing import Any

from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.notices import InterruptNotices, NoticeState
from openwop_bridge.store.base import Store

__all__ = ["KEY_PURPOSE", "MAX_LISTED", "delivery_fields", "delivery_state", "public_recipient"]

#: The most recipients one interrupt's summary lists.
MAX_LISTED = 50
#: What the key of e-mail addresses' ids is derived for, from the link-signing keys (``Engine.derived_keys``).
KEY_PURPOSE = "notify recipient id"


def public_recipient(recipient: str, key: bytes) -> str:
    """A recipient as events and pages show it: ids as they are, an e-mail address as ``email:`` and the first
    16 hex digits of its HMAC-SHA256 under ``key`` (a host secret: a reader who guesses the address cannot
    check the guess; the same address has the same id while the key stays)."""
    if recipient.startswith("email:"):
        return "email:" + hmac.new(key, recipient.encode("utf-8"), hashlib.sha256).hexdigest()[:16]
    return recipient


def _state(notice: NoticeState) -> str:
    if notice.status == "queued":
        return "failed" if notice.attempted_ms is not None else "queued"
    return notice.status


def _summary(notices: Iterable[NoticeState], key: bytes) -> dict[str, Any] | None:
    groups: dict[tuple[str, str], list[NoticeState]] = {}
    for notice in notices:
        groups.setdefault((notice.recipient, notice.channel), []).append(notice)
    if not groups:
        return None
    entries = []
    for (recipient, channel), group in groups.items():
        attempted = [n for n in group if n.attempted_ms is not None]
        latest = max(attempted, key=lambda n: n.attempted_ms or 0) if attempted else group[-1]
        entry: dict[str, Any] = {
            "recipient": public_recipient(recipient, key),
            "channel": channel,
            "state": _state(latest),
            "attempts": sum(n.attempts for n in group),
        }
        if latest.attempted_ms is not None:
            entry["lastAttemptAt"] = iso_ms(latest.attempted_ms)
        entries.append(entry)
    return {"total": len(entries), "recipients": entries[:MAX_LISTED]}


def delivery_fields(found: InterruptNotices, key: bytes) -> dict[str, dict[str, Any]]:
    """``interrupt_id → {"notifications": …, "undeliverable": True?}`` for the interrupts with notices (``key``:
    see :func:`public_recipient`)."""
    by_interrupt: dict[str, list[NoticeState]] = {}
    for notice in found.notices:
        by_interrupt.setdefault(notice.interrupt_id, []).append(notice)
    out: dict[str, dict[str, Any]] = {}
    for interrupt_id in by_interrupt.keys() | found.undeliverable:
        fields: dict[str, Any] = {}
        summary = _summary(by_interrupt.get(interrupt_id, ()), key)
        if summary is not None:
            fields["notifications"] = summary
        if interrupt_id in found.undeliverable:
            fields["undeliverable"] = True
        out[interrupt_id] = fields
    return out


async def delivery_state(store: Store, interrupt_ids: Sequence[str], key: bytes) -> dict[str, dict[str, Any]]:
    """:func:`delivery_fields` of the interrupts named, read from ``store`` (one or two queries)."""
    return delivery_fields(await store.outbox_of_interrupts(interrupt_ids), key)
