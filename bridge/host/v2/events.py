"""Event payloads in their v2 spelling (``run-event-payloads.schema.json`` under ``schemas/v2``).

The engine writes one log; v1 reads it as written. Over v2 each payload is re-spelled:

- ``interrupt.requested`` (and ``clarification.requested``) carry the ``InterruptPayload``
  the node suspended with, verbatim, except the engine's own ``data.gateId`` on an
  approval (v2 closes ``ApprovalData``; the gate is the event's ``nodeId``).
- ``interrupt.resolved`` and the legacy ``approval.*`` / ``clarification.resolved``
  types share v2's ``interruptResolved`` shape: ``action``, ``decision`` (the engine's
  ``approved`` is v2's ``granted``), ``reason``, and ``resolvedBy`` as a Subject.
- Ids are tenant-bound; ``run.started`` names its owner as ``{tenant, subject}``.
- ``node.failed`` says ``error.retryable: false``: the engine records it once, when the
  node has failed for good (interrupt.md §Rejection asks it of ``approval_rejected``).
- A field the v2 definition does not name moves under ``x-<name>`` (v2 admits
  ``x-`` extensions on every closed payload), so nothing the engine recorded is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openwop_bridge.core.kinds import APPROVAL, REGISTRY
from openwop_bridge.host.v2 import ids
from openwop_bridge.host.v2.subjects import subject
from openwop_bridge.spec import v2 as spec

#: The ``InterruptPayload`` fields (``suspend-request.schema.json``).
INTERRUPT_PAYLOAD_KEYS = ("kind", "key", "data", "resumeSchema", "timeoutMs")
REQUESTED = frozenset({"interrupt.requested", "clarification.requested"})
RESOLVED = frozenset(
    {
        "interrupt.resolved",
        "clarification.resolved",
        "approval.received",
        "approval.granted",
        "approval.rejected",
        "approval.overridden",
    }
)
DECISIONS = {"approved": "granted", "granted": "granted", "rejected": "rejected", "overridden": "overridden"}
ACTIONS = frozenset({"accept", "reject", "refine", "edit-accept", "timeout"})
_VOTE_ACTION = {"approval.granted": "accept", "approval.rejected": "reject"}
_BOUND_KEYS = ("interruptId", "childRunId", "parentRunId", "sourceRunId")
_WHO_KEYS = ("resolvedBy", "decidedBy", "principal")
_EXTENSION = ("openwop-", "x-", "vendor.")

#: ``(node id, event time in ms) → engine interrupt id`` for payloads that do not carry one.
InterruptOf = Callable[[str, str], str | None]


def _named(definition: str) -> set[str]:
    """The property names a payload definition declares, following ``$ref`` composition."""
    node: dict[str, Any] = spec.schema("run-event-payloads.schema.json")["$defs"][definition]
    while "$ref" in node and "properties" not in node:
        node = spec.schema("run-event-payloads.schema.json")["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return set(node.get("properties", {}))


def _extend(out: dict[str, Any], named: set[str]) -> dict[str, Any]:
    """Move every field the definition does not name under ``x-``."""
    return {k if k in named or k.startswith(_EXTENSION) else f"x-{k}": v for k, v in out.items()}


def requested(p: dict[str, Any]) -> dict[str, Any]:
    """The ``InterruptPayload`` of an ``interrupt.requested`` event."""
    out = {k: p[k] for k in INTERRUPT_PAYLOAD_KEYS if k in p}
    if REGISTRY.get(str(p.get("kind"))) is APPROVAL and isinstance(out.get("data"), dict):
        out["data"] = {k: v for k, v in out["data"].items() if k != "gateId"}
    out.setdefault("data", {})
    return out


def resolved(
    type_: str, p: dict[str, Any], node_id: str | None, tenant: str, interrupt_id: str | None
) -> dict[str, Any]:
    """A v2 ``interruptResolved`` payload from any of the engine's resolution events."""
    out: dict[str, Any] = {k: v for k, v in p.items() if k not in ("gateId", *_WHO_KEYS)}
    out["nodeId"] = p.get("nodeId") or node_id or p.get("gateId")
    engine_interrupt = p.get("interruptId") or interrupt_id
    if engine_interrupt:
        out["interruptId"] = ids.bind(tenant, str(engine_interrupt))
    who = next((p[k] for k in _WHO_KEYS if isinstance(p.get(k), str)), None)
    if who:
        out["resolvedBy"] = subject(tenant, who)
    action = p.get("action", _VOTE_ACTION.get(type_))
    if action in ACTIONS:
        out["action"] = action
    elif "action" in out:
        out["x-action"] = out.pop("action")
    decision = DECISIONS.get(str(p.get("decision", "")))
    out.pop("decision", None)
    if decision:
        out["decision"] = decision
    reason = p.get("reason")
    if not (isinstance(reason, str) and 1 <= len(reason) <= 64):
        out.pop("reason", None)
        if reason is not None:
            out["x-reason"] = reason
    return _extend(out, _named("interruptResolved"))


def payload(doc: dict[str, Any], tenant: str, interrupt_of: InterruptOf | None = None) -> Any:
    """The v2 payload of one engine event document."""
    type_ = str(doc.get("type", ""))
    p = doc.get("payload")
    if not isinstance(p, dict):
        return p
    if type_ in REQUESTED:
        return requested(p)
    if type_ in RESOLVED:
        node_id = doc.get("nodeId")
        known = p.get("interruptId")
        if not known and interrupt_of is not None and node_id:
            known = interrupt_of(str(node_id), str(doc.get("timestamp", "")))
        return resolved(type_, p, node_id, tenant, known)
    out = {k: ids.bind(tenant, v) if k in _BOUND_KEYS and isinstance(v, str) else v for k, v in p.items()}
    if type_ == "run.started" and isinstance(p.get("owner"), dict):
        who = str(p["owner"].get("principal") or "")
        out["owner"] = {"tenant": tenant, "subject": subject(tenant, who)}
    if type_ == "node.failed" and isinstance(p.get("error"), dict):
        out["error"] = {"retryable": False, **p["error"]}  # the engine records node.failed once, never retried
    if type_ == "run.started" and "engineVersion" in out and not isinstance(out["engineVersion"], int):
        out["x-engineVersion"] = out.pop("engineVersion")  # v2's is an integer; the engine's names a build
    definition = spec.event_payload_def(type_)
    return _extend(out, _named(definition)) if definition else out
