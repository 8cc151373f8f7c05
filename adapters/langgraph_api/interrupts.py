"""OpenWOP interrupts as LangGraph clients see them, and their resume values as OpenWOP answers.

Presenting (``present``): an approval is an Agent Inbox ``HumanInterrupt``
(``action_request``, ``config`` with ``allow_accept``/``allow_edit``/
``allow_respond``/``allow_ignore``, ``description``; its artifact, if any, as
the request's ``args``), except a batch of tool
calls (a served agent's batched ``HumanInTheLoopMiddleware`` review), shown as
the middleware's own ``HITLRequest``: ``action_requests`` (``name``, ``args``,
``description``) and ``review_configs`` (``action_name``, ``allowed_decisions``);
a raw ``interrupt()`` of a served graph is its own value; any other kind is its
payload data with its ``kind``. Every value carries an ``openwop`` block
(interrupt id, kind, actions, votes, deadline).

Answering (``resume_entries``): ``Command(resume=value)`` answers the one open
interrupt; ``Command(resume={interruptId: value, …})`` answers several. A value
for an approval may be, besides OpenWOP's own ``{action, …}``:

| Sent | OpenWOP answer |
|---|---|
| Agent Inbox ``accept`` / ``ignore`` | ``accept`` / ``reject`` |
| Agent Inbox ``edit`` (``args.args``) | ``edit-accept`` with the edited artifact |
| Agent Inbox ``response`` (text) | ``refine`` with the text as feedback |
| HITL ``approve`` / ``edit`` / ``reject`` / ``respond`` | ``accept`` / ``edit-accept`` / ``reject`` / ``refine`` |

``{"decisions": [...]}`` gives one HITL decision per open tool-call approval, in
the order they were asked; for a batch, one per call of the batch. The same
``approve``, ``reject`` or ``respond`` for every call of a batch (with one
message) is the OpenWOP ``accept``, ``reject`` or ``refine``; any other mix is an
``edit-accept`` carrying the decisions. An Agent Inbox response answers a
batch whole (``accept`` approves every call).

Whose slot an answer fills: a ``voter`` (or ``decidedBy``) on the Agent Inbox
response, on the HITL decision or on the ``{"decisions": [...]}`` object is carried
to the OpenWOP answer, as on OpenWOP's own ``{action, voter}``: a delegate names the
person they answer for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from openwop_bridge import TOOL_CALL_ARTIFACT, ValidationError, kinds

_INBOX = {"accept", "edit", "response", "ignore"}
_HITL = {"approve", "edit", "reject", "respond"}
_CUSTOM_GRAPH = "langgraph.interrupt"
_BATCHED = "tool-calls"
_INTERRUPT_ID = re.compile(r"^int_[0-9A-Za-z]{26}$")
#: The fields of an answer naming whose slot it fills (a delegate answering in the delegator's place).
VOTER_FIELDS = ("voter", "decidedBy")


def _data(view: Mapping[str, Any]) -> dict[str, Any]:
    return dict(view.get("payload", {}).get("data") or {})


def _kind(view: Mapping[str, Any]) -> kinds.Kind:
    """The kind object of an interrupt view."""
    return kinds.kind_of(view["kind"])


def _openwop(view: Mapping[str, Any]) -> dict[str, Any]:
    block = {k: view[k] for k in ("interruptId", "runId", "nodeId", "kind", "title") if k in view}
    for name in ("votes", "expiresAt", "askExchanges"):
        if name in view:
            block[name] = view[name]
    data = _data(view)
    if "actions" in data:
        block["actions"] = data["actions"]
    if view.get("payload", {}).get("resumeSchema") is not None:
        block["resumeSchema"] = view["payload"]["resumeSchema"]
    return block


def _review(view: Mapping[str, Any], data: Mapping[str, Any]) -> dict[str, Any]:
    """A batch of tool calls as the HITL middleware asks it: ``{action_requests, review_configs}``."""
    calls = [c for c in (data.get("artifactData") or {}).get("actions") or [] if isinstance(c, Mapping)]
    allowed = list(data.get("allowedDecisions") or [])
    requests: list[dict[str, Any]] = []
    configs: dict[str, dict[str, Any]] = {}
    for i, call in enumerate(calls):
        name = str(call.get("name", ""))
        requests.append(
            {"name": name, "args": dict(call.get("args") or {}), "description": str(call.get("description") or "")}
        )
        decisions = allowed[i] if i < len(allowed) and isinstance(allowed[i], list) else sorted(_HITL)
        configs.setdefault(name, {"action_name": name, "allowed_decisions": list(decisions)})
    return {"action_requests": requests, "review_configs": list(configs.values()), "openwop": _openwop(view)}


def present(view: Mapping[str, Any]) -> Any:
    """The value a LangGraph client sees for an open OpenWOP interrupt."""
    data = _data(view)
    kind = _kind(view)
    if kind is kinds.CUSTOM and data.get("customKind") == _CUSTOM_GRAPH:
        return data.get("payload")
    if kind is not kinds.APPROVAL:
        return {"kind": kind.name, **data, "openwop": _openwop(view)}
    if data.get("artifactType") == _BATCHED:
        return _review(view, data)
    actions = list(data.get("actions") or ["accept", "reject"])
    artifact = data.get("artifactData")
    if data.get("artifactType") == TOOL_CALL_ARTIFACT and isinstance(artifact, Mapping):
        request = {"action": str(artifact.get("name", data.get("title", ""))), "args": dict(artifact.get("args") or {})}
    else:
        args = dict(artifact) if isinstance(artifact, Mapping) else {} if artifact is None else {"artifact": artifact}
        request = {"action": str(data.get("title") or view.get("title") or kind.name), "args": args}
    return {
        "action_request": request,
        "config": {
            "allow_accept": "accept" in actions,
            "allow_edit": "edit-accept" in actions,
            "allow_respond": "refine" in actions,
            "allow_ignore": "reject" in actions,
        },
        "description": str(data.get("description") or data.get("title") or view.get("title") or ""),
        "openwop": _openwop(view),
    }


def as_interrupt(view: Mapping[str, Any]) -> dict[str, Any]:
    """A LangGraph ``Interrupt``: ``{id, value}``."""
    return {"id": view["interruptId"], "value": present(view)}


def _edited(data: Mapping[str, Any], args: Any) -> Any:
    if data.get("artifactType") == TOOL_CALL_ARTIFACT and isinstance(args, Mapping):
        return {**dict(data.get("artifactData") or {}), "args": dict(args)}
    return args


def _from_inbox(data: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    kind, args = response["type"], response.get("args")
    if kind == "accept":
        return {"action": "accept"}
    if kind == "ignore":
        return {"action": "reject", "feedback": "ignored"}
    if kind == "response":
        if not isinstance(args, str) or not args.strip():
            raise ValidationError("an Agent Inbox 'response' needs its text in 'args'")
        return {"action": "refine", "feedback": args}
    if not isinstance(args, Mapping) or not isinstance(args.get("args"), Mapping):
        raise ValidationError("an Agent Inbox 'edit' needs 'args': {action, args: {…}}")
    return {"action": "edit-accept", "editedArtifactData": _edited(data, args["args"])}


def _from_decision(data: Mapping[str, Any], decision: Mapping[str, Any]) -> dict[str, Any]:
    kind = decision["type"]
    message = decision.get("message")
    feedback = {"feedback": str(message)} if message else {}
    if kind == "approve":
        return {"action": "accept"}
    if kind == "reject":
        return {"action": "reject", **feedback}
    if kind == "respond":
        if not feedback:
            raise ValidationError("a 'respond' decision needs a 'message'")
        return {"action": "refine", **feedback}
    edited = decision.get("edited_action")
    if not isinstance(edited, Mapping) or not isinstance(edited.get("args"), Mapping):
        raise ValidationError("an 'edit' decision needs 'edited_action': {name, args: {…}}")
    return {"action": "edit-accept", "editedArtifactData": _edited(data, edited["args"])}


def _batch_answer(decisions: list[Any]) -> dict[str, Any]:
    """One decision per call of a batch: the same approve, reject or respond for every call (with one
    message) is an OpenWOP ``accept``, ``reject`` or ``refine``; any other mix an ``edit-accept`` of the decisions."""
    kinds_ = {d.get("type") if isinstance(d, Mapping) else None for d in decisions}
    messages = {d.get("message") for d in decisions if isinstance(d, Mapping)}
    if decisions and len(kinds_) == 1 and len(messages) == 1:
        kind, message = next(iter(kinds_)), next(iter(messages))
        feedback = {"feedback": str(message)} if message else {}
        if kind == "approve":
            return {"action": "accept"}
        if kind == "reject":
            return {"action": "reject", **feedback}
        if kind == "respond" and feedback:
            return {"action": "refine", **feedback}
    return {"action": "edit-accept", "editedArtifactData": {"decisions": decisions}}


def _voter(value: Mapping[str, Any]) -> dict[str, Any]:
    """The fields naming whose slot an answer fills (``voter``, ``decidedBy``), carried as given."""
    return {k: value[k] for k in VOTER_FIELDS if k in value}


def _approval_answer(data: Mapping[str, Any], value: Any) -> Any:
    if isinstance(value, list):
        if len(value) != 1 or not isinstance(value[0], Mapping):
            raise ValidationError("an Agent Inbox resume is a list of one response")
        value = value[0]
    if not isinstance(value, Mapping) or "action" in value:
        return value
    voter = _voter(value)
    if isinstance(value.get("decisions"), list):
        decisions = value["decisions"]
        if data.get("artifactType") == _BATCHED:
            calls = (data.get("artifactData") or {}).get("actions") or []
            if len(decisions) != len(calls):
                raise ValidationError(f"{len(calls)} tool calls are waiting; send {len(calls)} decisions")
            return {**_batch_answer(decisions), **voter}
        if len(decisions) != 1 or not isinstance(decisions[0], Mapping):
            raise ValidationError("one tool call needs exactly one decision")
        value = decisions[0]
        voter = {**voter, **_voter(value)}
    kind = value.get("type")
    if kind in _INBOX and (kind != "edit" or "edited_action" not in value):
        return {**_from_inbox(data, value), **voter}
    if kind in _HITL:
        return {**_from_decision(data, value), **voter}
    return value


def answer_for(view: Mapping[str, Any], value: Any) -> Any:
    """The OpenWOP answer for a LangGraph resume value given to one interrupt."""
    data = _data(view)
    kind = _kind(view)
    value = kind.coerce_short_answer(data, value)
    return _approval_answer(data, value) if kind is kinds.APPROVAL else value


def _split_decisions(resume: Mapping[str, Any], views: Sequence[Mapping[str, Any]]) -> list[tuple[str, Any]] | None:
    """``{"decisions": [...]}`` spread over several open tool-call approvals, one each, in order."""
    decisions = resume.get("decisions")
    calls = [v for v in views if _kind(v) is kinds.APPROVAL and _data(v).get("artifactType") == TOOL_CALL_ARTIFACT]
    if not isinstance(decisions, list) or len(views) < 2 or len(calls) != len(views):
        return None
    if len(decisions) != len(calls):
        raise ValidationError(f"{len(calls)} tool calls are waiting; send {len(calls)} decisions")
    return [(v["interruptId"], {"decisions": [d]}) for v, d in zip(calls, decisions, strict=True)]


def resume_entries(resume: Any, views: Sequence[Mapping[str, Any]]) -> list[tuple[str, Any]]:
    """Which open interrupt each part of a ``Command(resume=…)`` answers, and with what LangGraph value."""
    if not views:
        raise ValidationError("no interrupt is open on this thread; there is nothing to resume")
    open_ids = [v["interruptId"] for v in views]
    if isinstance(resume, Mapping) and resume and any(k in open_ids or _INTERRUPT_ID.match(str(k)) for k in resume):
        unknown = [k for k in resume if k not in open_ids]
        if unknown:
            raise ValidationError(
                f"no open interrupt {unknown[0]!r} on this thread", details={"unknown": unknown, "open": open_ids}
            )
        return [(str(k), v) for k, v in resume.items()]
    if isinstance(resume, Mapping):
        split = _split_decisions(resume, views)
        if split is not None:
            return split
    if len(views) > 1:
        raise ValidationError(
            f"{len(views)} interrupts are open; resume with {{interruptId: value}} for each",
            details={"open": open_ids},
        )
    return [(open_ids[0], resume)]
