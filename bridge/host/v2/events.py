"""Event payloads in their v2 spelling (``run-event-payloads.schema.json`` under ``schemas/v2``).

The engine writes one log; v1 reads it as written. Over v2 each payload is re-spelled:

- ``interrupt.requested`` (and ``clarification.requested``) carry the ``InterruptPayload``
  the node suspended with, verbatim, except the engine's own ``data.gateId`` on an
  approval (v2 closes ``ApprovalData``; the gate is the event's ``nodeId``).
- ``interrupt.resolved`` and the legacy ``approval.*`` / ``clarification.resolved``
  types share v2's ``interruptResolved`` shape: ``action``, ``decision`` (the engine's
  ``approved`` is v2's ``granted``), ``reason``, and ``resolvedBy`` as a Subject: the one the decision
  recorded (``resolvedBySubject`` / ``decidedBySubject``; a vote's, which v1's closed ``approval.granted``
  cannot carry, from its entry in the gate's ``votes``), else the API-key subject of the principal; with
  ``actor``, the Subject of whoever acted in its place (a delegate, an operator acting as someone), from the
  resolution's ``actingPrincipal`` / ``actingSubject`` (a vote event's from its entry in the gate's ``votes``).
- Ids are tenant-bound; ``run.started`` names its owner as ``{tenant, subject}`` (the recorded
  ``ownerSubject``, else the API-key subject).
- ``node.failed`` says ``error.retryable: false``: the engine records it once, when the
  node has failed for good (interrupt.md §Rejection asks it of ``approval_rejected``).
- A field the v2 definition does not name moves under ``x-<name>`` (v2 admits
  ``x-`` extensions on every closed payload), so nothing the engine recorded is lost.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.kinds import APPROVAL, REGISTRY
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.host.v2 import ids, subjects
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
_SUBJECT_KEYS = ("resolvedBySubject", "decidedBySubject")
#: Who acted in the resolver's place: spelled as ``resolvedBy.actor``.
_ACTING_KEYS = ("actingPrincipal", "actingSubject")
_EXTENSION = ("openwop-", "x-", "vendor.")


@dataclass(frozen=True)
class InterruptOf:
    """What a run's interrupts say that some payloads do not: ``(node id, event time) → engine interrupt
    id`` (calling it), and the subject a vote was cast with (:meth:`vote_subject`)."""

    held: list[tuple[str, str, str]] = field(default_factory=list)
    votes: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    #: ``(interrupt id, voter) → the vote``, for the votes someone cast in their voter's place.
    acted: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Iterable[InterruptRecord]) -> InterruptOf:
        """The lookup over a run's interrupt records."""
        held: list[tuple[str, str, str]] = []
        votes: dict[tuple[str, str], dict[str, Any]] = {}
        acted: dict[tuple[str, str], dict[str, Any]] = {}
        for r in records:
            held.append((iso_ms(r.requested_at_ms), r.node_id, r.interrupt_id))
            for vote in r.state.get("votes") or []:
                if isinstance(vote, dict) and isinstance(vote.get("subject"), dict):
                    votes.setdefault((r.interrupt_id, str(vote.get("voter"))), vote["subject"])
                if isinstance(vote, dict) and vote.get("actingPrincipal"):
                    acted.setdefault((r.interrupt_id, str(vote.get("voter"))), vote)
        return cls(sorted(held), votes, acted)

    def __call__(self, node_id: str, at: str) -> str | None:
        found = [iid for when, node, iid in self.held if node == node_id and when <= at]
        return found[-1] if found else None

    def vote_subject(self, interrupt_id: str, voter: str) -> dict[str, Any] | None:
        """The recorded subject of ``voter``'s vote on the interrupt, if it has one."""
        return self.votes.get((interrupt_id, voter))

    def vote_acted(self, interrupt_id: str, voter: str) -> dict[str, Any] | None:
        """``voter``'s vote on the interrupt when someone cast it in their place (see :func:`subjects.actor`)."""
        return self.acted.get((interrupt_id, voter))


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
    type_: str,
    p: dict[str, Any],
    node_id: str | None,
    tenant: str,
    interrupt_id: str | None,
    lookup: InterruptOf | None = None,
) -> dict[str, Any]:
    """A v2 ``interruptResolved`` payload from any of the engine's resolution events."""
    dropped = ("gateId", *_WHO_KEYS, *_SUBJECT_KEYS, *_ACTING_KEYS)
    out: dict[str, Any] = {k: v for k, v in p.items() if k not in dropped}
    out["nodeId"] = p.get("nodeId") or node_id or p.get("gateId")
    engine_interrupt = p.get("interruptId") or interrupt_id
    if engine_interrupt:
        out["interruptId"] = ids.bind(tenant, str(engine_interrupt))
    who = next((p[k] for k in _WHO_KEYS if isinstance(p.get(k), str)), None)
    if who:
        ref = next((p[k] for k in _SUBJECT_KEYS if isinstance(p.get(k), dict)), None)
        if ref is None and lookup is not None and engine_interrupt:
            ref = lookup.vote_subject(str(engine_interrupt), who)
        # interrupt.resolved records who acted in the resolver's place; a vote event's is in the gate's vote.
        acted: dict[str, Any] | None = p
        if type_ != "interrupt.resolved" and lookup is not None and engine_interrupt:
            acted = lookup.vote_acted(str(engine_interrupt), who) or p
        out["resolvedBy"] = subjects.of(tenant, who, ref, subjects.actor(tenant, who, acted))
    if isinstance(p.get("delegation"), str):
        out["delegation"] = ids.bind(tenant, p["delegation"])
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
        return resolved(type_, p, node_id, tenant, known, interrupt_of)
    out = {k: ids.bind(tenant, v) if k in _BOUND_KEYS and isinstance(v, str) else v for k, v in p.items()}
    if type_ == "run.started" and isinstance(p.get("owner"), dict):
        who = str(p["owner"].get("principal") or "")
        out["owner"] = {"tenant": tenant, "subject": subjects.of(tenant, who, out.pop("ownerSubject", None))}
    if type_ == "node.failed" and isinstance(p.get("error"), dict):
        out["error"] = {"retryable": False, **p["error"]}  # the engine records node.failed once, never retried
    if type_ == "run.started" and "engineVersion" in out and not isinstance(out["engineVersion"], int):
        out["x-engineVersion"] = out.pop("engineVersion")  # v2's is an integer; the engine's names a build
    definition = spec.event_payload_def(type_)
    return _extend(out, _named(definition)) if definition else out
