"""Decision analytics: who decided what, how fast, and whether they had time to read it.

Pure functions over the settled interrupts a store reads for a window
(:class:`SettledInterrupt`, see :class:`~openwop_bridge.store.contract.analytics.AnalyticsStore`): each one
yields one :class:`Decision` per person who decided it (each vote of an approval is its voter's
decision; an interrupt without votes has one decision, by whoever settled it), and a
:class:`Tally` counts them by group, keeping no more of each than its group, outcome and times.

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
#: The votes of one interrupt a store reads at most.
VOTES_READ = 1_000


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
    #: ``cancelled`` when ``resolution.resumeValue.reason`` is (an approval cancelled), else None.
    reason: str | None
    #: The votes of an approval, ``[{voter, action, at, cancelled}, …]`` (the fields of ``state.votes`` the
    #: report needs; ``cancelled``: its reason is ``cancelled``), at most :data:`VOTES_READ` of them.
    votes: Sequence[Any]
    #: When the first notice to a person about it was delivered (None: none was).
    first_notice_at: int | None
    #: Whether a notice to a person about it was dead-lettered.
    undeliverable: bool
    #: Whether it held more than :data:`VOTES_READ` votes (the others are not counted).
    votes_cut: bool = False


@dataclass(frozen=True, slots=True)
class SettledPage:
    """A page of the settled interrupts of a window, oldest settled first, and whether more follow."""

    rows: list[SettledInterrupt]
    more: bool

    @property
    def after(self) -> tuple[int, str] | None:
        """Where the next page starts: after the last row's ``(resolved_at, interrupt_id)``."""
        return (self.rows[-1].resolved_at, self.rows[-1].interrupt_id) if self.rows else None


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
    if vote.get("cancelled"):
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
    votes = [made(v["voter"], _vote_outcome(v), _vote_at(v, row.resolved_at)) for v in _people(row.votes)]
    if row.status == "expired":
        return [*votes, made(by, "expired", row.resolved_at)]
    if row.status in ("cancelled", "gone"):  # closed unanswered: the votes cast before still count
        return [*votes, made(by, "cancelled", row.resolved_at)]
    if votes:
        return votes
    if row.action is not None:
        outcome: Outcome = _vote_outcome({"action": row.action, "cancelled": row.reason == "cancelled"})
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
    """One group's figures as decisions arrive: counts, and the times each decision took (whole ms)."""

    decisions: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    since_request: list[int] = field(default_factory=list)
    since_notice: list[int] = field(default_factory=list)
    undeliverable: set[str] = field(default_factory=set)
    fast: int = 0

    def add(self, d: Decision) -> None:
        self.decisions += 1
        self.outcomes[d.outcome] += 1
        if d.undeliverable:
            self.undeliverable.add(d.interrupt_id)
        if not d.timed:
            return
        self.since_request.append(d.since_request)
        if (since := d.since_notice) is not None:
            self.since_notice.append(since)
        self.fast += d.fast

    def figures(self, *, approver: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "decisions": self.decisions,
            "outcomes": dict(self.outcomes),
            "requestToDecisionMs": _times(self.since_request),
            "noticeToDecisionMs": _times(self.since_notice),
            "undeliverable": len(self.undeliverable),
        }
        if approver:
            timed = len(self.since_request)
            share = round(self.fast / timed, 4) if timed else None
            out["fastDecisions"] = self.fast
            out["fastShare"] = share
            out["rubberStamp"] = share is not None and share >= RUBBER_STAMP_SHARE
        return out


class Tally:
    """A report in the making: settled interrupts are added one by one (a window is read a page at a time),
    and only their decisions' groups, outcomes and times are kept."""

    def __init__(self, group_by: GroupBy) -> None:
        self.group_by: GroupBy = group_by
        self.interrupts = 0
        self.truncated = False
        self._groups: dict[str, _Group] = {}
        self._total = _Group()

    @property
    def decisions(self) -> int:
        """How many decisions were added so far."""
        return self._total.decisions

    def add(self, row: SettledInterrupt) -> None:
        """Count one settled interrupt's decisions."""
        self.interrupts += 1
        self.truncated |= row.votes_cut
        for d in decisions_of(row):
            self._groups.setdefault(d.key(self.group_by), _Group()).add(d)
            self._total.add(d)

    def report(self, from_ms: int, to_ms: int, cap: int) -> dict[str, Any]:
        """The figures by group (most decisions first), with the totals."""
        approver = self.group_by == "approver"
        ordered = sorted(self._groups.items(), key=lambda kv: (-kv[1].decisions, kv[0]))
        return {
            "from": iso_ms(from_ms),
            "to": iso_ms(to_ms),
            "groupBy": self.group_by,
            "fastWithinMs": FAST_MS,
            "interruptsRead": self.interrupts,
            "cap": cap,
            "truncated": self.truncated,
            "total": self._total.figures(approver=False),
            "groups": [{"key": key, **g.figures(approver=approver)} for key, g in ordered],
        }
