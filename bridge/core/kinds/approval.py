"""The ``approval`` kind: a decision among the five actions, with votes, quorum and governance.

The votes, the legacy vocabularies and the quorum tallies live in
:mod:`openwop_bridge.core.approvals`; the decision that applies a vote in
:mod:`openwop_bridge.core.decisions.approval`. This module says what an approval is: its
payload, its title, the answer it advertises, and that it fails closed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openwop_bridge.core import approvals, assurance
from openwop_bridge.core.kinds.base import Kind, present

#: ``artifactType`` of an approval that gates one tool call (``artifactData: {toolCallId, name, args}``).
TOOL_CALL_ARTIFACT = "tool-call"

_REFINE_FEEDBACK = {
    "type": "object",
    "required": ["scope"],
    "properties": {
        "scope": {"enum": ["whole", "section", "items"]},
        "sectionPath": {"type": "string"},
        "itemIds": {"type": "array", "items": {"type": "string"}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "text": {"type": "string"},
    },
}


class ApprovalKind(Kind):
    """Approve, reject, refine, edit or ask; a cancel or a timeout rejects it."""

    name = "approval"
    data_def = "ApprovalData"
    waiting_status = "waiting-approval"
    suspend_reason = "approval"
    label = "Approval"
    votes = True
    fails_closed = True

    def data_problems(self, data: Mapping[str, Any]) -> list[str]:
        """A quorum the listed approvers cannot reach would settle rejected on the first vote: refused instead.
        ``separationOfDuties`` is a boolean; ``assurance`` is ``bearer`` or ``key-bound``."""
        if "separationOfDuties" in data and not isinstance(data["separationOfDuties"], bool):
            return ["data.separationOfDuties: must be true or false"]
        floor = assurance.data_problem(data)
        if floor is not None:
            return [floor]
        required = data.get("requiredApprovals") or 1
        approvers = approvals.distinct_approvers(data)  # one person listed twice is one voter
        if approvers and required > len(approvers):
            principals = "principal" if len(approvers) == 1 else "principals"
            return [
                f"data.requiredApprovals: {required} approvals cannot be reached"
                f" by the {len(approvers)} distinct {principals} in approversList"
            ]
        return []

    def title(self, data: Mapping[str, Any]) -> str:
        return str(data.get("title", "Approval"))

    def prompt(self, data: Mapping[str, Any]) -> str:
        return str(data.get("title", "Approve?")) + (f" — {data['description']}" if data.get("description") else "")

    def answer_schema(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """One variant per allowed action, each ``{action, …}`` with the fields that action needs."""
        variants = []
        for action in data.get("actions", []):
            props: dict[str, Any] = {"action": {"const": action}}
            required = ["action"]
            if action in ("accept", "reject"):
                props["feedback"] = {"type": "string", "title": "Feedback"}
            elif action == "refine":
                props["refineFeedback"] = _REFINE_FEEDBACK
                required.append("refineFeedback")
            elif action == "edit-accept":
                props["editedArtifactData"] = {"title": "Edited artifact", "default": data.get("artifactData")}
                required.append("editedArtifactData")
            elif action == "ask":
                props["question"] = {"type": "string", "title": "Your question"}
                required.append("question")
            variants.append({"type": "object", "title": action, "required": required, "properties": props})
        return {"oneOf": variants} if len(variants) > 1 else (variants[0] if variants else {"type": "object"})

    def normalize_resume(self, data: Mapping[str, Any], value: Any) -> approvals.ApprovalAnswer:
        """The answer as an :class:`~openwop_bridge.core.approvals.ApprovalAnswer` (votes are applied by resolution)."""
        return approvals.normalize_answer(data, value)

    def coerce_short_answer(self, data: Mapping[str, Any], value: Any) -> Any:
        """``{action}`` for a bare action name, ``accept`` or ``reject`` for true or false."""
        if isinstance(value, bool):
            return {"action": "accept" if value else "reject"}
        if isinstance(value, str):
            return {"action": value}
        return value

    @staticmethod
    def action_of(value: Any) -> str:
        """The action of a settled approval's resume value (``{action}``, a legacy ``{decision}``, a bare name)."""
        return approvals.action_of(value)

    @staticmethod
    def is_tool_call(payload: Mapping[str, Any]) -> bool:
        """True for an approval that gates one tool call (``artifactType: tool-call`` with a ``toolCallId``)."""
        data = payload.get("data") or {}
        artifact = data.get("artifactData")
        return (
            payload.get("kind") == ApprovalKind.name
            and data.get("artifactType") == TOOL_CALL_ARTIFACT
            and isinstance(artifact, Mapping)
            and isinstance(artifact.get("toolCallId"), str)
        )


APPROVAL = ApprovalKind()


def approval(
    title: str,
    *,
    actions: Sequence[str] = ("accept", "reject"),
    artifact_id: str = "artifact",
    artifact_type: str = "generic",
    description: str | None = None,
    artifact_data: Any = None,
    required_approvals: int | None = None,
    approvers: Sequence[str] | None = None,
    rejection_policy: str | None = None,
    separation_of_duties: bool | None = None,
    assurance: str | None = None,
    key: str | None = None,
    timeout_ms: int | None = None,
    resume_schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``approval`` interrupt payload.

    ``separation_of_duties=True``: whoever requested the run may not decide it
    (:mod:`openwop_bridge.core.separation`); ``False`` keeps a host-wide default off.
    ``assurance="key-bound"``: a decision needs the person's passkey over exactly what is decided
    (:mod:`openwop_bridge.core.assurance`).
    """
    data: dict[str, Any] = {
        "artifactId": artifact_id,
        "artifactType": artifact_type,
        "title": title,
        "actions": [approvals.canonical_action(a) for a in actions],
        **present(
            description=description,
            artifactData=artifact_data,
            requiredApprovals=required_approvals,
            approversList=None if approvers is None else list(approvers),
            rejectionPolicy=rejection_policy,
            separationOfDuties=separation_of_duties,
            assurance=assurance,
        ),
    }
    return APPROVAL.payload(data, key=key, timeout_ms=timeout_ms, resume_schema=resume_schema)
