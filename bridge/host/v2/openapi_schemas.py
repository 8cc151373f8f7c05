"""Component schemas of the v2 OpenAPI document: the vendored v2 schemas, embedded, and the bodies they lack.

- ``RunSnapshot`` and ``RunListResponse`` are ``run-snapshot.schema.json`` and
  ``run-list-response.schema.json`` with their references pointed inside the document
  (``ids.schema.json`` definitions become ``Id…`` components, ``subject.schema.json``
  ``Subject``). The snapshot also names the two root fields the v2 SDK reads
  (``interrupt``, ``parentNodeId``; :mod:`.snapshots`); ``agent`` and ``runOrchestrator``
  (``agent-ref.schema.json``, not vendored) are never served, so they are ``false``.
- ``CancelResponse`` is runs.md §Cancel: ``{runId, status: cancelling | cancelled}``;
  ``BulkCancelResponse`` is §Bulk cancel: ``{results[]}``, one ``{runId, ok, status | error}`` per id.
- ``Delegation`` (``/delegations``) is this host's: no v2 schema names one; its people are Subjects.
- ``ResolveResponse`` and ``InterruptInspection`` have no v2 schema file (interrupt.md
  names the operations, not their bodies): they are written from what the routes
  answer, every field named and typed, nothing else admitted.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core import kinds
from openwop_bridge.spec import v2 as spec

_REF = "#/components/schemas/"
_FILES = {"subject.schema.json": "Subject", "run-snapshot.schema.json": "RunSnapshot"}


def _id(name: str) -> str:
    return "Id" + name[0].upper() + name[1:]


def _rewrite(node: Any, used: set[str], home: str = "") -> Any:
    """A vendored schema with ``$id``/``$schema`` dropped and every reference pointed inside the document
    (``home`` is the component it becomes, for its own ``#/$defs/…``)."""
    if isinstance(node, list):
        return [_rewrite(v, used, home) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _rewrite(v, used, home) for k, v in node.items() if k not in ("$id", "$schema")}
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        out["$ref"] = f"{_REF}{home}{ref[1:]}"
    elif isinstance(ref, str) and ref.startswith("ids.schema.json#/$defs/"):
        used.add(ref.rsplit("/", 1)[1])
        out["$ref"] = _REF + _id(ref.rsplit("/", 1)[1])
    elif ref in _FILES:
        out["$ref"] = _REF + _FILES[ref]
    elif ref == "agent-ref.schema.json":
        return False
    return out


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF + name}


def _interrupt_view() -> dict[str, Any]:
    """``RunSnapshot.interrupt``: the first open interrupt, with its signed link."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["kind", "nodeId", "interruptId", "payload"],
        "properties": {
            "kind": {"type": "string", "enum": list(kinds.KINDS)},
            "nodeId": _ref("IdNodeId"),
            "interruptId": _ref("IdInterruptId"),
            "payload": {"type": "object", "description": "The InterruptPayload the node suspended with"},
            "interruptToken": {"type": "string", "pattern": "^ow2\\.[a-z0-9]+\\.[A-Za-z0-9_-]+\\.[^.]+\\.[^.]+$"},
            "tokenIntent": {"type": "string", "enum": ["resolve", "inspect"]},
            "callbackUrl": {"type": "string"},
            "expiresAt": {"type": "string", "format": "date-time"},
            "votes": {"type": "object", "description": "Quorum progress"},
        },
    }


def _snapshot(used: set[str]) -> dict[str, Any]:
    snap: dict[str, Any] = _rewrite(spec.schema("run-snapshot.schema.json"), used)
    snap["properties"]["interrupt"] = {**_interrupt_view(), "description": "Read by the v2 SDK's RunSnapshot"}
    snap["properties"]["parentNodeId"] = {**_ref("IdNodeId"), "description": "Read by the v2 SDK's RunSnapshot"}
    used.add("nodeId")
    return snap


def _bulk_cancel_response() -> dict[str, Any]:
    entry = {
        "type": "object",
        "additionalProperties": False,
        "required": ["runId", "ok"],
        "properties": {
            "runId": {"type": "string", "description": "The id as the request named it"},
            "ok": {"type": "boolean"},
            "status": {"type": "string", "enum": ["cancelling", "cancelled"]},
            "error": {**_ref("ErrorEnvelope"), "description": "Why this id was not cancelled"},
        },
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["results"],
        "properties": {"results": {"type": "array", "items": entry}},
    }


def _resolve_response() -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["runId", "interruptId", "status"],
        "properties": {
            "runId": _ref("IdRunId"),
            "interruptId": _ref("IdInterruptId"),
            "nodeId": _ref("IdNodeId"),
            "kind": {"type": "string", "enum": list(kinds.KINDS)},
            "status": {
                "type": "string",
                "enum": ["resolved", "pending"],
                "description": "resolved: the interrupt settled; pending: a quorum vote or an ask left it open",
            },
            "action": {"type": "string"},
            "decision": {
                "type": "string",
                "enum": ["granted", "rejected", "overridden"],
                "description": "The approval's outcome, in interrupt.resolved's words",
            },
            "resumeValue": {"description": "The answer as recorded"},
            "votes": {"type": "object", "description": "Quorum progress"},
            "duplicate": {"type": "boolean", "description": "This principal had already voted"},
            "ask": {"type": "object", "description": "The question an approval's ask recorded"},
            "askExchanges": {"type": "array", "items": {"type": "object"}},
            "idempotent": {"type": "boolean", "description": "The same answer had already been recorded"},
            "turnIndex": {"type": "integer", "minimum": 0},
            "closed": {"type": "boolean", "description": "A conversation turn closed the conversation"},
        },
    }


def _inspection() -> dict[str, Any]:
    text = {"type": "string"}
    when = {"type": "string", "format": "date-time"}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [
            *("interruptId", "runId", "workflowId", "nodeId", "kind", "key", "status", "title"),
            *("payload", "requestedAt", "data", "intent"),
        ],
        "properties": {
            "interruptId": _ref("IdInterruptId"),
            "runId": _ref("IdRunId"),
            "workflowId": _ref("IdWorkflowId"),
            "nodeId": _ref("IdNodeId"),
            "kind": {"type": "string", "enum": list(kinds.KINDS)},
            "key": text,
            "status": {"type": "string", "enum": ["pending", "resolved", "expired", "cancelled"]},
            "title": text,
            "payload": {"type": "object", "description": "The InterruptPayload the node suspended with"},
            "requestedAt": when,
            "expiresAt": when,
            "resolvedAt": when,
            "resolution": {"type": "object"},
            "votes": {"type": "object", "description": "Quorum progress"},
            "askExchanges": {"type": "array", "items": {"type": "object"}},
            "conversationId": {"type": ["string", "null"]},
            "turnCount": {"type": "integer", "minimum": 0},
            "promptTurn": {"type": "object"},
            "data": {"type": "object", "description": "The InterruptPayload's data"},
            "resumeSchema": {"type": "object"},
            "timeoutMs": {"type": "integer", "minimum": 0},
            "intent": {"type": "string", "enum": ["resolve", "inspect"]},
            "tokenExpiresAt": {"type": ["string", "null"], "format": "date-time"},
            "subject": {"type": "string", "description": "The principal the link was minted for"},
        },
    }


def _delegation() -> dict[str, Any]:
    """A delegation as ``/delegations`` serves it (:mod:`.delegations`)."""
    when = {"type": "string", "format": "date-time"}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [
            *("delegationId", "delegator", "delegate", "from", "until"),
            *("workflows", "reason", "createdBy", "createdAt"),
        ],
        "properties": {
            "delegationId": {
                "type": "string",
                "pattern": "^(anon:)?[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}$",
                "description": "Tenant-bound (<tenant>/dlg-…)",
            },
            "delegator": {**_ref("Subject"), "description": "Who is away: the voter a delegate names"},
            "delegate": {**_ref("Subject"), "description": "Who answers in the delegator's place"},
            "from": when,
            "until": when,
            "workflows": {"type": "array", "items": {"type": "string"}, "description": "None: every workflow"},
            "reason": {"type": "string"},
            "createdBy": {**_ref("Subject"), "description": "The delegator, or the admin who made it for them"},
            "createdAt": when,
            "endedAt": {**when, "description": "When it was ended, if it was"},
        },
    }


def component_schemas() -> dict[str, Any]:
    """``RunSnapshot``, ``RunListResponse``, ``CancelResponse``, ``BulkCancelResponse``, ``ResolveResponse``,
    ``InterruptInspection``, ``Delegation`` and the ``Id…`` and ``Subject`` components they refer to."""
    used = {"runId", "interruptId", "nodeId", "workflowId"}
    out: dict[str, Any] = {
        "RunSnapshot": _snapshot(used),
        "RunListResponse": _rewrite(spec.schema("run-list-response.schema.json"), used),
        "Subject": _rewrite(spec.schema("subject.schema.json"), used, "Subject"),
        "CancelResponse": {
            "type": "object",
            "additionalProperties": False,
            "required": ["runId", "status"],
            "properties": {"runId": _ref("IdRunId"), "status": {"type": "string", "enum": ["cancelling", "cancelled"]}},
        },
        "BulkCancelResponse": _bulk_cancel_response(),
        "ResolveResponse": _resolve_response(),
        "InterruptInspection": _inspection(),
        "Delegation": _delegation(),
    }
    defs = spec.schema("ids.schema.json")["$defs"]
    # In name order, so the document is the same bytes in every process (a set's order follows the hash seed).
    done: set[str] = set()
    while todo := used - done:
        name = min(todo)
        done.add(name)
        out[_id(name)] = _rewrite(defs[name], used)
    return out
