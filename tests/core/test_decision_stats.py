"""The decisions a settled interrupt holds, and the figures a tally makes of them (no store, no clock)."""

from __future__ import annotations

from typing import Any

from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.decision_stats import SettledInterrupt, Tally, decisions_of, percentile


def _settled(status: str, votes: list[Any], **more: Any) -> SettledInterrupt:
    fields: dict[str, Any] = {
        "interrupt_id": "int_1",
        "workflow_id": "wf",
        "kind": "approval",
        "status": status,
        "requested_at": 1_000,
        "resolved_at": 60_000,
        "resolved_by": "system:timeout",
        "action": None,
        "reason": None,
        "votes": votes,
        "first_notice_at": None,
        "undeliverable": False,
        **more,
    }
    return SettledInterrupt(**fields)


def _vote(voter: Any, action: str, at: Any, cancelled: bool = False) -> dict[str, Any]:
    return {"voter": voter, "action": action, "at": at, "cancelled": cancelled}


def test_votes_cast_before_a_gate_closed_unanswered_are_their_voters_decisions() -> None:
    votes = [_vote("alice", "accept", iso_ms(3_000))]
    expired = decisions_of(_settled("expired", votes))
    assert [(d.decider, d.outcome, d.at) for d in expired] == [
        ("alice", "approved", 3_000),
        ("system:timeout", "expired", 60_000),
    ]
    gone = decisions_of(_settled("gone", votes, resolved_by="ops"))
    assert [(d.decider, d.outcome, d.at) for d in gone] == [("alice", "approved", 3_000), ("ops", "cancelled", 60_000)]


def test_a_malformed_vote_is_left_out_and_a_vote_without_a_time_is_dated_by_the_settling() -> None:
    votes = ["nonsense", _vote(None, "accept", iso_ms(2_000)), _vote("bob", "refine", "not a time")]
    assert [(d.decider, d.outcome, d.at) for d in decisions_of(_settled("resolved", votes))] == [
        ("bob", "rejected", 60_000)
    ]


def test_a_settling_without_votes_is_one_decision() -> None:
    cancelled = _settled("resolved", [], resolved_by="ann", action="reject", reason="cancelled")
    answered = _settled("resolved", [], resolved_by="ann", kind="clarification")
    assert [(d.decider, d.outcome) for d in decisions_of(cancelled)] == [("ann", "cancelled")]
    assert [(d.decider, d.outcome) for d in decisions_of(answered)] == [("ann", "answered")]


def test_a_notice_delivered_after_the_decision_does_not_time_it() -> None:
    late = _settled("resolved", [_vote("alice", "accept", iso_ms(4_000))], first_notice_at=5_000)
    (decision,) = decisions_of(late)
    assert (decision.since_notice, decision.since_request, decision.fast) == (None, 3_000, True)


def test_percentiles_are_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert [percentile([10], p) for p in (50, 90)] == [10, 10]
    values = list(range(1, 11))
    assert (percentile(values, 50), percentile(values, 90), percentile(values, 91)) == (5, 9, 10)


def test_a_tally_by_kind_counts_each_interrupt_undeliverable_once() -> None:
    tally = Tally("kind")
    votes = [_vote("alice", "accept", iso_ms(2_000)), _vote("bob", "accept", iso_ms(9_000))]
    tally.add(_settled("resolved", votes, undeliverable=True, votes_cut=True))
    report = tally.report(0, 100_000, 10)
    ((group,),) = [report["groups"]]
    assert (group["key"], group["decisions"], group["undeliverable"]) == ("approval", 2, 1)
    assert report["truncated"] is True, "an interrupt with more votes than were read cuts the report"
    assert "rubberStamp" not in group
