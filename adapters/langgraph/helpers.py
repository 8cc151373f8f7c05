"""Helpers for LangGraph nodes: typed human-in-the-loop calls that keep their OpenWOP kind.

Each helper calls LangGraph's own ``interrupt()`` with a plain-JSON value
``{"openwop": <InterruptPayload without key>}`` and turns the answer into a typed
result. Served through the bridge, the interrupt is an ``approval`` /
``clarification`` / ``low-confidence`` / ``conversation.*`` interrupt with signed
links, quorum, timeouts and AG-UI; under plain LangGraph, answer it with
``Command(resume={interrupt_id: value})`` using the same value shapes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.config import get_config
from langgraph.types import interrupt
from openwop_bridge import kinds
from openwop_bridge.langgraph.payloads import MARKER


@dataclass(frozen=True, slots=True)
class ApprovalResult:
    """A person's decision on an approval."""

    action: str
    decided_by: str | None = None
    feedback: str | None = None
    refine_feedback: Mapping[str, Any] | None = None
    edited: Any = None
    votes: list[Mapping[str, Any]] = field(default_factory=list)
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def approved(self) -> bool:
        """True for ``accept`` and ``edit-accept``."""
        return self.action in ("accept", "edit-accept")

    @classmethod
    def from_value(cls, value: Any) -> ApprovalResult:
        """Read an answer (OpenWOP ``{action, …}``, legacy ``{decision}`` or a bare action)."""
        if isinstance(value, str):
            value = {"action": value}
        if not isinstance(value, Mapping):
            raise TypeError(f"an approval answer must be an object with an action, got {value!r}")
        return cls(
            action=kinds.APPROVAL.action_of(value),
            decided_by=value.get("decidedBy"),
            feedback=value.get("feedback"),
            refine_feedback=value.get("refineFeedback"),
            edited=value.get("editedArtifactData"),
            votes=list(value.get("votes") or []),
            raw=dict(value),
        )


def _ask(payload: Mapping[str, Any]) -> Any:
    return interrupt({MARKER: {k: v for k, v in payload.items() if k != "key"}})


def approval(
    title: str,
    *,
    actions: Sequence[str] = ("accept", "reject"),
    artifact: Any = None,
    artifact_id: str = "artifact",
    artifact_type: str = "generic",
    description: str | None = None,
    required_approvals: int | None = None,
    approvers: Sequence[str] | None = None,
    rejection_policy: str | None = None,
    timeout_ms: int | None = None,
    separation_of_duties: bool | None = None,
) -> ApprovalResult:
    """Ask for an approval (quorum, approvers and deadline optional); returns the decision.

    ``separation_of_duties=True``: whoever started the run may not decide it.
    """
    payload = kinds.approval(
        title,
        actions=actions,
        artifact_id=artifact_id,
        artifact_type=artifact_type,
        description=description,
        artifact_data=artifact,
        required_approvals=required_approvals,
        approvers=approvers,
        rejection_policy=rejection_policy,
        timeout_ms=timeout_ms,
        separation_of_duties=separation_of_duties,
    )
    return ApprovalResult.from_value(_ask(payload))


def clarify(
    questions: Sequence[str] | Sequence[Mapping[str, Any]],
    *,
    context_type: str | None = None,
    timeout_ms: int | None = None,
) -> dict[str, Any]:
    """Ask questions (plain strings become ``q1``, ``q2``…); returns ``{question id: answer}``."""
    payload = kinds.clarification(questions, context_type=context_type, timeout_ms=timeout_ms)
    value = _ask(payload)
    answers = value.get("answers", value) if isinstance(value, Mapping) else value
    if isinstance(answers, list):
        return {str(a["id"]): a["answer"] for a in answers}
    if isinstance(answers, Mapping):
        return dict(answers)
    only = payload["data"]["questions"]
    return {only[0]["id"]: answers} if len(only) == 1 else {"answer": answers}


def _threshold(explicit: float | None) -> float:
    for candidate in (explicit, _configurable().get("escalationThreshold")):
        value = kinds.finite_confidence(candidate)
        if value is not None:
            return value
    return 0.7


def _configurable() -> Mapping[str, Any]:
    try:
        configurable: Mapping[str, Any] = get_config().get("configurable", {})
    except RuntimeError:
        return {}
    return configurable


def escalate_if_low_confidence(
    agent_id: str,
    decision: Any,
    confidence: float | None,
    threshold: float | None = None,
    *,
    resume_schema: Mapping[str, Any] | None = None,
) -> Any:
    """Return the decision, or — below the threshold — the decision a person ratified.

    The threshold is the argument, else the run's ``escalationThreshold`` (served through the
    bridge: the run's, else the host's ``EngineConfig.default_threshold``), else 0.7.
    Equal to the threshold continues; no confidence, NaN or infinity never escalate.
    ``resume_schema`` (JSON Schema) is what a ratified decision must look like: served
    through the bridge, an answer that does not match it is refused (400) and the
    question stays open.
    """
    usable = kinds.finite_confidence(confidence)
    limit = _threshold(threshold)
    if usable is None or usable >= limit:
        return decision
    data = {"agentId": agent_id, "threshold": limit, "observed": usable, "decision": decision}
    return interrupt({MARKER: kinds.LOW_CONFIDENCE.payload(data, resume_schema=resume_schema)})


CLOSED = "openwop_closed"


class GraphConversation:
    """A multi-turn conversation from inside a LangGraph node; see :func:`conversation`."""

    def __init__(self, conversation_id: str, title: str | None, initial_prompt: str | None) -> None:
        self.id = conversation_id
        self.title = title
        self.initial_prompt = initial_prompt
        self.turn = 0
        self.closed = False
        self.outcome: Any = None

    def _spec(self, **extra: Any) -> dict[str, Any]:
        spec: dict[str, Any] = {"id": self.id, "turn": self.turn}
        if self.title:
            spec["title"] = self.title
        if self.initial_prompt:
            spec["initialPrompt"] = self.initial_prompt
        spec.update(extra)
        return spec

    def exchange(self, prompt: str, *, outcome_schema: Mapping[str, Any] | None = None) -> Any:
        """Ask one turn; returns the answer, or None when the person closed the conversation."""
        if self.closed:
            raise RuntimeError(f"conversation {self.id} is closed")
        self.turn += 1
        data: dict[str, Any] = {"conversationId": self.id, "prompt": prompt, "turnIndex": self.turn}
        if outcome_schema is not None:
            data["outcomeSchema"] = dict(outcome_schema)
        value = interrupt({MARKER: {**kinds.CONVERSATION_EXCHANGE.payload(data), "conversation": self._spec()}})
        if isinstance(value, Mapping) and value.get(CLOSED):
            self.closed = True
            self.outcome = value.get("outcome")
            return None
        return value

    def close(self, outcome: Any = None, *, reason: str | None = None, message: str | None = None) -> None:
        """End the conversation with an outcome (the bridge records it and answers at once)."""
        if self.closed:
            return
        data: dict[str, Any] = {"conversationId": self.id}
        if reason:
            data["reason"] = reason
        interrupt(
            {
                MARKER: {
                    **kinds.CONVERSATION_CLOSE.payload(data),
                    "conversation": self._spec(outcome=outcome, message=message),
                }
            }
        )
        self.closed = True
        self.outcome = outcome


def conversation(
    title: str | None = None, *, initial_prompt: str | None = None, conversation_id: str = "main"
) -> GraphConversation:
    """Hold a conversation: ``conv.exchange(prompt)`` per turn, ``conv.close(outcome)`` to end.

    Each turn is one ``interrupt()``, so the node replays earlier turns in order
    when LangGraph re-runs it; the bridge folds them into one OpenWOP conversation.
    """
    return GraphConversation(conversation_id, title, initial_prompt)
