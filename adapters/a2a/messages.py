"""Reading A2A messages: which workflow, which variables, which answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format

from a2a.types import Message
from a2a.utils.errors import InvalidParamsError
from openwop_bridge import Engine, WorkflowDefinition, kinds

#: The approval actions an A2A answer may name (``metadata.openwop.interrupt.action``).
ACTIONS = ("accept", "reject", "edit", "respond", "ask")
#: Whose slot an approval answer fills (``metadata.openwop.interrupt.voter``, or in its data part).
VOTER_FIELDS = ("voter", "decidedBy")


def openwop_metadata(message: Message) -> dict[str, Any]:
    """``Message.metadata.openwop`` (an object, else empty)."""
    meta = json_format.MessageToDict(message.metadata) if message.HasField("metadata") else {}
    found = meta.get("openwop")
    return found if isinstance(found, dict) else {}


def data_parts(message: Message) -> list[Any]:
    """The values of the message's data parts, in order."""
    return [json_format.MessageToDict(p.data) for p in message.parts if p.HasField("data")]


def text_parts(message: Message) -> list[str]:
    """The texts of the message's text parts, in order."""
    return [p.text for p in message.parts if p.HasField("text")]


def workflow_for(engine: Engine, message: Message) -> WorkflowDefinition:
    """The workflow a starting message names (``metadata.openwop.skillId``), or the only one."""
    skill_id = openwop_metadata(message).get("skillId")
    offered = engine.workflows()
    if skill_id is None:
        if len(offered) == 1:
            return offered[0]
        raise InvalidParamsError("name the skill in Message.metadata.openwop.skillId: this agent offers several")
    ids = {wf.id: wf for wf in offered}
    if not isinstance(skill_id, str) or skill_id not in ids:
        raise InvalidParamsError(f"unknown skill {skill_id!r}")
    return ids[skill_id]


def inputs_for(workflow: WorkflowDefinition, message: Message) -> dict[str, Any]:
    """Workflow variables from the message: a data part's object, or one text part for the one string variable."""
    inputs: dict[str, Any] = {}
    for value in data_parts(message):
        if not isinstance(value, dict):
            raise InvalidParamsError("a data part starting a task must be an object of workflow variables")
        inputs.update(value)
    texts = text_parts(message)
    strings = [v.name for v in workflow.variables if v.type == "string"]
    if len(texts) == 1 and len(strings) == 1 and strings[0] not in inputs:
        inputs[strings[0]] = texts[0]
    return inputs


def named_interrupt(message: Message) -> str | None:
    """The interrupt a message says it answers (``metadata.openwop.interrupt.interruptId``), if it names one."""
    named = (openwop_metadata(message).get("interrupt") or {}).get("interruptId")
    if named is None:
        return None
    if not isinstance(named, str) or not named:
        raise InvalidParamsError("metadata.openwop.interrupt.interruptId must be a non-empty string")
    return named


def answer_for(interrupt: Mapping[str, Any], message: Message) -> Any:
    """The resume value a message gives the open interrupt (see the module docstring of the handler)."""
    meta = openwop_metadata(message).get("interrupt") or {}
    meta_action = meta.get("action")
    data = data_parts(message)
    texts = text_parts(message)
    kind = interrupt["kind"]
    if kind == kinds.APPROVAL.name:
        value: dict[str, Any] = dict(data[0]) if data and isinstance(data[0], dict) else {}
        if meta_action is not None:
            value.setdefault("action", meta_action)
        for name in VOTER_FIELDS:  # whose slot the answer fills: a delegate names the delegator
            if name in meta:
                value.setdefault(name, meta[name])
        if "action" not in value:
            raise InvalidParamsError(f"an approval answer names an action: one of {', '.join(ACTIONS)}")
        return value
    if not data and len(texts) == 1:
        # The kind's short answer (a one-question clarification's bare value), if the text is one.
        answer = kinds.coerce_short_answer(kind, interrupt, texts[0])
        if answer is not texts[0]:
            return answer
    if len(data) != 1:
        raise InvalidParamsError("answer this interrupt with one data part holding the value its resumeSchema asks for")
    return data[0]
