"""Separation of duties: whoever requested a run may not decide its approval gates.

An approval gate says ``"separationOfDuties": true`` in its ``data`` (the host may stamp it on
every approval it opens, ``serve --separation-of-duties``; a gate saying ``false`` keeps it off).
The run's *requesters* may then not vote, answer, ask or cancel on that gate, whoever carries the
decision: their own key or token, a signed link made out to them, or someone allowed to act for
others naming them. Nor may a requester act for someone else on it.

A run's requesters are its owner (the principal that created it) and those of the run it replays
(``spec.requesters``, carried over when the replay is created): a replay is the same request.

Pure functions over the run's ``spec`` and the gate's ``data``; the decisions apply them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from openwop_bridge.core import approvals

__all__ = ["FIELD", "applies", "carried_requesters", "opening_problem", "refusal", "requesters"]

#: The approval ``data`` field that switches the rule on (``true``) or keeps it off (``false``).
FIELD = "separationOfDuties"


def requesters(spec: Mapping[str, Any]) -> frozenset[str]:
    """The principals who requested a run: its owner, who forked it (a replay's owner is its source's) and the
    requesters it carried over."""
    found = {str(who) for who in spec.get("requesters") or () if who}
    for one in (spec.get("principal"), spec.get("forkedBy")):
        if one:
            found.add(str(one))
    return frozenset(found)


def carried_requesters(spec: Mapping[str, Any]) -> list[str]:
    """What a replay of this run carries over as ``spec.requesters`` (sorted, for a stable record)."""
    return sorted(requesters(spec))


def applies(data: Mapping[str, Any]) -> bool:
    """True when the gate separates duties."""
    return data.get(FIELD) is True


def refusal(data: Mapping[str, Any], spec: Mapping[str, Any], people: Iterable[str | None]) -> str | None:
    """Why none of ``people`` (the voter, the acting principal) may decide this gate, or None."""
    if not applies(data):
        return None
    requested_by = requesters(spec)
    for who in people:
        if who is not None and who in requested_by:
            return (
                f"separation of duties: {who!r} requested this run and may not decide its approval "
                "(nor may anyone decide it in their name)"
            )
    return None


def opening_problem(data: Mapping[str, Any], spec: Mapping[str, Any]) -> str | None:
    """Why this gate could never be decided once the requesters are left out, or None.

    Only an ``approversList`` makes that knowable: without one, anyone else with the scope may decide.
    """
    if not applies(data):
        return None
    listed = approvals.distinct_approvers(data)
    if not listed:
        return None
    requested_by = requesters(spec)
    others = [who for who in listed if who not in requested_by]
    required = approvals.required_approvals(data)
    if len(others) >= required:
        return None
    barred = ", ".join(repr(who) for who in listed if who in requested_by)
    return (
        f"separation of duties: {barred} requested this run and may not decide its approval, which leaves "
        f"{len(others)} of the approvers in approversList for the {required} approval(s) it needs"
    )
