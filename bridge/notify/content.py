"""What every notice says, whatever the channel: the workflow, the title, what is asked, the deadline, the link,
and, on a delegate's copy, whose place it is in (``on behalf of alice``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from openwop_bridge.core import assurance, kinds
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.core.views import interrupt_title

__all__ = ["NoticeContent", "human_deadline", "what_is_asked"]

#: The longest title a notice shows.
TITLE_LIMIT = 200
#: How much of the request's own text a notice quotes (the rest is on the link's page).
ASKED_LIMIT = 1000

_PURPOSE_PREFIX = {"notice": "", "reminder": "Reminder: ", "escalation": "Escalated: "}


def what_is_asked(data: dict[str, Any]) -> str:
    """The request's own words (its description, question or prompt), clipped to :data:`ASKED_LIMIT`."""
    text = ""
    for name in ("description", "question", "prompt", "message", "summary", "reason"):
        value = data.get(name)
        if isinstance(value, str) and value.strip():
            text = value.strip()
            break
    else:
        questions = data.get("questions")
        if isinstance(questions, list):
            asked = [str(q.get("question", "")).strip() for q in questions[:20] if isinstance(q, dict)]
            text = "\n".join(q for q in asked if q)
    return text if len(text) <= ASKED_LIMIT else text[: ASKED_LIMIT - 1] + "…"


def human_deadline(deadline_ms: int | None) -> str:
    """``21 Nov 2026, 10:03 UTC``, or ``no deadline``."""
    if deadline_ms is None:
        return "no deadline"
    return datetime.fromtimestamp(deadline_ms / 1000, tz=UTC).strftime("%d %b %Y, %H:%M UTC")


@dataclass(frozen=True, slots=True)
class NoticeContent:
    """The facts a notice carries, already chosen and clipped; channels only lay them out."""

    interrupt_id: str
    run_id: str
    workflow_id: str
    kind: str
    kind_label: str
    title: str
    asked: str
    deadline: str
    link: str
    link_answers: bool
    purpose: str = "notice"
    votes: bool = False
    #: A key-bound gate (:mod:`openwop_bridge.core.assurance`): answered only where a passkey can confirm it.
    key_bound: bool = False
    #: The delegator whose notice this is, on a delegate's copy (:mod:`openwop_bridge.notify.delegated`).
    on_behalf_of: str | None = None

    @classmethod
    def of(
        cls,
        record: InterruptRecord,
        *,
        link: str,
        link_answers: bool,
        purpose: str = "notice",
        on_behalf_of: str | None = None,
    ) -> NoticeContent:
        """The content of a notice about ``record`` carrying ``link`` (which answers, or only shows)."""
        kind = kinds.kind_of(record.kind)
        data = record.payload.get("data", {})
        return cls(
            interrupt_id=record.interrupt_id,
            run_id=record.run_id,
            workflow_id=record.workflow_id,
            kind=record.kind,
            kind_label=kind.label,
            # One line: a title is a mail's Subject header, where a line break would start a header of its own.
            title=" ".join(interrupt_title(record).split())[:TITLE_LIMIT],
            asked=what_is_asked(data if isinstance(data, dict) else {}),
            deadline=human_deadline(record.deadline_ms),
            link=link,
            link_answers=link_answers,
            purpose=purpose,
            votes=kind.votes,
            key_bound=kind.votes and assurance.required(data if isinstance(data, dict) else {}) == assurance.KEY_BOUND,
            on_behalf_of=on_behalf_of,
        )

    @property
    def subject(self) -> str:
        """A one-line subject: ``[Approval] Approve expense report EXP-1042`` (with Reminder:/Escalated:, and
        `` (on behalf of alice)`` on a delegate's copy)."""
        return f"{_PURPOSE_PREFIX.get(self.purpose, '')}[{self.kind_label}] {self.title}{self.on_behalf}"

    @property
    def on_behalf(self) -> str:
        """`` (on behalf of alice)`` on a delegate's copy, else nothing."""
        return f" (on behalf of {self.on_behalf_of})" if self.on_behalf_of else ""

    @property
    def call_to_action(self) -> str:
        """The link's label."""
        return "Open the request and answer it" if self.link_answers else "Open the request"
