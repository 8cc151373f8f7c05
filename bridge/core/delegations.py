"""Delegation while away: a person lets another answer in their place for a while.

A :class:`Delegation` names a delegator (who is away), a delegate (who stands in), when it holds
(``from_ms`` ≤ now < ``until_ms``), optionally the workflows it covers, and the delegator's rights
when it was made (roles and scopes). While it holds, the delegate may vote or answer *as the
delegator* (naming them as ``voter``): the decision is recorded as the delegator's, with the
delegate as the one who acted and the delegation's id.

The rules, applied by the decisions:

- the delegate acts with the delegator's rights as they were when the delegation was made, never
  more: a gate needing a role or scope the delegator lacked refuses (``delegation_scope_amplified``);
- it cannot be handed on: only a delegation made by the person named counts (a delegate's own
  delegations cover their own slot, not the ones they stand in for);
- one human, one vote: a delegate who votes on a gate in one slot (their own, or one person's they
  stand in for) casts no second vote on it in another;
- it stops at ``until_ms`` (``delegation_expired``) or when ended; separation of duties applies to the
  delegate as to the delegator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.errors import BridgeError

__all__ = [
    "MAX_PER_TENANT",
    "MAX_SPAN_MS",
    "Delegation",
    "DelegationExpiredError",
    "DelegationScopeAmplifiedError",
    "second_vote",
]

#: The longest a delegation may last (ninety days).
MAX_SPAN_MS = 90 * 24 * 3600 * 1000
#: The most delegations a tenant keeps (ended and expired ones count until they are removed).
MAX_PER_TENANT = 1000
#: The most workflows one delegation may name.
MAX_WORKFLOWS = 50


class DelegationExpiredError(BridgeError, code="delegation_expired", status=401):
    """The delegation named is past its ``until`` (or was ended): the delegate no longer stands in."""


class DelegationScopeAmplifiedError(BridgeError, code="delegation_scope_amplified", status=403):
    """Answering in the delegator's place would take a right the delegator did not hold."""


@dataclass(frozen=True, slots=True)
class Delegation:
    """One delegation (see the module docstring)."""

    delegation_id: str
    tenant: str
    delegator: str
    delegate: str
    from_ms: int
    until_ms: int
    workflows: tuple[str, ...] = ()
    reason: str = ""
    created_by: str = ""
    created_at_ms: int = 0
    roles: frozenset[str] = field(default_factory=frozenset)
    scopes: frozenset[str] = field(default_factory=frozenset)
    ended_at_ms: int | None = None

    def covers(self, workflow_id: str) -> bool:
        """Whether it covers runs of ``workflow_id`` (every workflow when it names none)."""
        return not self.workflows or workflow_id in self.workflows

    def active(self, now_ms: int) -> bool:
        """Whether the delegate stands in at ``now_ms``."""
        return self.ended_at_ms is None and self.from_ms <= now_ms < self.until_ms

    def over(self, now_ms: int) -> bool:
        """Whether it ended or ran out (as opposed to not having started yet)."""
        return self.ended_at_ms is not None or now_ms >= self.until_ms

    def rights(self, acting: Principal) -> Principal:
        """The principal the delegate answers as in the delegator's slot: the delegate's id (who acted), the
        delegator's rights when the delegation was made (never more)."""
        return Principal(
            id=acting.id, tenant=acting.tenant, scopes=self.scopes, roles=self.roles, subject=acting.subject
        )

    def as_json(self) -> dict[str, Any]:
        """The stored and served form (times in epoch milliseconds)."""
        doc: dict[str, Any] = {
            "delegationId": self.delegation_id,
            "tenant": self.tenant,
            "delegator": self.delegator,
            "delegate": self.delegate,
            "fromMs": self.from_ms,
            "untilMs": self.until_ms,
            "workflows": list(self.workflows),
            "reason": self.reason,
            "createdBy": self.created_by,
            "createdAtMs": self.created_at_ms,
            "roles": sorted(self.roles),
            "scopes": sorted(self.scopes),
        }
        if self.ended_at_ms is not None:
            doc["endedAtMs"] = self.ended_at_ms
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Delegation:
        """Read :meth:`as_json`'s form back."""
        return cls(
            delegation_id=str(doc["delegationId"]),
            tenant=str(doc["tenant"]),
            delegator=str(doc["delegator"]),
            delegate=str(doc["delegate"]),
            from_ms=int(doc["fromMs"]),
            until_ms=int(doc["untilMs"]),
            workflows=tuple(str(w) for w in doc.get("workflows") or ()),
            reason=str(doc.get("reason") or ""),
            created_by=str(doc.get("createdBy") or ""),
            created_at_ms=int(doc.get("createdAtMs") or 0),
            roles=frozenset(str(r) for r in doc.get("roles") or ()),
            scopes=frozenset(str(s) for s in doc.get("scopes") or ()),
            ended_at_ms=None if doc.get("endedAtMs") is None else int(doc["endedAtMs"]),
        )


def second_vote(acting: str, delegated: bool, votes: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a vote by the human ``acting`` (in someone's place when ``delegated``) would be their second
    on this gate: one human, one vote, whichever slot they vote in."""
    for vote in votes:
        stood_in = vote.get("delegation") is not None and vote.get("actingPrincipal") == acting
        if stood_in or (delegated and vote.get("voter") == acting):
            return True
    return False
