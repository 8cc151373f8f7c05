"""Approval decisions: who may decide a gate, votes and quorum, overrides, ``ask``, settling.

:func:`decide_approval` takes one answer to an ``approval`` interrupt through these steps:

1. :func:`checked_answer`: the answer's schema, its normal form, the gate's answer check (this
   step depends only on the gate's payload: it runs before the write transaction, see
   :func:`openwop_bridge.core.decisions.answer.prepare_answer`);
2. :func:`_voter`: who votes (the key's holder, a link's subject, or someone named by a
   principal allowed to act for others), and the gate's role, scope and approvers;
3. :func:`_override_denial`: an override needs the gate's override role;
4. :func:`_ask` records a question (bounded), or :func:`_vote` counts a vote, which may
   settle the gate (:func:`~openwop_bridge.core.decisions.approval_closing.settle_approval`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openwop_bridge.core import approvals, assurance, kinds, separation
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.decision_record import DecisionDraft
from openwop_bridge.core.decisions import recording
from openwop_bridge.core.decisions.approval_closing import settle_approval
from openwop_bridge.core.decisions.common import (
    Answer,
    NewId,
    decider_subject,
    deny,
    event_draft,
    resolver_id,
    subject_clash,
)
from openwop_bridge.core.delegations import Delegation, DelegationScopeAmplifiedError, second_vote
from openwop_bridge.core.errors import ForbiddenError, ValidationError
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord, Mutation, RunRecord


def gate_denial(
    intr: InterruptRecord, run: RunRecord, principal: Principal, now: int, new_id: NewId, voter: str | None = None
) -> Mutation | None:
    """The refusal when this principal may not decide this approval gate (role, scope, separation of
    duties and, given the ``voter``, ``approversList``), else None."""
    data = intr.payload.get("data", {})
    separated = separation.refusal(data, run.spec, (voter, principal.id))
    if separated is not None:
        return deny(intr, run, principal, now, new_id, separated)
    role = data.get("requiredRole")
    scope = data.get("requiredScope")
    approvers = list(data.get("approversList") or [])
    if role and not principal.has_role(str(role)):
        return deny(intr, run, principal, now, new_id, f"approving this gate needs the {role!r} role")
    if scope and not principal.has_scope(str(scope)):
        return deny(
            intr, run, principal, now, new_id, f"approving this gate needs the {scope!r} scope", scope=str(scope)
        )
    if voter is not None and approvers and voter not in approvers:
        return deny(intr, run, principal, now, new_id, f"{voter!r} is not among this gate's approvers")
    return None


def unnamed_link_refusal(
    intr: InterruptRecord, principal: Principal | None, token_subject: str | None
) -> ForbiddenError | None:
    """The refusal of an answer that names no one (a link without a subject, sent without a key)
    to a gate that needs several approvals: a quorum counts people. None when it may answer."""
    data = intr.payload.get("data", {})
    if principal is not None or token_subject or not kinds.kind_of(intr.kind).votes:
        return None
    if not approvals.counts_people(data):
        return None
    return ForbiddenError(
        f"a quorum counts people: this link names no one, so it cannot vote on a gate that needs "
        f"{approvals.required_approvals(data)} approvals; answer with your API key or with a link made out to you"
    )


def decide_approval(
    intr: InterruptRecord,
    run: RunRecord,
    answer: Answer,
    normalized: approvals.ApprovalAnswer,
    now: int,
    new_id: NewId,
) -> Mutation:
    """The decision for one answer to an open ``approval`` interrupt, ``normalized`` by
    :func:`checked_answer` before the transaction (see the module docstring)."""
    assurance.require(intr.payload["data"], answer.assurance)  # before anything is recorded
    chosen = _voter(intr, run, answer, normalized, now, new_id)
    if isinstance(chosen, Mutation):
        return chosen
    voter, acting = chosen
    denied = _override_denial(intr, run, answer.principal, normalized, now, new_id)
    if denied is not None:
        return denied
    if normalized.action == "ask":
        return _ask(intr, answer, normalized, voter, now, new_id)
    # The credential's subject is the voter's own only when no one acts on another's behalf; else the actor's.
    who = decider_subject(answer) if voter == acting else None
    actor = decider_subject(answer) if voter != acting else None
    delegated = answer.delegation.delegation_id if answer.delegation is not None and _stands_in(answer, voter) else None
    record = recording.answer_record(
        intr,
        answer,
        new_id,
        decision="override" if normalized.override else "vote",
        by=voter,
        action=normalized.action,
        voter=voter,
        delegation=delegated,
    )
    voting = _Voter(voter, acting, who, delegated, actor)
    return _vote(intr, run, normalized, voting, now, new_id, answer.assurance, record)


def checked_answer(intr: InterruptRecord, answer: Answer, now: int) -> approvals.ApprovalAnswer:
    """The answer in normal form, once it matches the gate's schema and passes its answer check.

    Depends only on the gate's payload, so it runs before the write transaction."""
    data = intr.payload["data"]
    schema = intr.payload.get("resumeSchema")
    if schema:
        kinds.validate_against(schema, answer.value, "resumeValue")
    normalized = approvals.normalize_answer(data, answer.value)
    check_name = data.get("answerCheck")
    if check_name and normalized.action != "ask":
        check = answer.checks.get(str(check_name))
        if check is None:
            raise ValidationError(
                f"answers to this interrupt are checked by {check_name!r}, which this host has not loaded"
            )
        check(intr.payload, normalized.as_vote(resolver_id(answer), iso_ms(now)))
    return normalized


def _voter(
    intr: InterruptRecord,
    run: RunRecord,
    answer: Answer,
    normalized: approvals.ApprovalAnswer,
    now: int,
    new_id: NewId,
) -> tuple[str, str] | Mutation:
    """``(voter, acting principal)``, or the refusal when this answer may not vote as the one it names."""
    data = intr.payload["data"]
    principal = answer.principal
    refusal = unnamed_link_refusal(intr, principal, answer.token_subject)
    if refusal is not None:
        raise refusal
    acting = principal.id if principal else resolver_id(answer)
    named = normalized.voter
    if answer.token_subject:  # the link names its voter, and no one else
        if named and named != answer.token_subject:
            raise ForbiddenError(f"this link votes as {answer.token_subject!r} and cannot name anyone else")
        named = answer.token_subject
    voter = acting
    if named and named != acting and principal is not None and _stands_in(answer, named):
        return _delegated(intr, run, answer, principal, named, now, new_id)
    if named and named != acting:
        if principal is None or not principal.can_act_as:
            if principal is None:
                raise ForbiddenError("a signed link cannot vote on behalf of someone else")
            return deny(
                intr,
                run,
                principal,
                now,
                new_id,
                subject_clash(answer)
                or "this key may not answer on behalf of another principal (needs the operator/admin role "
                "or the approvals:act-as scope)",
            )
        voter = named
    if principal is not None:
        denied = gate_denial(intr, run, principal, now, new_id, voter)  # role, scope, approvers
        if denied is not None:
            return denied
    else:
        separated = separation.refusal(data, run.spec, (voter,))
        if separated is not None:
            raise ForbiddenError(separated)
        if data.get("approversList") and voter not in data["approversList"]:
            raise ForbiddenError(f"{voter!r} is not among this gate's approvers")
    return voter, acting


def _stands_in(answer: Answer, voter: str) -> bool:
    """Whether the answer's delegation lets its principal answer in ``voter``'s place."""
    return answer.delegation is not None and answer.delegation.delegator == voter


def _delegated(
    intr: InterruptRecord, run: RunRecord, answer: Answer, principal: Principal, voter: str, now: int, new_id: NewId
) -> tuple[str, str] | Mutation:
    """A delegate answering in the delegator's place, with the delegator's rights (never more)."""
    assert answer.delegation is not None
    refused = _delegate_refusal(intr, run, answer.delegation, principal, now, new_id)
    if isinstance(refused, DelegationScopeAmplifiedError):
        raise refused
    return refused if refused is not None else (voter, principal.id)


def _delegate_refusal(
    intr: InterruptRecord, run: RunRecord, delegation: Delegation, principal: Principal, now: int, new_id: NewId
) -> DelegationScopeAmplifiedError | Mutation | None:
    """Why ``principal`` may not decide this gate in ``delegation``'s delegator's place, with the delegator's
    rights when it was made (role, scope, approvers, separation of duties for both people); None when they may."""
    voter = delegation.delegator
    rights = delegation.rights(principal)
    data = intr.payload["data"]
    for needed, held in (("requiredRole", rights.has_role), ("requiredScope", rights.has_scope)):
        if data.get(needed) and not held(str(data[needed])):
            return DelegationScopeAmplifiedError(
                f"{principal.id!r} answers in {voter!r}'s place with {voter!r}'s rights, and this gate's "
                f"{needed} {data[needed]!r} is not among them",
                details={needed: data[needed], "delegationId": delegation.delegation_id},
            )
    return gate_denial(intr, run, rights, now, new_id, voter)


def may_stand_in(
    intr: InterruptRecord, run: RunRecord, delegation: Delegation, principal: Principal, now: int, new_id: NewId
) -> bool:
    """Whether ``principal`` could vote on this gate in ``delegation``'s delegator's place now: the delegation
    holds and covers the run's workflow, the gate takes the delegator's vote with the delegator's rights, and
    the delegator's slot is still empty. Says nothing of the principal's own earlier vote (one human, one
    vote is the decision's to tell)."""
    if delegation.delegate != principal.id or not delegation.active(now) or not delegation.covers(intr.workflow_id):
        return False
    if any(v.get("voter") == delegation.delegator for v in intr.state.get("votes", [])):
        return False
    return _delegate_refusal(intr, run, delegation, principal, now, new_id) is None


def _override_denial(
    intr: InterruptRecord,
    run: RunRecord,
    principal: Principal | None,
    normalized: approvals.ApprovalAnswer,
    now: int,
    new_id: NewId,
) -> Mutation | None:
    """The refusal when an override is asked for by someone without the gate's override role."""
    if not normalized.override:
        return None
    override = intr.payload["data"].get("override") or {}
    needed = override.get("requiredRole") if isinstance(override, Mapping) else None
    if needed and principal is not None and principal.has_role(str(needed)):
        return None
    if principal is None:
        raise ForbiddenError("a signed link cannot take the override path")
    reason = "this gate has no override path" if not needed else f"the override needs the {needed!r} role"
    return deny(intr, run, principal, now, new_id, reason)


def _ask(
    intr: InterruptRecord, answer: Answer, normalized: approvals.ApprovalAnswer, voter: str, now: int, new_id: NewId
) -> Mutation:
    """Record a question to the requester and its answer; the gate stays open."""
    assert normalized.question is not None
    state = dict(intr.state)
    reply = answer.ask_limits.clip_answer(answer.ask_answer or "")
    # Bounded before anything is stored: a refusal leaves the interrupt as it was.
    answer.ask_limits.check_room(state.get("askExchanges", []), voter, normalized.question, reply)
    exchange = {"question": normalized.question, "answer": reply, "askedBy": voter, "at": iso_ms(now)}
    asks = [*state.get("askExchanges", []), exchange]
    state["askExchanges"] = asks
    asked = {"nodeId": intr.node_id, "interruptId": intr.interrupt_id, **exchange}
    return Mutation(
        interrupt_state=state,
        events=[event_draft(new_id, now, "bridge.approval.asked", asked, intr.node_id)],
        result={"status": "pending", "ask": exchange, "askExchanges": asks},
    )


@dataclass
class _GateLog:
    """The events and audit entries one answer adds for one gate (its node, run and time)."""

    intr: InterruptRecord
    run: RunRecord
    now: int
    new_id: NewId
    events: list[EventDraft] = field(default_factory=list)
    audit: list[dict[str, Any]] = field(default_factory=list)

    @property
    def gate(self) -> str:
        """The gate's id: its ``gateId``, else the node it runs at."""
        return str(self.intr.payload["data"].get("gateId") or self.intr.exec_node)

    def event(self, type_: str, payload: dict[str, Any]) -> None:
        """Emit ``type_`` at the gate's node."""
        self.events.append(event_draft(self.new_id, self.now, type_, payload, self.intr.node_id))

    def audited(self, principal: str, action: str, details: dict[str, Any]) -> None:
        """Record an audit entry about the gate."""
        resource = f"{self.run.run_id}/{self.intr.node_id}"
        self.audit.append({"principal": principal, "action": action, "resource": resource, "details": details})


#: What a vote records of someone acting in its voter's place: who, their credential's subject, the delegation.
ON_BEHALF = ("actingPrincipal", "actingSubject", "delegation")


@dataclass(frozen=True, slots=True)
class _Voter:
    """Who votes, who acts (the same, unless someone acts on the voter's behalf), and the recorded
    ``{issuer, subjectId, lane}`` of the voter's credential (None for an API key)."""

    voter: str
    acting: str
    subject: dict[str, str] | None = None
    #: The delegation the acting person votes through, in the voter's place.
    delegation: str | None = None
    #: The recorded ``{issuer, subjectId, lane}`` of the acting person's credential, when they act for the voter.
    acting_subject: dict[str, str] | None = None


def _vote(
    intr: InterruptRecord,
    run: RunRecord,
    normalized: approvals.ApprovalAnswer,
    who: _Voter,
    now: int,
    new_id: NewId,
    used: str = assurance.BEARER,
    record: DecisionDraft | None = None,
) -> Mutation:
    """Count a vote (given with the ``used`` assurance, its ``record`` for the decision record); the gate settles
    when the tally has an outcome."""
    voter, acting = who.voter, who.acting
    data = intr.payload["data"]
    state = dict(intr.state)
    votes = list(state.get("votes", []))
    bypass = bool(normalized.override and data.get("overrideBypassesQuorum"))
    if bypass:
        # An override that closes the gate replaces the principal's earlier vote, if any.
        votes = [v for v in votes if v["voter"] != voter]
    log = _GateLog(intr, run, now, new_id)
    if any(v["voter"] == voter for v in votes) or second_vote(acting, who.delegation is not None, votes):
        return _duplicate_vote(log, normalized, votes, who)  # one slot, one vote; one human, one vote
    if normalized.override:
        _record_override(log, normalized, voter, acting)
    vote = normalized.as_vote(voter, iso_ms(now))
    if acting != voter:
        vote["actingPrincipal"] = acting
    if who.delegation is not None:
        vote["delegation"] = who.delegation
    if who.subject is not None:
        vote["subject"] = who.subject
    if who.acting_subject is not None:
        vote["actingSubject"] = who.acting_subject
    if used != assurance.BEARER:  # a bearer vote reads as votes always have (the audit and resolution say bearer)
        vote["assurance"] = used
    votes.append(vote)
    t = approvals.tally(data, votes, bypass=bypass)
    _record_vote(log, normalized, t, who)
    log.audit[-1]["details"]["assurance"] = used
    state["votes"] = votes
    records = [] if record is None else [record]
    if t.outcome == "pending":
        return Mutation(
            interrupt_state=state,
            events=log.events,
            audit=log.audit,
            records=records,
            result={"status": "pending", "votes": t.progress()},
        )
    final = approvals.final_value(t, vote, iso_ms(now))
    acted = {k: vote[k] for k in ON_BEHALF if k in vote}  # who acted in the deciding voter's place, if anyone
    return settle_approval(
        intr, now, new_id, final, state, log.events, log.audit, t.outcome, used, records=records, acted=acted
    )


def _duplicate_vote(
    log: _GateLog, normalized: approvals.ApprovalAnswer, votes: list[dict[str, Any]], who: _Voter
) -> Mutation:
    """A second vote by the same voter (through any channel) changes nothing; it is kept in the audit and the log."""
    intr, voter = log.intr, who.voter
    details: dict[str, Any] = {
        "interruptId": intr.interrupt_id,
        "action": normalized.action,
        "actingPrincipal": who.acting,
    }
    payload: dict[str, Any] = {
        "nodeId": intr.node_id,
        "interruptId": intr.interrupt_id,
        "voter": voter,
        "action": normalized.action,
    }
    if who.subject is not None:
        details["subject"] = payload["subject"] = who.subject
    log.audited(voter, "approval.duplicate-vote", details)
    log.event("bridge.approval.duplicate-vote", payload)
    t = approvals.tally(intr.payload["data"], votes)
    return Mutation(
        events=log.events, audit=log.audit, result={"status": "pending", "duplicate": True, "votes": t.progress()}
    )


def _record_override(log: _GateLog, normalized: approvals.ApprovalAnswer, voter: str, acting: str) -> None:
    """Log an override that takes effect; its principal is whoever holds the override role."""
    log.event("approval.overridden", {"gateId": log.gate, "principal": acting, "reason": str(normalized.reason)})
    details: dict[str, Any] = {"interruptId": log.intr.interrupt_id, "reason": normalized.reason}
    if voter != acting:
        details["onBehalfOf"] = voter
    log.audited(acting, "approval.overridden", details)


def _record_vote(log: _GateLog, normalized: approvals.ApprovalAnswer, t: approvals.Tally, who: _Voter) -> None:
    """``approval.granted`` or ``approval.rejected`` (v1 closes both: the vote's subject is in its entry in the
    gate's ``votes``), and the vote's audit entry, naming the subject."""
    voter, acting = who.voter, who.acting
    why = normalized.reason or normalized.feedback or (normalized.refine_feedback or {}).get("text")
    if normalized.action in approvals.ACCEPTING:
        progress = {"granted": t.accepts, "required": t.required}
        log.event("approval.granted", {"gateId": log.gate, "principal": voter, "quorumProgress": progress})
    else:
        rejected: dict[str, Any] = {"gateId": log.gate, "principal": voter}
        if why:
            rejected["reason"] = str(why)
        log.event("approval.rejected", rejected)
    details: dict[str, Any] = {
        "interruptId": log.intr.interrupt_id,
        "progress": t.progress(),
        "actingPrincipal": acting,
    }
    if who.subject is not None:
        details["subject"] = who.subject
    if who.delegation is not None:
        details["delegation"] = who.delegation
    if why:
        details["reason"] = str(why)
    log.audited(voter, f"approval.vote.{normalized.action}", details)
