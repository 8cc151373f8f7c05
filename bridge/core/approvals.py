"""Approvals: the five-action vocabulary, legacy normalisation and quorum tallies.

Pure functions. The resolution layer hands in the interrupt's ``data``, the
votes so far and one new vote; it gets back the tally and, when the vote
settles the gate, the final resume value the node receives.

Rejection semantics (documented in docs/guides/governance.md):

- ``single-veto`` (the default): one ``reject`` or ``refine`` vote settles the
  gate as rejected.
- ``majority``: the gate is rejected once rejecting votes are more than half of
  ``requiredApprovals``, or once an ``approversList`` leaves too few voters to
  reach the quorum.
- In both, the gate is accepted once ``accept``/``edit-accept`` votes reach
  ``requiredApprovals``. A timeout always rejects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from openwop_bridge.core.errors import ConflictError, PayloadTooLargeError, ValidationError

EXIT_ACTIONS = frozenset({"accept", "reject", "refine", "edit-accept"})
ACCEPTING = frozenset({"accept", "edit-accept"})
REJECTING = frozenset({"reject", "refine"})

# Earlier shapes: {decision: approved|rejected|…} and RFC 0051's gate resume {decision: granted|rejected, reason}.
_LEGACY_TO_ACTION = {
    "approved": "accept",
    "granted": "accept",
    "rejected": "reject",
    "timeout": "reject",
    "cancelled": "reject",
}


def canonical_action(action: Any) -> Any:
    """The five-action name for an action: ``edit`` is ``edit-accept``; anything else is returned as is."""
    return "edit-accept" if action == "edit" else action


def legacy_action(decision: Any) -> str | None:
    """The action a legacy ``decision`` (``approved``, ``granted``, ``rejected``, ``timeout``,
    ``cancelled``) stands for, or None when it is not one of them."""
    return _LEGACY_TO_ACTION.get(decision) if isinstance(decision, str) else None


def action_of(value: Any) -> str:
    """The action of a settled approval's resume value: ``{action}``, a legacy ``{decision}``
    or a bare action name (``""`` when it names none)."""
    if isinstance(value, str):
        return str(canonical_action(value))
    if not isinstance(value, Mapping):
        return ""
    if value.get("action"):
        return str(canonical_action(value["action"]))
    return legacy_action(value.get("decision")) or ""


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """One normalised answer to an approval interrupt."""

    action: str
    feedback: str | None = None
    refine_feedback: Mapping[str, Any] | None = None
    edited_artifact_data: Any = None
    has_edit: bool = False
    question: str | None = None
    voter: str | None = None
    override: bool = False
    reason: str | None = None

    def as_vote(self, voter: str, at: str) -> dict[str, Any]:
        """The audit record of this answer as a quorum vote."""
        vote: dict[str, Any] = {"voter": voter, "action": self.action, "at": at}
        if self.feedback:
            vote["feedback"] = self.feedback
        if self.refine_feedback:
            vote["refineFeedback"] = dict(self.refine_feedback)
        if self.reason:
            vote["reason"] = self.reason
        if self.override:
            vote["override"] = True
        if self.has_edit:
            vote["editedArtifactData"] = self.edited_artifact_data
        return vote


def _legacy_decision(value: Mapping[str, Any], feedback: str | None, refine: Any) -> tuple[Any, Any]:
    """The action and refine feedback of a legacy ``{decision: …}`` answer."""
    legacy = value["decision"]
    action = legacy_action(legacy)
    if action is None:
        raise ValidationError(
            "'decision' must be one of approved, granted, rejected, timeout, cancelled",
            details={"decision": legacy},
        )
    if legacy == "rejected" and feedback:
        return "refine", refine or {"scope": "whole", "text": feedback}
    return action, refine


def _check_action(action: Any, allowed: list[Any]) -> None:
    """Refuse an action that is not an approval action, or not one this interrupt allows."""
    if action not in EXIT_ACTIONS and action != "ask":
        raise ValidationError(
            "'action' must be one of accept, reject, refine, edit-accept, ask",
            details={"action": action, "allowedActions": allowed},
        )
    if action not in allowed:
        raise ValidationError(
            f"action {action!r} is not allowed on this approval",
            details={"action": action, "allowedActions": allowed},
        )


def _refine_feedback(action: str, refine: Any, feedback: str | None) -> Any:
    """The refine feedback: required (from ``feedback`` when absent) for ``refine``, an object when given."""
    if action == "refine":
        if refine is None and feedback:
            refine = {"scope": "whole", "text": feedback}
        if not isinstance(refine, Mapping) or refine.get("scope") not in ("whole", "section", "items"):
            raise ValidationError("'refine' needs refineFeedback {scope: whole|section|items, text?, tags?}")
    elif refine is not None and not isinstance(refine, Mapping):
        raise ValidationError("'refineFeedback' must be an object")
    return refine


def _question(action: str, value: Mapping[str, Any], feedback: str | None) -> Any:
    """The question of an ``ask`` (``feedback`` when no ``question`` is given)."""
    question = value.get("question")
    if action == "ask":
        question = question if isinstance(question, str) and question.strip() else feedback
        if not question:
            raise ValidationError("'ask' needs a 'question'")
    return question


def named_voter(value: Any) -> str | None:
    """Whom an answer names as its voter (``decidedBy``, else ``voter``), when it names someone well-formed."""
    if not isinstance(value, Mapping):
        return None
    named = value.get("decidedBy") or value.get("voter")
    return named if isinstance(named, str) and named else None


def _voter(value: Mapping[str, Any]) -> Any:
    """Who decided (``decidedBy`` or ``voter``), when named."""
    voter = value.get("decidedBy") or value.get("voter")
    if voter is not None and (not isinstance(voter, str) or not voter):
        raise ValidationError("'decidedBy' / 'voter' must be a non-empty string")
    return voter


def _override(value: Mapping[str, Any], action: str) -> tuple[bool, Any]:
    """Whether the answer overrides the quorum, and its reason; an override needs a reason and accepts."""
    override = value.get("override", False)
    if not isinstance(override, bool):
        raise ValidationError("'override' must be a boolean")
    reason = value.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ValidationError("'reason' must be a string")
    if override and not (reason and reason.strip()):
        raise ValidationError("an override needs a non-empty 'reason'")
    if override and action not in ACCEPTING:
        raise ValidationError("an override can only accept")
    return override, reason


def normalize_answer(data: Mapping[str, Any], value: Any) -> ApprovalAnswer:
    """Turn a submitted resume value into an :class:`ApprovalAnswer`.

    Accepts the canonical ``{action, …}`` shape, ``edit`` for ``edit-accept``
    and the legacy ``{decision: approved|rejected|timeout|cancelled}`` form
    (``rejected`` with feedback becomes ``refine``). The action must be one the
    interrupt allows.
    """
    if isinstance(value, str):
        value = {"action": value}
    if not isinstance(value, Mapping):
        raise ValidationError("an approval answer must be an object with an 'action'")
    action = value.get("action")
    feedback = value.get("feedback")
    if feedback is not None and not isinstance(feedback, str):
        raise ValidationError("'feedback' must be a string")
    refine = value.get("refineFeedback")
    if action is None and "decision" in value:
        action, refine = _legacy_decision(value, feedback, refine)
    action = canonical_action(action)
    _check_action(action, list(data.get("actions", [])))
    refine = _refine_feedback(action, refine, feedback)
    has_edit = "editedArtifactData" in value
    if action == "edit-accept" and not has_edit:
        raise ValidationError("'edit-accept' needs 'editedArtifactData'")
    question = _question(action, value, feedback)
    voter = _voter(value)
    override, reason = _override(value, action)
    return ApprovalAnswer(
        action=action,
        feedback=feedback,
        refine_feedback=dict(refine) if isinstance(refine, Mapping) else None,
        edited_artifact_data=value.get("editedArtifactData"),
        has_edit=has_edit,
        question=question,
        voter=voter,
        override=override,
        reason=reason,
    )


@dataclass(frozen=True, slots=True)
class AskLimits:
    """Bounds on ``ask``, the side channel that keeps an approval pending.

    Every ``ask`` is stored on the interrupt (``askExchanges``) and logged as an
    event, so without bounds one link could grow an interrupt forever. Sizes are
    UTF-8 bytes. A refusal stores nothing and leaves the interrupt answerable.

    - ``question_bytes``: the largest question (413 ``payload_too_large``);
    - ``answer_bytes``: a longer answer from the ask service is clipped to it;
    - ``per_interrupt``: asks one interrupt keeps (409 ``conflict``);
    - ``per_asker``: asks of one asker on one interrupt — a principal, a link's
      subject, or every anonymous link together (409 ``conflict``);
    - ``interrupt_bytes``: questions and answers one interrupt holds in all
      (413 ``payload_too_large``; a shorter question may still fit).
    """

    question_bytes: int = 4096
    answer_bytes: int = 4096
    per_interrupt: int = 50
    per_asker: int = 10
    interrupt_bytes: int = 128 * 1024

    def check_question(self, question: str) -> None:
        """Refuse a question over ``question_bytes``."""
        size = len(question.encode("utf-8"))
        if size > self.question_bytes:
            raise PayloadTooLargeError(
                f"a question may hold at most {self.question_bytes} bytes",
                details={"limit": "askQuestionBytes", "maxBytes": self.question_bytes, "bytes": size},
            )

    def clip_answer(self, answer: str) -> str:
        """The answer, cut to ``answer_bytes`` (ending in an ellipsis) when longer."""
        data = answer.encode("utf-8")
        if len(data) <= self.answer_bytes:
            return answer
        ellipsis = "\u2026"
        room = max(self.answer_bytes - len(ellipsis.encode("utf-8")), 0)
        return data[:room].decode("utf-8", errors="ignore") + ellipsis

    def check_room(self, asks: Sequence[Mapping[str, Any]], asker: str | None, question: str, answer: str) -> None:
        """Refuse one more exchange when the interrupt or this asker (None: any) used up its asks or bytes."""
        self.check_question(question)
        if len(asks) >= self.per_interrupt:
            raise ConflictError(
                f"this interrupt already holds {self.per_interrupt} questions; it can still be decided",
                details={"limit": "asksPerInterrupt", "max": self.per_interrupt},
            )
        if asker is not None and sum(1 for a in asks if a.get("askedBy") == asker) >= self.per_asker:
            raise ConflictError(
                f"{asker!r} already asked {self.per_asker} questions here; the interrupt can still be decided",
                details={"limit": "asksPerAsker", "max": self.per_asker, "askedBy": asker},
            )
        used = sum(exchange_bytes(a) for a in asks)
        if used + len(question.encode("utf-8")) + len(answer.encode("utf-8")) > self.interrupt_bytes:
            raise PayloadTooLargeError(
                f"the questions and answers of this interrupt may hold at most {self.interrupt_bytes} bytes",
                details={"limit": "askBytesPerInterrupt", "maxBytes": self.interrupt_bytes, "usedBytes": used},
            )


def exchange_bytes(exchange: Mapping[str, Any]) -> int:
    """The UTF-8 bytes of a stored exchange's question and answer."""
    return sum(len(str(exchange.get(name) or "").encode("utf-8")) for name in ("question", "answer"))


def required_approvals(data: Mapping[str, Any]) -> int:
    """How many accepting votes a gate needs (``requiredApprovals``, 1 when absent)."""
    return int(data.get("requiredApprovals") or 1)


def counts_people(data: Mapping[str, Any]) -> bool:
    """Whether a gate is a quorum: it needs more than one approval, so each vote must name a person.

    On such a gate every signed link names the person it is for, and a link that names no one
    cannot vote (a second vote through it would let one person fill the quorum).
    """
    return required_approvals(data) > 1


def distinct_approvers(data: Mapping[str, Any]) -> list[str]:
    """The principals ``approversList`` names, each once (a name listed twice is still one voter)."""
    listed = data.get("approversList")
    return list(dict.fromkeys(str(a) for a in listed)) if listed else []


@dataclass(frozen=True, slots=True)
class Tally:
    """Where a quorum stands after counting the votes."""

    outcome: str  # "pending" | "accepted" | "rejected"
    accepts: int
    rejects: int
    required: int
    policy: str
    votes: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)

    def progress(self) -> dict[str, Any]:
        """The vote count reported to callers and frontends."""
        return {
            "accept": self.accepts,
            "reject": self.rejects,
            "required": self.required,
            "rejectionPolicy": self.policy,
        }


def tally(data: Mapping[str, Any], votes: Sequence[Mapping[str, Any]], *, bypass: bool = False) -> Tally:
    """Count votes under the interrupt's quorum rules (see the module docstring)."""
    required = required_approvals(data)
    policy = str(data.get("rejectionPolicy") or "single-veto")
    accepts = sum(1 for v in votes if v["action"] in ACCEPTING)
    rejects = sum(1 for v in votes if v["action"] in REJECTING)
    approvers = distinct_approvers(data)
    outcome = "pending"
    if bypass or accepts >= required:
        outcome = "accepted"
    elif (
        (policy == "single-veto" and rejects >= 1)
        or (policy == "majority" and rejects * 2 > required)
        or (approvers and accepts + (len(approvers) - accepts - rejects) < required)
    ):
        outcome = "rejected"
    return Tally(outcome, accepts, rejects, required, policy, tuple(votes))


def quorum_label(t: Tally) -> str:
    """The synthetic principal ``quorum:<n>-of-<m>`` for a multi-approver decision."""
    return f"quorum:{t.accepts if t.outcome == 'accepted' else t.rejects}-of-{len(t.votes)}"


def final_value(t: Tally, closing: Mapping[str, Any], decided_at: str) -> dict[str, Any]:
    """The resume value the gate's node receives once the quorum settled.

    ``decidedBy`` is the principal whose vote closed the gate; for multi-approver
    gates the votes themselves ride along.
    """
    accepted = t.outcome == "accepted"
    action = (
        closing["action"]
        if closing["action"] in (ACCEPTING if accepted else REJECTING)
        else ("accept" if accepted else "reject")
    )
    value: dict[str, Any] = {"action": action, "decidedBy": closing["voter"], "decidedAt": decided_at}
    if isinstance(closing.get("subject"), Mapping):
        value["decidedBySubject"] = dict(closing["subject"])
    for name in ("feedback", "refineFeedback", "reason"):
        if name in closing:
            value[name] = closing[name]
    if accepted:
        edits = [v for v in t.votes if "editedArtifactData" in v]
        if edits:
            value["action"] = "edit-accept"
            value["editedArtifactData"] = edits[-1]["editedArtifactData"]
    if t.required > 1 or len(t.votes) > 1:
        value["votes"] = [dict(v) for v in t.votes]
        value["quorum"] = quorum_label(t)
    return value


def timeout_value(decided_at: str) -> dict[str, Any]:
    """What an approval resolves to when its deadline passes: always a rejection."""
    return {
        "action": "timeout",
        "decision": "rejected",
        "outcome": "rejected",
        "reason": "timeout",
        "decidedBy": "system:timeout",
        "decidedAt": decided_at,
    }
