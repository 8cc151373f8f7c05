"""Messages of the PostgreSQL store: its notification channel and their payloads, its migration lock.

Kept apart from :mod:`openwop_bridge.store.postgres` so the store reads as its
transactions. Everything here is pure; rows are mapped by :mod:`openwop_bridge.store.codec`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from openwop_bridge.store.codec import dumps

CHANNEL = "openwop_bridge"
#: The ``wake`` of a notice for a run nobody owns any more (released on a graceful stop): any instance may claim it.
ANY_INSTANCE = "*"
MIGRATION_LOCK = 0x6F77_6272  # pg_advisory_xact_lock key: "owbr"
#: Every notice of a transaction in one statement: ``(channel, payloads)``, the payloads one a line
#: (:meth:`Outbox.payloads`): one text value is quoted faster than an array of them.
NOTIFY = "SELECT pg_notify(%s, p) FROM unnest(string_to_array(%s, chr(10))) AS p"


@dataclass(slots=True)
class Notice:
    """What one transaction tells the other instances about one run."""

    events: bool = False
    wake_owner: str | None = None
    deadline_ms: int | None = None


@dataclass(slots=True)
class Outbox:
    """Notifications collected during a transaction and sent from inside it.

    ``pg_notify`` delivers them only if the transaction commits, so a listener
    never hears of work that was rolled back.
    """

    notices: dict[str, Notice] = field(default_factory=dict)

    def events(self, run_id: str) -> None:
        """Events of ``run_id`` were appended."""
        self.notices.setdefault(run_id, Notice()).events = True

    def wake(self, run_id: str, owner: str | None) -> None:
        """``run_id`` was woken; only its current owner has anything to do."""
        if owner is not None:
            self.notices.setdefault(run_id, Notice()).wake_owner = owner

    def deadline(self, run_id: str, at_ms: int | None) -> None:
        """A deadline of ``run_id`` at ``at_ms`` was written (the earliest one is told)."""
        if at_ms is not None:
            notice = self.notices.setdefault(run_id, Notice())
            notice.deadline_ms = at_ms if notice.deadline_ms is None else min(notice.deadline_ms, at_ms)

    def payloads(self, sender: str) -> str:
        """One ``pg_notify`` payload per run, one a line (JSON holds no line break of its own)."""
        out = []
        for run_id, notice in self.notices.items():
            msg: dict[str, Any] = {"from": sender, "run": run_id}  # "from" first: see sender_prefix
            if notice.events:
                msg["events"] = True
            if notice.wake_owner is not None:
                msg["wake"] = notice.wake_owner
            if notice.deadline_ms is not None:
                msg["deadline"] = notice.deadline_ms
            out.append(dumps(msg))
        return "\n".join(out)


def parse_notice(payload: str) -> tuple[str, str, bool, str | None, int | None] | None:
    """``(sender, run_id, events, wake_owner, deadline_ms)`` from a payload, or None if it is not ours."""
    try:
        msg = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(msg, dict) or not isinstance(msg.get("from"), str) or not isinstance(msg.get("run"), str):
        return None
    wake = msg.get("wake")
    deadline = msg.get("deadline")
    at_ms = deadline if isinstance(deadline, int) and not isinstance(deadline, bool) else None
    return msg["from"], msg["run"], bool(msg.get("events")), wake if isinstance(wake, str) else None, at_ms


def sender_prefix(sender: str) -> str:
    """How every payload ``sender`` sends begins, and no payload another sender sends does."""
    return '{"from":' + dumps(sender) + ","
