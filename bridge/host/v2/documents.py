"""Engine documents in their v2 shape: bound ids, the Subject owner, v2 links.

One engine, one store: these functions only re-spell what the engine produced
(ids per :mod:`openwop_bridge.host.v2.ids`, tokens per :mod:`openwop_bridge.host.v2.tokens`);
nothing here decides anything.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.core.records import RunRecord
from openwop_bridge.host.v2 import events, ids, snapshots, subjects, tokens
from openwop_bridge.host.v2.subjects import API_KEY_ISSUER, subject

__all__ = [
    "API_KEY_ISSUER",
    "event",
    "interrupt",
    "link",
    "poll_head",
    "poll_trailer",
    "resolved_by",
    "snapshot",
    "subject",
]


def event(doc: dict[str, Any], tenant: str, interrupt_of: events.InterruptOf | None = None) -> dict[str, Any]:
    """A ``RunEventDoc`` under v2: bound ``runId``, v2 ``eventId`` and payload (:mod:`.events`);
    ``engineVersion`` (a string here) and v1's top-level ``interruptId`` (v2's envelope is closed; the
    ``node.suspended`` the request causes names it) left out."""
    out = {k: v for k, v in doc.items() if k not in ("engineVersion", "interruptId")}
    out["runId"] = ids.bind(tenant, doc["runId"])
    out["payload"] = events.payload(doc, tenant, interrupt_of)
    out["eventId"] = ids.opaque(str(doc["eventId"]))
    if doc.get("causationId"):
        out["causationId"] = ids.opaque(str(doc["causationId"]))
    return out


def link(base_url: str, token: str) -> str:
    """The v2 URL of a signed link."""
    return f"{base_url}/interrupts/{token}"


def interrupt(view: dict[str, Any], tenant: str, base_url: str) -> dict[str, Any]:
    """An interrupt view under v2: bound ids, its token and links in the ``ow2`` grammar at root paths, and
    its resolution's ``resolvedBy`` as a Subject (the recorded one, else the API-key subject)."""
    out = resolved_by(view, tenant)
    if "runId" in out:
        out["runId"] = ids.bind(tenant, out["runId"])
    if "interruptId" in out:
        out["interruptId"] = ids.bind(tenant, out["interruptId"])
    token = out.get("interruptToken")
    if isinstance(token, str):
        out["interruptToken"] = tokens.to_v2(token)
        out["callbackUrl"] = link(base_url, out["interruptToken"])
    inspect = out.get("inspectUrl")
    if isinstance(inspect, str) and "/v1/interrupts/" in inspect:
        out["inspectUrl"] = link(base_url, tokens.to_v2(inspect.rsplit("/", 1)[1]))
    return out


def resolved_by(view: dict[str, Any], tenant: str) -> dict[str, Any]:
    """A copy of an interrupt view whose resolution names its ``resolvedBy`` as a Subject (the one the
    decision recorded, else the API-key subject of the principal), and whose votes name their voter's
    ``subject`` so; either with ``actor`` when someone acted in its place (:func:`subjects.actor`)."""
    out = dict(view)
    resolution = out.get("resolution")
    if isinstance(resolution, dict) and isinstance(resolution.get("resolvedBy"), str):
        out["resolution"] = _decided(resolution, "resolvedBy", "resolvedBySubject", "resolvedBy", tenant)
    votes = out.get("votes")
    if isinstance(votes, dict) and isinstance(votes.get("votes"), list):
        cast = [
            _decided(v, "voter", "subject", "subject", tenant) if isinstance(v, dict) else v for v in votes["votes"]
        ]
        out["votes"] = {**votes, "votes": cast}
    return out


def _decided(decision: dict[str, Any], who_key: str, ref_key: str, into: str, tenant: str) -> dict[str, Any]:
    """A recorded decision (a resolution, a vote) in v2 words: the Subject of its decider (named by ``who_key``,
    recorded under ``ref_key``) under ``into``, with ``actor`` when someone acted in their place; the delegation
    it went through tenant-bound."""
    who = decision.get(who_key)
    if not isinstance(who, str):
        return decision
    out = {k: v for k, v in decision.items() if k not in (ref_key, "actingPrincipal", "actingSubject")}
    out[into] = subjects.of(tenant, who, decision.get(ref_key), subjects.actor(tenant, who, decision))
    if isinstance(decision.get("delegation"), str):
        out["delegation"] = ids.bind(tenant, decision["delegation"])
    return out


def snapshot(
    snap: dict[str, Any], tenant: str, principal_id: str, base_url: str, owner_subject: Any = None
) -> dict[str, Any]:
    """A ``RunSnapshot`` under v2, closed (:mod:`.snapshots`); its owner's subject is the one the run
    recorded (``owner_subject``, ``{issuer, subjectId, lane}``), else the API-key subject of ``principal_id``."""
    out = {k: v for k, v in snap.items() if k != "engineVersion"}
    out["runId"] = ids.bind(tenant, snap["runId"])
    out["owner"] = {"tenant": tenant, "subject": subjects.of(tenant, principal_id, owner_subject)}
    if snap.get("parentRunId"):
        out["parentRunId"] = ids.bind(tenant, snap["parentRunId"])
    if isinstance(snap.get("interrupt"), dict):
        out["interrupt"] = interrupt(snap["interrupt"], tenant, base_url)
    if isinstance(snap.get("interrupts"), list):
        out["interrupts"] = [interrupt(v, tenant, base_url) for v in snap["interrupts"]]
    if isinstance(snap.get("childRuns"), list):
        out["childRuns"] = [{**c, "runId": ids.bind(tenant, c["runId"])} for c in snap["childRuns"]]
    if snap.get("replayOf"):
        out["replayOf"] = ids.bind(tenant, snap["replayOf"])
    return snapshots.close(out)


def poll_head(run_id: str, tenant: str) -> dict[str, Any]:
    """What the v2 poll response ``{runId, events, lastSequence, status, isTerminal}`` has before ``events``."""
    return {"runId": ids.bind(tenant, run_id)}


def poll_trailer(run: RunRecord | None) -> dict[str, Any]:
    """What the v2 poll response has after ``events``: the run's last sequence, ``status`` and ``isTerminal``."""
    return {
        "lastSequence": run.next_seq - 1 if run is not None else -1,
        "status": run.status if run is not None else None,
        "isTerminal": run is not None and run.terminal,
    }


class WebhookWire:
    """The v2 wire form of webhook deliveries, handed to the notify layer's webhook channel
    (:class:`~openwop_bridge.notify.webhook.channel.WireFormat`)."""

    @staticmethod
    def body(tenant: str, run_id: str, doc: dict[str, Any]) -> dict[str, Any]:
        """``{runId, event}``: the run's tenant-bound id and its v2 event, verbatim."""
        return {"runId": ids.bind(tenant, run_id), "event": event(doc, tenant)}

    @staticmethod
    def webhook_id(tenant: str, webhook_id: str) -> str:
        """The subscription's v2 id: tenant-bound, ``<tenant>/whk-<ULID>``."""
        return ids.bind(tenant, webhook_id)
