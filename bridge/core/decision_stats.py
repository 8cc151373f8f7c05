"""Decision analytics: who decided what, how fast, and whether they had time to read it.

Pure functions over the settled interrupts a store reads for a window
(:class:`SettledInterrupt`, see :class:`~openwop_bridge.store.contract.analytics.AnalyticsStore`): each one
yields one :class:`Decision` per person who decided it (each vote of an approval is its voter's
decision; an interrupt without votes has one decision, by whoever settled it), and
:func:`report` counts them by group.

Times are nearest-rank percentiles of whole milliseconds. A decision's reference time is the
first notice delivered to a person about its interrupt, when one was delivered at or before the
decision, else the request: a decision made within :data:`FAST_MS` of it is "fast", and an approver
whose share of fast decisions is at least :data:`RUBBER_STAMP_SHARE` is flagged as a possible
rubber stamp (too fast to have read what they approved).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from openwop_bridge.core.approvals import ACCEPTING
from openwop_bridge.core.clock import iso_ms, parse_iso_ms

#: How a decision ended: the outcomes counted for every group.
Outcome = Literal["approved", "rejected", "answered", "cancelled", "expired"]
OUTCOMES: tuple[Outcome, ...] = ("approved", "rejected", "answered", "cancelled", "expired")
#: What a report groups decisions by.
GroupBy = Literal["workflow", "approver", "kind"]
GROUP_BY: tuple[GroupBy, ...] = ("workflow", "approver", "kind")
#: A decision made this soon after its notice (or its request) is a fast one.
FAST_MS = 5_000
#: An approver with at least this share of fast decisions is flagged.
RUBBER_STAMP_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class SettledInterrupt:
    """What the report needs of one settled interrupt (read by the store from its row and its notices)."""

    interrupt_id: str
    workflow_id: str
    kind: str
    status: str
    requested_at: int
    resolved_at: int
    #: ``resolution.resolvedBy``, and an approval's ``resolution.action`` (None when absent).
    resolved_by: str | None
    action: str | None
    #: ``resolution.resumeValue.reason`` when it is a string (``cancelled``, ``timeout`` …).
    reason: str | None
    #: ``state.votes`` of an approval: ``[{voter, action, at}, …]`` (empty for other kinds).
    votes: Sequence[Any]
    #: When the first notice to a person about it was delivered (None: none was).
    first_notice_at: int | None
    #: Whether a notice to a person about it was dead-lettered.
    undeliverable: bool


@dataclass(frozen=True, slots=True)
class SettledPage:
    """The settled interrupts of a window, oldest settled first, and whether the read cap cut the window."""

    rows: list[SettledInterrupt]
    truncated: bool


@dataclass(frozen=True, slots=True)
class Decision:
    """One person's decision on one interrupt."""

    interrupt_id: str
    workflow_id: str
    kind: str
    decider: str
    outcome: Outcome
    #: When it was made (epoch ms), and the interrupt's request and first delivered notice.
    at: int
    requested_at: int
    first_notice_at: int | None
    undeliverable: bool

    @property
    def timed(self) -> bool:
        """Whether it counts in the times (a timeout is nobody's decision)."""
        return self.outcome != "expired"

    @property
    def since_request(self) -> int:
        """Milliseconds from the request to the decision."""
        return max(0, self.at - self.requested_at)

    @property
    def since_notice(self) -> int | None:
        """Milliseconds from the first notice delivered before it, if one was."""
        if self.first_notice_at is None or self.first_notice_at > self.at:
            return None
        return self.at - self.first_notice_at

    @property
    def fast(self) -> bool:
        """Made within :data:`FAST_MS` of its notice (or of its request when no notice came first)."""
        since = self.since_notice
        return (self.since_request if since is None else since) <= FAST_MS

    def key(self, group_by: GroupBy) -> str:
        """The group it counts in."""
        if group_by == "workflow":
            return self.workflow_id
        if group_by == "kind":
            return self.kind
        return self.decider


def _vote_outcome(vote: Any) -> Outcome:
    if vote.get("reason") == "cancelled":
        return "cancelled"
    return "approved" if vote.get("action") in ACCEPTING else "rejected"


def _vote_at(vote: Any, fallback: int) -> int:
    try:
        return parse_iso_ms(str(vote["at"]))
    except (KeyError, ValueError, TypeError):
        return fallback


def _people(votes: Sequence[Any]) -> list[dict[str, Any]]:
    """The well-formed votes (each names its voter)."""
    return [v for v in votes if isinstance(v, dict) and isinstance(v.get("voter"), str)]


def decisions_of(row: SettledInterrupt) -> list[Decision]:
    """The decisions one settled interrupt holds: each vote, or its one settling."""

    def made(decider: str, outcome: Outcome, at: int) -> Decision:
        return Decision(
            row.interrupt_id,
            row.workflow_id,
            row.kind,
            decider,
            outcome,
            at,
            row.requested_at,
            row.first_notice_at,
            row.undeliverable,
        )

    by = row.resolved_by or "unknown"
    if row.status == "expired":
        before = [made(v["voter"], _vote_outcome(v), _vote_at(v, row.resolved_at)) for v in _people(row.votes)]
        return [*before, made(by, "expired", row.resolved_at)]
    if row.status in ("cancelled", "gone"):
        return [made(by, "cancelled", row.resolved_at)]
    votes = _people(row.votes)
    if votes:
        return [made(v["voter"], _vote_outcome(v), _vote_at(v, row.resolved_at)) for v in votes]
    if row.action is not None:
        outcome: Outcome = "cancelled" if row.reason == "cancelled" else _vote_outcome({"action": row.action})
        return [made(by, outcome, row.resolved_at)]
    return [made(by, "answered", row.resolved_at)]


def percentile(sorted_ms: Sequence[int], p: float) -> int | None:
    """The nearest-rank ``p``-th percentile of ascending values (None when there are none)."""
    if not sorted_ms:
        return None
    return sorted_ms[max(0, math.ceil(p / 100 * len(sorted_ms)) - 1)]


def _times(values: Iterable[int]) -> dict[str, int | None]:
    ordered = sorted(values)
    return {"count": len(ordered), "median": percentile(ordered, 50), "p90": percentile(ordered, 90)}


@dataclass
class _Group:
    decisions: list[Decision] = field(default_factory=list)

    def figures(self, *, approver: bool) -> dict[str, Any]:
        timed = [d for d in self.decisions if d.timed]
        outcomes = dict.fromkeys(OUTCOMES, 0)
        for d in self.decisions:
            outcomes[d.outcome] += 1
        out: dict[str, Any] = {
            "decisions": len(self.decisions),
            "outcomes": outcomes,
            "requestToDecisionMs": _times(d.since_request for d in timed),
            "noticeToDecisionMs": _times(s for d in timed if (s := d.since_notice) is not None),
            "undeliverable": len({d.interrupt_id for d in self.decisions if d.undeliverable}),
        }
        if approver:
            fast = sum(1 for d in timed if d.fast)
            share = round(fast / len(timed), 4) if timed else None
            out["fastDecisions"] = fast
            out["fastShare"] = share
            out["rubberStamp"] = share is not None and share >= RUBBER_STAMP_SHARE
        return out


def report(page: SettledPage, group_by: GroupBy, from_ms: int, to_ms: int, cap: int) -> dict[str, Any]:
    """The figures of a window's settled interrupts, by group (largest group first), with the totals."""
    groups: dict[str, _Group] = {}
    total = _Group()
    for row in page.rows:
        for d in decisions_of(row):
            groups.setdefault(d.key(group_by), _Group()).decisions.append(d)
            total.decisions.append(d)
    approver = group_by == "approver"
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1].decisions), kv[0]))
    return {
        "from": iso_ms(from_ms),
        "to": iso_ms(to_ms),
        "groupBy": group_by,
        "fastWithinMs": FAST_MS,
        "interruptsRead": len(page.rows),
        "cap": cap,
        "truncated": page.truncated,
        "total": total.figures(approver=False),
        "groups": [{"key": key, **g.figures(approver=approver)} for key, g in ordered],
    }
