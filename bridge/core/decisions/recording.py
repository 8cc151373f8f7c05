"""The decision record's draft of each decision (:mod:`openwop_bridge.core.decision_record`).

Each decision that changes what a person or the host decided (a vote, an override, an answer, a turn,
a cancel, a timeout; a refusal by policy is :func:`~openwop_bridge.core.decisions.common.deny`'s) adds one
:class:`~openwop_bridge.core.decision_record.DecisionDraft` to its :class:`~openwop_bridge.core.records.Mutation`;
a duplicate vote, which changes nothing, adds none.

Who decided: ``by`` is the name the decision records (``decidedBy``), ``subject`` the credential's
subject when that person gave it; when someone answers in another's place (a delegate, or a principal
acting for someone) the subject is the one answered for, in the key realm, with the credential's
subject as its ``actor``.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core.auth import API_KEY_ISSUER, Principal
from openwop_bridge.core.decision_record import DecisionDraft, digest, principal_subject
from openwop_bridge.core.decisions.common import Answer, NewId, link_subject, resolver_id
from openwop_bridge.core.records import InterruptRecord

__all__ = ["answer_record", "host_record", "subject_of"]


def _named(name: str) -> dict[str, Any]:
    """The subject of someone known by name only (the key realm: a principal id is its subject id there)."""
    return {"issuer": API_KEY_ISSUER, "subjectId": name, "lane": "api-key"}


def _credential(answer: Answer) -> dict[str, Any] | None:
    """The subject of the credential that gave ``answer``: its principal's, else its link's person's."""
    if answer.principal is not None:
        return principal_subject(answer.principal)
    found = link_subject(answer.token_subject)
    return found.ref() if found is not None else None


def subject_of(answer: Answer, voter: str | None = None) -> dict[str, Any] | None:
    """Whose decision ``answer`` is: the credential's subject, or ``voter``'s with the credential as ``actor``
    when the answer fills another person's slot."""
    credential = _credential(answer)
    if voter is None or voter == resolver_id(answer):
        return credential
    subject = _named(voter)
    if credential is not None:
        subject["actor"] = credential
    return subject


def answer_record(
    intr: InterruptRecord,
    answer: Answer,
    new_id: NewId,
    *,
    decision: str,
    by: str,
    action: str | None = None,
    voter: str | None = None,
    delegation: str | None = None,
) -> DecisionDraft:
    """The draft of a person's decision on ``intr``: ``answer``'s value as given, by ``by``."""
    return DecisionDraft(
        record_id=new_id("dec"),
        decision=decision,
        by=by,
        subject=subject_of(answer, voter),
        interrupt_id=intr.interrupt_id,
        node_id=intr.node_id,
        kind=intr.kind,
        action=action,
        assurance=answer.assurance,
        delegation=delegation,
        shown_hash=digest(intr.payload),
        value_hash=digest(answer.value),
    )


def host_record(
    intr: InterruptRecord,
    new_id: NewId,
    *,
    decision: str,
    by: str,
    principal: Principal | None = None,
    value: Any = None,
    action: str | None = None,
    reason: str | None = None,
) -> DecisionDraft:
    """The draft of a decision the host takes on ``intr`` (a timeout), or takes for ``principal`` (a cancel),
    for ``reason``."""
    return DecisionDraft(
        record_id=new_id("dec"),
        decision=decision,
        by=by,
        subject=None if principal is None else principal_subject(principal),
        interrupt_id=intr.interrupt_id,
        node_id=intr.node_id,
        kind=intr.kind,
        action=action,
        shown_hash=digest(intr.payload),
        value_hash=None if value is None else digest(value),
        reason=reason,
    )
