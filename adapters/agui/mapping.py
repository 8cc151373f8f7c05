"""Pure mappings between OpenWOP interrupts and AG-UI interrupts and resumes.

``interrupt_to_agui`` turns an interrupt view (``Engine.interrupt_view``) into an
AG-UI ``Interrupt`` whose ``responseSchema`` is enough to build the answer form;
``resume_payload_to_value`` turns a ``ResumeEntry.payload`` into the OpenWOP
``resumeValue`` for that interrupt's kind; ``normalize_request`` accepts the
older request shapes still in the wild and returns a 1.0 ``RunAgentInput`` body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ag_ui.core import Interrupt

from openwop_bridge import TOOL_CALL_ARTIFACT, ValidationError, is_tool_call_approval, kinds

_REASONS = {
    kinds.APPROVAL.name: "confirmation",
    kinds.CLARIFICATION.name: "input_required",
    kinds.CONVERSATION_EXCHANGE.name: "input_required",
}


def _data(view: Mapping[str, Any]) -> Mapping[str, Any]:
    data: Mapping[str, Any] = view.get("payload", {}).get("data", {})
    return data


def interrupt_reason(view: Mapping[str, Any]) -> str:
    """``confirmation`` / ``tool_call`` / ``input_required`` or ``openwop:<kind>``."""
    if is_tool_call_approval(view.get("payload", {})):
        return "tool_call"
    return _REASONS.get(view["kind"], f"openwop:{view['kind']}")


def interrupt_message(view: Mapping[str, Any]) -> str:
    """A readable prompt for whoever answers."""
    data = _data(view)
    kind = view["kind"]
    if is_tool_call_approval(view.get("payload", {})):
        call = data["artifactData"]
        return f"Approve the call to {call.get('name')}?" + (
            f" {data['description']}" if data.get("description") else ""
        )
    known = kinds.REGISTRY.get(kind)
    if known is None or not known.answerable:
        return str(view.get("title") or kind)
    return known.prompt(data)


def response_schema(view: Mapping[str, Any]) -> dict[str, Any]:
    """The interrupt's ``resumeSchema``, or the answer schema its kind advertises (and validates).

    A tool-call approval advertises AG-UI's ``{approved, editedArgs?, feedback?}``, which
    :func:`resume_payload_to_value` turns into the approval's ``{action, …}``."""
    payload = view.get("payload", {})
    declared = payload.get("resumeSchema")
    if isinstance(declared, Mapping):
        return dict(declared)
    data = _data(view)
    kind = view["kind"]
    if is_tool_call_approval(payload):
        call = data["artifactData"]
        props: dict[str, Any] = {"approved": {"type": "boolean"}, "feedback": {"type": "string"}}
        if "edit-accept" in data.get("actions", []):
            props["editedArgs"] = {"type": "object", "default": call.get("args", {})}
        return {"type": "object", "required": ["approved"], "properties": props}
    return kinds.kind_of(kind).response_schema(payload)


def interrupt_to_agui(view: Mapping[str, Any]) -> Interrupt:
    """One AG-UI ``Interrupt`` for an open OpenWOP interrupt."""
    data = _data(view)
    openwop: dict[str, Any] = {
        "kind": view["kind"],
        "key": view.get("key"),
        "nodeId": view["nodeId"],
        "runId": view["runId"],
        "workflowId": view.get("workflowId"),
        "interruptId": view["interruptId"],
        "data": data,
    }
    for name in ("votes", "askExchanges", "conversationId", "turnCount"):
        if name in view:
            openwop[name] = view[name]
    tool_call_id = data["artifactData"]["toolCallId"] if is_tool_call_approval(view.get("payload", {})) else None
    return Interrupt(
        id=view["interruptId"],
        reason=interrupt_reason(view),
        message=interrupt_message(view),
        tool_call_id=tool_call_id,
        response_schema=response_schema(view),
        expires_at=view.get("expiresAt"),
        metadata={"openwop": openwop},
    )


#: The fields of an answer naming whose slot it fills, carried as given (the engine checks them).
VOTER_FIELDS = ("voter", "decidedBy")


def resume_payload_to_value(view: Mapping[str, Any], payload: Any) -> Any:
    """The OpenWOP ``resumeValue`` for an AG-UI resume payload.

    The kind's short answers first (:func:`openwop_bridge.kinds.coerce_short_answer`: an
    approval's bare action or true/false, a clarification's object keyed by question id or
    bare value when there is one question). Approvals take ``{action, …}`` as is;
    ``{approved, editedArgs?, feedback?, voter?}`` (the tool-call convention, also fine for
    confirmations) maps to accept / edit-accept / reject; its ``voter`` (or ``decidedBy``)
    names whose slot the answer fills, as in OpenWOP's own answer (a delegate answering in
    the delegator's place).
    """
    kind = view["kind"]
    data = _data(view)
    payload = kinds.coerce_short_answer(kind, data, payload)
    approved = isinstance(payload, Mapping) and "approved" in payload and "action" not in payload
    if not (approved and kinds.kind_of(kind).votes):
        return payload
    if not isinstance(payload["approved"], bool):
        raise ValidationError("'approved' must be true or false")
    return {**_mapped(data, payload), **{k: payload[k] for k in VOTER_FIELDS if k in payload}}


def _mapped(data: Mapping[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenWOP action of an ``{approved, editedArgs?, feedback?}`` payload."""
    feedback = payload.get("feedback") or payload.get("reason")
    if not payload["approved"]:
        return {"action": "reject", **({"feedback": str(feedback)} if feedback else {})}
    if "editedArgs" in payload:
        if not isinstance(payload["editedArgs"], Mapping):
            raise ValidationError("'editedArgs' must be an object of arguments")
        if data.get("artifactType") == TOOL_CALL_ARTIFACT:
            edited = {**dict(data.get("artifactData") or {}), "args": dict(payload["editedArgs"])}
        else:
            # Any other gate: the edited arguments are the edited artifact.
            edited = dict(payload["editedArgs"])
        return {"action": "edit-accept", "editedArtifactData": edited}
    if "editedArtifactData" in payload:
        return {"action": "edit-accept", "editedArtifactData": payload["editedArtifactData"]}
    return {"action": "accept", **({"feedback": str(feedback)} if feedback else {})}


def _legacy_resume(resume: Any, open_ids: Sequence[str]) -> list[dict[str, Any]]:
    if isinstance(resume, list):
        return [dict(r) if isinstance(r, Mapping) else r for r in resume]
    if isinstance(resume, Mapping):
        # The draft's single object: {interruptId?, payload}.
        interrupt_id = resume.get("interruptId") or (open_ids[0] if len(open_ids) == 1 else None)
        if interrupt_id is None:
            raise ValidationError("'resume' names no interruptId and several interrupts are open")
        return [
            {"interruptId": interrupt_id, "status": resume.get("status", "resolved"), "payload": resume.get("payload")}
        ]
    raise ValidationError("'resume' must be a list of {interruptId, status, payload?}")


def names_no_interrupt(body: Any) -> bool:
    """Whether the request's resume is an older shape that leaves the interrupt to the host.

    The draft's single ``resume`` object without ``interruptId``, or a
    ``forwardedProps.command.resume`` value that is not a map of interrupt ids.
    """
    if not isinstance(body, Mapping):
        return False
    resume = body.get("resume")
    if resume is not None:
        return isinstance(resume, Mapping) and not resume.get("interruptId")
    forwarded = body.get("forwardedProps") or body.get("forwarded_props")
    command = forwarded.get("command") if isinstance(forwarded, Mapping) else None
    return isinstance(command, Mapping) and "resume" in command


def normalize_request(body: Any, open_ids: Sequence[str]) -> dict[str, Any]:
    """A 1.0 ``RunAgentInput`` body from the shapes clients send.

    Accepts (never emits) the draft's single ``resume`` object and LangGraph
    clients' ``forwardedProps.command.resume`` (a value for the one open
    interrupt, or a map of interrupt id → value).
    """
    if not isinstance(body, Mapping):
        raise ValidationError("the request body must be a RunAgentInput object")
    out = dict(body)
    for camel, snake in (("threadId", "thread_id"), ("runId", "run_id")):
        if camel not in out and snake in out:
            out[camel] = out.pop(snake)
    out.setdefault("messages", [])
    if out.get("resume") is not None:
        out["resume"] = _legacy_resume(out["resume"], open_ids)
    forwarded = out.get("forwardedProps") or out.get("forwarded_props")
    command = forwarded.get("command") if isinstance(forwarded, Mapping) else None
    if out.get("resume") is None and isinstance(command, Mapping) and "resume" in command:
        value = command["resume"]
        if isinstance(value, Mapping) and value and set(value) <= set(open_ids):
            out["resume"] = [{"interruptId": k, "status": "resolved", "payload": v} for k, v in value.items()]
        elif len(open_ids) == 1:
            out["resume"] = [{"interruptId": open_ids[0], "status": "resolved", "payload": value}]
        else:
            raise ValidationError(
                "forwardedProps.command.resume must map interrupt ids to values when several are open"
            )
    return out
