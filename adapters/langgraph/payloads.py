"""Pure mappings between LangGraph interrupts and OpenWOP interrupts.

A LangGraph ``Interrupt`` becomes one OpenWOP interrupt:

- a value written with this adapter's helpers (``{"openwop": {kind, data, …}}``)
  keeps its typed kind;
- a ``HumanInTheLoopMiddleware`` request becomes an ``approval`` of the tool
  call(s): ``per_call`` (``{"type": "tool_approval", …}``) one approval per call
  with its ``toolCallId``; batched (``{"action_requests", "review_configs"}``)
  one approval listing the calls;
- anything else is ``custom`` with ``customKind: "langgraph.interrupt"``.

``Interrupt.response_schema`` becomes ``resumeSchema`` (so the engine refuses a
bad answer before the graph sees it) — except for HITL requests, whose answers
are translated into HITL decisions and checked by :func:`check_tool_review`
(registered with the engine as ``langgraph.tool-review``) before they are accepted:

| OpenWOP action | HITL decision |
|---|---|
| ``accept`` | ``approve`` |
| ``edit-accept`` | ``edit`` with the edited call |
| ``reject`` | ``reject`` with the feedback as ``message`` |
| ``refine`` | ``respond`` with the feedback as ``message`` |

A batch of several calls always offers ``edit-accept``: it carries one decision
per call (``editedArtifactData: {decisions}``), each checked against what its
call allows, so calls that allow only approve and reject can still be decided
one by one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import PydanticUserError, TypeAdapter

from openwop_bridge import TOOL_CALL_ARTIFACT, ValidationError, kinds
from openwop_bridge.langgraph.messages import to_json

MARKER = "openwop"
CUSTOM_KIND = "langgraph.interrupt"
TOOL_CALLS_ARTIFACT = "tool-calls"
ANSWER_CHECK = "langgraph.tool-review"

_DECISION_TO_ACTION = {"approve": "accept", "edit": "edit-accept", "reject": "reject", "respond": "refine"}
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True, slots=True)
class Mapped:
    """An OpenWOP interrupt payload for a LangGraph interrupt, and how to answer the graph."""

    payload: dict[str, Any]
    family: str  # "helper" | "per_call" | "batched" | "value" (any other value, as a custom payload)
    tool_call: dict[str, Any] | None = None


def address(task_name: str, interrupt_id: str) -> str:
    """A stable, URL-safe sub-address for one LangGraph interrupt: ``<task>.<id prefix>``."""
    name = _SAFE.sub("-", task_name).strip("-") or "task"
    return f"{name}.{interrupt_id[:12]}"


def _jsonable_schema(schema: Any) -> dict[str, Any] | None:
    """A JSON Schema for a response schema: a dict as is; a type or typing form (such as
    the middleware's discriminated ``Annotated[Union[...]]``) through pydantic."""
    if schema is None:
        return None
    if isinstance(schema, Mapping):
        return dict(schema)
    try:
        result: dict[str, Any] = TypeAdapter(schema).json_schema()
    except (PydanticUserError, TypeError, ValueError):
        return None
    return result


def allowed_decisions(schema: Any) -> list[str]:
    """The HITL decision types a per-call response schema admits (all four when unclear)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            props = node.get("properties")
            if isinstance(props, Mapping) and isinstance(props.get("type"), Mapping):
                kind = props["type"]
                for value in [kind.get("const")] if "const" in kind else list(kind.get("enum") or []):
                    if value in _DECISION_TO_ACTION and value not in found:
                        found.append(value)
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(_jsonable_schema(schema) or {})
    return found or ["approve", "edit", "reject", "respond"]


def _actions(decisions: list[str]) -> list[str]:
    return [_DECISION_TO_ACTION[d] for d in decisions]


def map_interrupt(value: Any, response_schema: Any) -> Mapped:
    """The OpenWOP payload (without key) for a LangGraph interrupt value."""
    if isinstance(value, Mapping) and isinstance(value.get(MARKER), Mapping):
        spec = dict(value[MARKER])
        payload: dict[str, Any] = {"kind": spec["kind"], "data": dict(spec.get("data") or {})}
        for name in ("resumeSchema", "timeoutMs"):
            if spec.get(name) is not None:
                payload[name] = spec[name]
        return Mapped(payload, "helper")
    if isinstance(value, Mapping) and value.get("type") == "tool_approval" and "tool_call_id" in value:
        return _tool_approval(value, response_schema)
    if isinstance(value, Mapping) and isinstance(value.get("action_requests"), list):
        return _tool_review(value)
    # Pydantic models, messages, dataclasses…: stored as JSON, as the graph's state is.
    payload = kinds.CUSTOM.payload({"customKind": CUSTOM_KIND, "payload": to_json(value)})
    schema = _jsonable_schema(response_schema)
    if schema is not None:
        payload["resumeSchema"] = schema
    return Mapped(payload, "value")


def _tool_approval(value: Mapping[str, Any], response_schema: Any) -> Mapped:
    """One tool call to approve (``{"type": "tool_approval", "tool_call_id", "name", "args", …}``)."""
    call = {
        "toolCallId": str(value["tool_call_id"]),
        "name": str(value["name"]),
        "args": to_json(dict(value["args"])),
    }
    data = {
        "artifactId": call["toolCallId"],
        "artifactType": TOOL_CALL_ARTIFACT,
        "title": f"Run {call['name']}?",
        "actions": _actions(allowed_decisions(response_schema)),
        "artifactData": call,
    }
    if value.get("description"):
        data["description"] = str(value["description"])
    data["answerCheck"] = ANSWER_CHECK
    schema = _jsonable_schema(response_schema)
    if schema is not None:
        data["decisionSchema"] = schema
    return Mapped(kinds.APPROVAL.payload(data), "per_call", call)


def _tool_review(value: Mapping[str, Any]) -> Mapped:
    """A batch of tool calls to review, in the HITL middleware's shape (``action_requests``, ``review_configs``)."""
    requests = value["action_requests"]
    configs = value.get("review_configs") or []
    allowed: list[str] = []
    for config in configs:
        for decision in config.get("allowed_decisions", []):
            if decision not in allowed:
                allowed.append(decision)
    calls = [
        {"name": r["name"], "args": to_json(dict(r.get("args") or {})), "description": r.get("description", "")}
        for r in requests
    ]
    by_name = {c.get("action_name"): list(c.get("allowed_decisions") or []) for c in configs}
    every = list(_DECISION_TO_ACTION)
    if len(calls) > 1 and allowed and "edit" not in allowed:
        # Per-call decisions (approve one, reject another) come as edit-accept; check_tool_review
        # still holds each call to the decisions it allows, so no call can be edited.
        allowed.append("edit")
    data = {
        "artifactId": "tool-calls",
        "artifactType": TOOL_CALLS_ARTIFACT,
        "title": f"Run {len(calls)} tool call{'s' if len(calls) != 1 else ''}?",
        "description": "; ".join(f"{c['name']}({c['args']})" for c in calls),
        "actions": _actions(allowed or every),
        "artifactData": {"actions": calls},
        "answerCheck": ANSWER_CHECK,
        "allowedDecisions": [by_name.get(c["name"]) or every for c in calls],
    }
    return Mapped(kinds.APPROVAL.payload(data), "batched")


def _feedback(answer: Mapping[str, Any]) -> str | None:
    refine = answer.get("refineFeedback") or {}
    text = answer.get("feedback") or (refine.get("text") if isinstance(refine, Mapping) else None)
    return str(text) if text else None


def _one_decision(
    answer: Mapping[str, Any], call: Mapping[str, Any], edited: Mapping[str, Any] | None
) -> dict[str, Any]:
    action = answer.get("action")
    if action == "accept":
        return {"type": "approve"}
    if action == "edit-accept":
        args = dict((edited or {}).get("args", call.get("args", {})))
        return {"type": "edit", "edited_action": {"name": call["name"], "args": args}}
    if action == "reject":
        message = _feedback(answer)
        return {"type": "reject", **({"message": message} if message else {})}
    if action == "refine":
        return {"type": "respond", "message": _feedback(answer) or "Please reconsider."}
    raise ValidationError(f"an approval answered {action!r} cannot resume a tool-call review")


def resume_for_graph(mapped: Mapped, answer: Any) -> Any:
    """The value handed to LangGraph's ``interrupt()`` for an OpenWOP answer."""
    if mapped.family == "per_call":
        assert mapped.tool_call is not None
        edited = answer.get("editedArtifactData") if isinstance(answer, Mapping) else None
        return _one_decision(answer, mapped.tool_call, edited if isinstance(edited, Mapping) else None)
    if mapped.family == "batched":
        calls = mapped.payload["data"]["artifactData"]["actions"]
        edited = answer.get("editedArtifactData") if isinstance(answer, Mapping) else None
        if isinstance(edited, Mapping) and isinstance(edited.get("decisions"), list):
            decisions = list(edited["decisions"])
            if len(decisions) != len(calls):
                raise ValidationError(f"{len(calls)} tool calls need {len(calls)} decisions")
            return {"decisions": decisions}
        if answer.get("action") == "edit-accept" and isinstance(edited, Mapping):
            new_calls = edited.get("actions") or []
            decisions = []
            for i, call in enumerate(calls):
                changed = new_calls[i] if i < len(new_calls) else call
                if dict(changed.get("args", {})) == call["args"]:
                    decisions.append({"type": "approve"})
                else:
                    decisions.append(
                        {"type": "edit", "edited_action": {"name": call["name"], "args": dict(changed["args"])}}
                    )
            return {"decisions": decisions}
        return {"decisions": [_one_decision(answer, call, None) for call in calls]}
    return answer


def check_tool_review(payload: Mapping[str, Any], vote: dict[str, Any]) -> None:
    """Refuse an answer to a tool-call review that the graph would refuse (400, still open).

    The answer is turned into the HITL decision(s) the graph will get; each must be
    one the call allows and, per call, match the middleware's decision schema (the
    edited arguments against the tool's own argument schema).
    """
    data = payload.get("data") or {}
    if data.get("artifactType") == TOOL_CALL_ARTIFACT:
        call = dict(data.get("artifactData") or {})
        decision = resume_for_graph(Mapped(dict(payload), "per_call", call), vote)
        kinds.validate_against(data.get("decisionSchema"), decision, "the tool-call decision")
        return
    mapped = Mapped(dict(payload), "batched")
    calls = data.get("artifactData", {}).get("actions") or []
    decisions = resume_for_graph(mapped, vote)["decisions"]
    allowed = data.get("allowedDecisions") or []
    for i, (call, decision) in enumerate(zip(calls, decisions, strict=True)):
        kind = decision.get("type") if isinstance(decision, Mapping) else None
        permitted = allowed[i] if i < len(allowed) else list(_DECISION_TO_ACTION)
        if kind not in permitted:
            raise ValidationError(
                f"decision {i} ({call['name']}) is {kind!r}; this call allows {', '.join(permitted)}",
                details={"decision": i, "allowed": permitted},
            )
        if kind == "edit":
            edited = decision.get("edited_action")
            if not isinstance(edited, Mapping) or not isinstance(edited.get("args"), Mapping):
                raise ValidationError(
                    f"decision {i} ({call['name']}) edits the call but gives no edited_action with args",
                    details={"decision": i},
                )
            if edited.get("name", call["name"]) != call["name"]:
                raise ValidationError(f"decision {i} may not switch {call['name']!r} to another tool")
        if kind == "respond" and not isinstance(decision.get("message"), str):
            raise ValidationError(f"decision {i} ({call['name']}) responds without a message")
