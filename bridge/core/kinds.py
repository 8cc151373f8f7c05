"""The eight interrupt kinds: payload checks, builders and resume normalisation.

Everything here is pure: a payload or a resume value goes in, a normalised
value or a :class:`~bridge.core.errors.ValidationError` comes out. Approvals, which
carry votes and roles, live in :mod:`bridge.approval`; conversation turns in
:mod:`bridge.runtime.conversation`.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from bridge import spec
from bridge.core.errors import CorrelationMismatchError, ValidationError

KINDS: tuple[str, ...] = (
    "approval",
    "clarification",
    "external-event",
    "custom",
    "conversation.start",
    "conversation.exchange",
    "conversation.close",
    "low-confidence",
)

CONVERSATION_KINDS = frozenset({"conversation.start", "conversation.exchange", "conversation.close"})

_DATA_DEFS = {
    "approval": "ApprovalData",
    "clarification": "ClarificationData",
    "external-event": "ExternalEventData",
    "custom": "CustomData",
    "conversation.start": "ConversationStartData",
    "conversation.exchange": "ConversationExchangeData",
    "conversation.close": "ConversationCloseData",
    "low-confidence": "LowConfidenceData",
}

#: Run status while an interrupt of this kind is the one the run waits on.
WAITING_STATUS: Mapping[str, str] = {
    "approval": "waiting-approval",
    "low-confidence": "waiting-approval",
    "conversation.exchange": "waiting-approval",
    "clarification": "waiting-input",
    "custom": "waiting-input",
    "conversation.start": "waiting-input",
    "conversation.close": "waiting-input",
    "external-event": "waiting-external",
}

_ALIASES = {"reason": "kind", "resumeKey": "key", "answerSchema": "resumeSchema"}
_TOP_LEVEL = {"kind", "key", "data", "resumeSchema", "timeoutMs"}


def _errors(validator: Draft202012Validator, value: Any, prefix: str) -> list[str]:
    out = []
    for e in validator.iter_errors(value):
        where = "/".join(str(p) for p in e.absolute_path)
        out.append(f"{prefix}{'/' + where if where else ''}: {e.message}")
    return out


@functools.lru_cache(maxsize=512)
def _compiled(schema_json: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema_json))


def compile_schema(schema: Mapping[str, Any], what: str = "resumeSchema") -> Draft202012Validator:
    """A cached validator for a JSON Schema supplied by a workflow or node.

    Raises :class:`ValidationError` when the schema itself is not valid JSON Schema.
    """
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValidationError(f"{what} is not a valid JSON Schema: {exc.message}") from exc
    return _compiled(text)


def validate_against(schema: Mapping[str, Any] | None, value: Any, what: str) -> None:
    """Validate a value against a JSON Schema; :class:`ValidationError` lists the problems."""
    if not schema:
        return
    problems = _errors(compile_schema(schema), value, what)
    if problems:
        raise ValidationError(f"{what} does not match its schema", details={"problems": problems[:20]})


def payload_key(payload: Mapping[str, Any], default_key: str) -> Any:
    """The key a payload names (``key`` or its alias ``resumeKey``), without checking the rest."""
    for name, canonical in ((n, _ALIASES.get(n, n)) for n in payload):
        if canonical == "key":
            return payload[name]
    return default_key


def normalize_payload(payload: Mapping[str, Any], default_key: str) -> dict[str, Any]:
    """Check an ``InterruptPayload`` and return it in canonical field names.

    Accepts the ``suspend`` aliases (``reason``, ``resumeKey``, ``answerSchema``)
    and fills ``key`` when absent. The result validates against
    ``suspend-request.schema.json``.
    """
    out: dict[str, Any] = {}
    for name, value in payload.items():
        canonical = _ALIASES.get(name, name)
        if canonical in out:
            raise ValidationError(f"interrupt payload sets both {name!r} and {canonical!r}")
        out[canonical] = value
    unknown = set(out) - _TOP_LEVEL
    if unknown:
        raise ValidationError(f"interrupt payload has unknown field(s): {', '.join(sorted(unknown))}")
    out.setdefault("key", default_key)
    out.setdefault("data", {})
    kind = out.get("kind")
    if kind not in KINDS:
        raise ValidationError(f"interrupt kind must be one of {', '.join(KINDS)}; got {kind!r}")
    problems = []
    key = out["key"]
    if not isinstance(key, str) or not 1 <= len(key) <= 256:
        problems.append("key: must be a string of 1 to 256 characters")
    timeout = out.get("timeoutMs")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 0):
        problems.append("timeoutMs: must be a non-negative integer")
    if "resumeSchema" in out and not isinstance(out["resumeSchema"], dict):
        problems.append("resumeSchema: must be a JSON Schema object")
    problems += _errors(spec.validator("suspend-request.schema.json", _DATA_DEFS[kind]), out["data"], "data")
    if problems:
        raise ValidationError(f"invalid {kind} interrupt payload", details={"problems": problems})
    if "resumeSchema" in out:
        compile_schema(out["resumeSchema"])
    return out


def waiting_status(kind: str) -> str:
    """The run status while waiting on an interrupt of this kind."""
    return WAITING_STATUS.get(kind, "waiting-input")


# --- builders for node authors --------------------------------------------------


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
    key: str | None = None,
    timeout_ms: int | None = None,
    resume_schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``approval`` interrupt payload."""
    data: dict[str, Any] = {
        "artifactId": artifact_id,
        "artifactType": artifact_type,
        "title": title,
        "actions": [("edit-accept" if a == "edit" else a) for a in actions],
    }
    if description is not None:
        data["description"] = description
    if artifact_data is not None:
        data["artifactData"] = artifact_data
    if required_approvals is not None:
        data["requiredApprovals"] = required_approvals
    if approvers is not None:
        data["approversList"] = list(approvers)
    if rejection_policy is not None:
        data["rejectionPolicy"] = rejection_policy
    return _payload("approval", data, key, timeout_ms, resume_schema)


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
    data: dict[str, Any] = {"questions": qs}
    if context_type is not None:
        data["contextType"] = context_type
    return _payload("clarification", data, key, timeout_ms, None)


def external_event(
    event_type: str,
    correlation: Mapping[str, Any],
    *,
    key: str | None = None,
    timeout_ms: int | None = None,
) -> dict[str, Any]:
    """An ``external-event`` interrupt payload."""
    data = {"eventType": event_type, "correlation": dict(correlation)}
    return _payload("external-event", data, key, timeout_ms, None)


def custom(
    custom_kind: str,
    payload: Any = None,
    *,
    key: str | None = None,
    timeout_ms: int | None = None,
    resume_schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``custom`` interrupt payload."""
    data: dict[str, Any] = {"customKind": custom_kind}
    if payload is not None:
        data["payload"] = payload
    return _payload("custom", data, key, timeout_ms, resume_schema)


def _payload(
    kind: str, data: dict[str, Any], key: str | None, timeout_ms: int | None, schema: Mapping[str, Any] | None
) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": kind, "data": data}
    if key is not None:
        out["key"] = key
    if timeout_ms is not None:
        out["timeoutMs"] = timeout_ms
    if schema is not None:
        out["resumeSchema"] = dict(schema)
    return out


# --- resume values --------------------------------------------------------------


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


def correlation_matches(correlation: Mapping[str, Any], value: Any) -> bool:
    """True when the event body (or its ``correlation`` / ``eventPayload``) carries
    every key of ``correlation`` with an equal value."""
    candidates = [value]
    if isinstance(value, Mapping):
        candidates += [value.get("correlation"), value.get("eventPayload")]
    for candidate in candidates:
        if isinstance(candidate, Mapping) and all(k in candidate and candidate[k] == v for k, v in correlation.items()):
            return True
    return False


def normalize_external_event(data: Mapping[str, Any], value: Any) -> Any:
    """Check an external event against the interrupt's correlation (422 on mismatch)."""
    correlation = data.get("correlation") or {}
    if not correlation_matches(correlation, value):
        raise CorrelationMismatchError(
            "the event does not match this interrupt's correlation; the run keeps waiting",
            details={"expected": dict(correlation)},
        )
    return value


def external_event_id(value: Any) -> str | None:
    """The event's own id, used to make ingestion idempotent."""
    if isinstance(value, Mapping):
        for name in ("eventId", "id"):
            candidate = value.get(name)
            if isinstance(candidate, str | int) and not isinstance(candidate, bool):
                return str(candidate)
    return None


def finite_confidence(value: Any) -> float | None:
    """A confidence usable for escalation: a finite number in [0, 1], else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    if math.isnan(number) or math.isinf(number) or not 0.0 <= number <= 1.0:
        return None
    return number
