"""The ``clarification`` kind: one or more questions, every one answered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openwop_bridge.core.errors import ValidationError
from openwop_bridge.core.kinds.base import Kind, present
from openwop_bridge.core.kinds.schema import validate_against


class ClarificationKind(Kind):
    """Questions with optional per-question schemas; answers come back as a list of ``{id, answer}``."""

    name = "clarification"
    data_def = "ClarificationData"
    suspend_reason = "clarification"
    label = "Clarification"

    def title(self, data: Mapping[str, Any]) -> str:
        questions = data.get("questions") or [{}]
        first = str(questions[0].get("question", "Clarification"))
        return first if len(questions) == 1 else f"{first} (+{len(questions) - 1} more)"

    def prompt(self, data: Mapping[str, Any]) -> str:
        return " ".join(str(q.get("question", "")) for q in data.get("questions", []))

    def answer_schema(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """``{answers: {<question id>: answer}}``, each answer under its question's schema (a string by default)."""
        questions = data.get("questions", [])
        answers = {
            q["id"]: {**(q.get("schema") or {"type": "string"}), "title": q.get("question", q["id"])} for q in questions
        }
        return {
            "type": "object",
            "required": ["answers"],
            "properties": {
                "answers": {
                    "type": "object",
                    "required": [q["id"] for q in questions],
                    "properties": answers,
                    "additionalProperties": False,
                }
            },
        }

    def normalize_resume(self, data: Mapping[str, Any], value: Any) -> dict[str, Any]:
        return normalize_clarification(data, value)

    def coerce_short_answer(self, data: Mapping[str, Any], value: Any) -> Any:
        """``{answers}`` for an object keyed by question ids, or for a bare value when there is one question."""
        questions = [q.get("id") for q in data.get("questions", []) if isinstance(q, Mapping)]
        if isinstance(value, Mapping) and "answers" in value:
            return value
        if isinstance(value, Mapping) and value and set(value) <= set(questions):
            return {"answers": dict(value)}
        if len(questions) == 1 and not isinstance(value, Mapping):
            return {"answers": {questions[0]: value}}
        return value


CLARIFICATION = ClarificationKind()


def normalize_clarification(data: Mapping[str, Any], value: Any) -> dict[str, Any]:
    """Accept ``{answers: [{id, answer}]}`` or ``{answers: {id: answer}}``; return the list form.

    Every question must be answered, no unknown ids, and each answer must match
    the question's own ``schema`` when it has one.
    """
    if not isinstance(value, Mapping) or "answers" not in value:
        raise ValidationError("a clarification answer must be an object with 'answers'")
    raw = value["answers"]
    answers: dict[str, Any] = {}
    if isinstance(raw, Mapping):
        answers = dict(raw)
    elif isinstance(raw, list):
        for item in raw:
            if not isinstance(item, Mapping) or "id" not in item or "answer" not in item:
                raise ValidationError("each entry of 'answers' needs 'id' and 'answer'")
            answers[str(item["id"])] = item["answer"]
    else:
        raise ValidationError("'answers' must be a list of {id, answer} or an object keyed by question id")
    questions = {q["id"]: q for q in data["questions"]}
    unknown = sorted(set(answers) - set(questions))
    missing = sorted(set(questions) - set(answers))
    if unknown or missing:
        raise ValidationError(
            "the answers do not match the questions",
            details={"unknownQuestionIds": unknown, "unansweredQuestionIds": missing},
        )
    for qid, question in questions.items():
        if question.get("schema"):
            validate_against(question["schema"], answers[qid], f"answers/{qid}")
    return {"answers": [{"id": qid, "answer": answers[qid]} for qid in questions]}


def clarification(
    questions: Sequence[Mapping[str, Any]] | Sequence[str],
    *,
    context_type: str | None = None,
    key: str | None = None,
    timeout_ms: int | None = None,
) -> dict[str, Any]:
    """A ``clarification`` interrupt payload; plain strings become ``q1``, ``q2``…"""
    qs: list[dict[str, Any]] = []
    items: list[Any] = list(questions)
    for i, q in enumerate(items):
        qs.append({"id": f"q{i + 1}", "question": q} if isinstance(q, str) else dict(q))
    data: dict[str, Any] = {"questions": qs, **present(contextType=context_type)}
    return CLARIFICATION.payload(data, key=key, timeout_ms=timeout_ms)
