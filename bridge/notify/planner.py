"""The notices an interrupt owes people, planned in the transaction that opens it (pure).

For each interrupt a commit opens, :class:`PeoplePlanner` drafts one notice per
recipient (:func:`openwop_bridge.notify.recipients.recipients_for`: per person and channel they
have, per shared address), and, for the routes that match it, the delayed ones:

- ``remindAfterMs``: one reminder to each person told (and each shared address), due then;
- ``escalateAfterMs``: a notice to each of ``escalateTo``'s recipients, due then;
- ``fallbackAfterMs``: instead of telling a person on every channel at once, their channels
  are tried in order (Slack, then e-mail, then Teams), each one ``fallbackAfterMs`` after
  the previous.

A delayed notice is a notice like any other with a future ``not_before_ms``: durable, and
delivered once across instances. Whether it is still owed is decided when it is due
(:func:`still_owed`): not once the interrupt has closed, nor a reminder to a quorum member
who has voted (:func:`has_voted`; a digest leaves out such a request too). When every first notice of an
interrupt has died, its routes' ``onUndeliverable`` applies (:mod:`openwop_bridge.notify.undeliverable`). And for every
interrupt a commit closes, when Slack is configured, a ``closed`` notice has its Slack messages rewritten to say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from openwop_bridge.core import kinds
from openwop_bridge.core.notices import NoticeDraft
from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.notify.config import NotifyConfig, Route
from openwop_bridge.notify.recipients import Recipient, matching_routes, recipients_for, targets_to_recipients

__all__ = ["CLOSING_EVENTS", "PeoplePlanner", "has_voted", "still_owed", "undeliverable_policy"]

#: Run events that close an interrupt (their payload names it as ``interruptId``).
CLOSING_EVENTS = frozenset(
    {"interrupt.resolved", "interrupt.expired", "interrupt.cancelled", "approval.cancelled", "interrupt.timeout"}
)


def _draft(record: InterruptRecord, r: Recipient, purpose: str, not_before_ms: int | None = None) -> NoticeDraft:
    return NoticeDraft(
        channel=r.channel,
        recipient=r.key,
        payload={"address": r.address, "person": r.person, "purpose": purpose},
        interrupt_id=record.interrupt_id,
        not_before_ms=not_before_ms,
    )


def _first(routes: Sequence[Route], name: str) -> int | None:
    values = [getattr(r, name) for r in routes if getattr(r, name) is not None]
    return min(values) if values else None


def undeliverable_policy(routes: Sequence[Route]) -> str:
    """What happens when every first notice of an interrupt died: the strictest of its routes' policies."""
    chosen = {r.on_undeliverable for r in routes}
    return "fail" if "fail" in chosen else "escalate" if "escalate" in chosen else "wait"


def has_voted(record: InterruptRecord, person: str) -> bool:
    """Whether ``person`` already voted on ``record`` (a quorum still open: nothing more is asked of them)."""
    votes = record.state.get("votes", [])
    return isinstance(votes, list) and any(isinstance(v, dict) and v.get("voter") == person for v in votes)


def still_owed(record: InterruptRecord, payload: dict[str, Any]) -> bool:
    """Whether a notice about ``record`` is still worth sending now (see the module docstring)."""
    if not record.open:
        return False
    person = payload.get("person")
    return not (payload.get("purpose") == "reminder" and person and has_voted(record, str(person)))


class PeoplePlanner:
    """A :class:`~openwop_bridge.core.notices.NoticePlanner` over a notify file (see the module docstring)."""

    def __init__(self, config: NotifyConfig) -> None:
        self._config = config

    def __call__(
        self, run: RunRecord, events: Sequence[dict[str, Any]], opened: Sequence[InterruptRecord], now_ms: int
    ) -> list[NoticeDraft]:
        """The notices this commit owes: for the interrupts it opens, and Slack rewrites for those it closes."""
        drafts: list[NoticeDraft] = []
        for record in opened:
            if record.open and kinds.kind_of(record.kind).listed:
                drafts += self.plan_opened(record, now_ms)
        if self._config.channels.get("slack") is not None:
            drafts += self._closing(events)
        return drafts

    def plan_opened(self, record: InterruptRecord, now_ms: int) -> list[NoticeDraft]:
        """The notices, at once and delayed, about a newly opened interrupt."""
        data = record.payload.get("data", {})
        told = recipients_for(
            self._config,
            workflow_id=record.workflow_id,
            kind=record.kind,
            tenant=record.tenant,
            data=data if isinstance(data, dict) else {},
        )
        routes = matching_routes(self._config, record.workflow_id, record.kind, record.tenant)
        digest = [r for r in told if self._digest_ms(r) is not None]
        told = [r for r in told if r not in digest]
        drafts = self._at_once(record, told, _first(routes, "fallback_after_ms"), now_ms)
        policy = undeliverable_policy(routes)
        # Each first notice knows how many there are and the policy: the store marks the interrupt undeliverable
        # when the last dies, and writes the notice that applies an acting policy.
        drafts = [replace(d, payload={**d.payload, "of": len(drafts), "onUndeliverable": policy}) for d in drafts]
        remind = _first(routes, "remind_after_ms")
        if remind is not None:  # a digest reminds by itself
            drafts += [_draft(record, r, "reminder", now_ms + remind) for r in told]
        drafts += [self.digest_draft(record.tenant, r, now_ms) for r in digest]
        escalate = _first(routes, "escalate_after_ms")
        if escalate is not None:
            targets = [t for route in routes if route.escalate_after_ms is not None for t in route.escalate_to]
            drafts += [
                _draft(record, r, "escalation", now_ms + escalate)
                for r in targets_to_recipients(self._config, targets, record.tenant)
            ]
        return drafts

    def _digest_ms(self, r: Recipient) -> int | None:
        person = self._config.people.get(r.person) if r.person and r.channel == "email" else None
        return person.digest_every_ms if person is not None else None

    def digest_draft(self, tenant: str, r: Recipient, now_ms: int) -> NoticeDraft:
        """The person's next digest, due at the end of the current period (one per period: the first to be
        delivered sends it, the others find it sent)."""
        every = self._digest_ms(r)
        assert every is not None and r.person is not None
        slot = (now_ms // every + 1) * every
        payload = {"address": r.address, "person": r.person, "purpose": "digest", "slot": slot, "tenant": tenant}
        return NoticeDraft(channel="email", recipient=r.person, payload=payload, not_before_ms=slot)

    def waits_on(self, person: str, record: InterruptRecord) -> bool:
        """Whether ``person`` is told by e-mail about ``record`` (so it belongs in their digest)."""
        data = record.payload.get("data", {})
        told = recipients_for(
            self._config,
            workflow_id=record.workflow_id,
            kind=record.kind,
            tenant=record.tenant,
            data=data if isinstance(data, dict) else {},
        )
        return any(r.person == person and r.channel == "email" for r in told)

    def escalation_now(self, record: InterruptRecord) -> list[NoticeDraft]:
        """Notices to the ``escalateTo`` of the routes whose ``onUndeliverable`` is ``escalate``, due at once."""
        routes = matching_routes(self._config, record.workflow_id, record.kind, record.tenant)
        targets = [t for route in routes if route.on_undeliverable == "escalate" for t in route.escalate_to]
        return [_draft(record, r, "escalation") for r in targets_to_recipients(self._config, targets, record.tenant)]

    @staticmethod
    def _at_once(
        record: InterruptRecord, told: list[Recipient], fallback_ms: int | None, now_ms: int
    ) -> list[NoticeDraft]:
        if fallback_ms is None:
            return [_draft(record, r, "notice") for r in told]
        drafts: list[NoticeDraft] = []
        step: dict[str, int] = {}
        for r in told:
            n = step.get(r.key, 0)
            step[r.key] = n + 1
            drafts.append(_draft(record, r, "notice", now_ms + n * fallback_ms if n else None))
        return drafts

    @staticmethod
    def _closing(events: Sequence[dict[str, Any]]) -> list[NoticeDraft]:
        closed = []
        for event in events:
            payload = event.get("payload")
            if event.get("type") in CLOSING_EVENTS and isinstance(payload, dict) and payload.get("interruptId"):
                closed.append(str(payload["interruptId"]))
        return [
            NoticeDraft(channel="slack", recipient="slack:messages", payload={"purpose": "closed"}, interrupt_id=i)
            for i in dict.fromkeys(closed)
        ]
