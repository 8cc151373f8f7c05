"""Read models: the run snapshot, interrupt views and inbox rows.

Pure functions from store records to the JSON documents the surfaces return.
Tokens are minted by the caller and passed in, so nothing here signs or reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openwop_bridge.core import approvals, kinds
from openwop_bridge.core.clock import iso_ms
from openwop_bridge.core.events import ENGINE_VERSION
from openwop_bridge.core.records import InterruptRecord, RunRecord


def interrupt_title(record: InterruptRecord) -> str:
    """A one-line human description of what the interrupt asks."""
    return kinds.kind_of(record.kind).title(record.payload.get("data", {}))


def vote_progress(record: InterruptRecord) -> dict[str, Any] | None:
    """Votes so far on an approval (None for other kinds)."""
    if not kinds.kind_of(record.kind).votes:
        return None
    data = record.payload.get("data", {})
    votes = record.state.get("votes", [])
    progress = approvals.tally(data, votes).progress()
    progress["votes"] = [dict(v) for v in votes]
    return progress


def interrupt_view(
    record: InterruptRecord,
    *,
    token: str | None = None,
    token_expires_ms: int | None = None,
    base_url: str = "",
) -> dict[str, Any]:
    """An interrupt as shown in snapshots, inspect responses and the inbox detail."""
    view: dict[str, Any] = {
        "interruptId": record.interrupt_id,
        "runId": record.run_id,
        "workflowId": record.workflow_id,
        "nodeId": record.node_id,
        "kind": record.kind,
        "key": record.key,
        "status": record.status,
        "title": interrupt_title(record),
        "payload": record.payload,
        "requestedAt": iso_ms(record.requested_at_ms),
    }
    if record.deadline_ms is not None:
        view["expiresAt"] = iso_ms(record.deadline_ms)
    if record.resolved_at_ms is not None and not record.open:
        view["resolvedAt"] = iso_ms(record.resolved_at_ms)
    if record.resolution is not None and not record.open:
        view["resolution"] = {k: v for k, v in record.resolution.items() if k != "emitted"}
    progress = vote_progress(record)
    if progress is not None and (progress["votes"] or progress["required"] > 1):
        view["votes"] = progress
    asks = record.state.get("askExchanges")
    if asks:
        view["askExchanges"] = asks
    if kinds.kind_of(record.kind).turn:
        data = record.payload.get("data", {})
        view["conversationId"] = data.get("conversationId")
        view["turnCount"] = max(int(data.get("turnIndex") or 1) - 1, 0)
        if record.state.get("promptTurn"):
            view["promptTurn"] = record.state["promptTurn"]
    if token is not None:
        view["interruptToken"] = token
        view["callbackUrl"] = f"{base_url}/v1/interrupts/{token}"
        if token_expires_ms is not None:
            view["tokenExpiresAt"] = iso_ms(token_expires_ms)
    return view


def token_inspection(record: InterruptRecord) -> dict[str, Any]:
    """What ``GET /v1/interrupts/{token}`` shows: the interrupt view plus the
    ``InterruptPayload`` fields (``data``, ``resumeSchema``, ``timeoutMs``) at the top level."""
    view = interrupt_view(record)
    payload = record.payload
    view["data"] = payload.get("data", {})
    for name in ("resumeSchema", "timeoutMs"):
        if payload.get(name) is not None:
            view[name] = payload[name]
    return view


def inbox_item(record: InterruptRecord, now_ms: int, inspect_url: str | None) -> dict[str, Any]:
    """One row of the pending-interrupts inbox."""
    item: dict[str, Any] = {
        "interruptId": record.interrupt_id,
        "runId": record.run_id,
        "workflowId": record.workflow_id,
        "nodeId": record.node_id,
        "kind": record.kind,
        "status": record.status,
        "title": interrupt_title(record),
        "requestedAt": iso_ms(record.requested_at_ms),
        "ageMs": max(now_ms - record.requested_at_ms, 0),
    }
    if record.deadline_ms is not None:
        item["expiresAt"] = iso_ms(record.deadline_ms)
    progress = vote_progress(record)
    if progress is not None and (progress["votes"] or progress["required"] > 1):
        item["votes"] = {k: v for k, v in progress.items() if k != "votes"}
    if kinds.kind_of(record.kind).turn:
        data = record.payload.get("data", {})
        item["conversationId"] = data.get("conversationId")
        item["turnCount"] = max(int(data.get("turnIndex") or 1) - 1, 0)
    if inspect_url:
        item["inspectUrl"] = inspect_url
    return item


def _snapshot_head(run: RunRecord, status: str | None) -> dict[str, Any]:
    """The fields every snapshot has: ids, status, owner, start, versions, variables and node states."""
    state = run.state
    return {
        "runId": run.run_id,
        "workflowId": run.workflow_id,
        "status": status or run.status,
        "owner": {"tenant": run.tenant, "principal": run.spec.get("principal") or "anonymous"},
        "startedAt": iso_ms(run.created_at_ms),
        "engineVersion": ENGINE_VERSION,
        "eventLogSchemaVersion": 1,
        "variables": state.get("variables", {}),
        "nodeStates": {
            node_id: {k: v for k, v in ns.items() if k in ("status", "visit", "outputs", "error")}
            for node_id, ns in state.get("nodes", {}).items()
        },
    }


def _add_run_details(snap: dict[str, Any], run: RunRecord) -> None:
    """Add what the run has when it has it: completion, labels, lineage, its error or its outputs."""
    state, spec = run.state, run.spec
    if run.completed_at_ms is not None:
        snap["completedAt"] = iso_ms(run.completed_at_ms)
    for name in ("tags", "metadata", "configurable"):
        if spec.get(name):
            snap[name] = spec[name]
    if spec.get("replayOf"):
        snap["replayOf"] = spec["replayOf"]
    if run.parent_run_id:
        snap["parentRunId"] = run.parent_run_id
        snap["parentNodeId"] = run.parent_node_id
    if state.get("error") and run.status == "failed":
        err = state["error"]
        snap["error"] = {k: err[k] for k in ("code", "message", "details") if k in err}
    if run.status == "completed":
        snap["outputs"] = state.get("outputs", {})


def _add_open_interrupts(snap: dict[str, Any], run: RunRecord, open_views: Sequence[Mapping[str, Any]]) -> None:
    """Add the open interrupts (the first one also as ``interrupt``) and the current node."""
    if open_views:
        first = open_views[0]
        snap["currentNodeId"] = first["nodeId"]
        snap["interrupt"] = {
            "kind": first["kind"],
            "nodeId": first["nodeId"],
            "interruptId": first["interruptId"],
            "payload": first["payload"],
            **{
                k: first[k]
                for k in ("interruptToken", "tokenIntent", "callbackUrl", "expiresAt", "votes")
                if k in first
            },
        }
        snap["interrupts"] = list(open_views)
    elif run.state.get("currentNodeId"):
        snap["currentNodeId"] = run.state["currentNodeId"]


def paged_channels(
    channels: Mapping[str, Any], keep: int, href: str
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``channels`` with each message channel (a list) longer than ``keep`` cut to its last ``keep``
    entries, and for each channel cut a note: ``{total, shown, from, href}`` (``from``: the index of the
    first entry shown; ``href``: ``{href}/{name}``, which pages the whole channel)."""
    shown: dict[str, Any] = {}
    notes: dict[str, dict[str, Any]] = {}
    for name, value in channels.items():
        if isinstance(value, list) and len(value) > keep:
            shown[name] = value[len(value) - keep :] if keep > 0 else []
            notes[name] = {"total": len(value), "shown": keep, "from": len(value) - keep, "href": f"{href}/{name}"}
        else:
            shown[name] = value
    return shown, notes


def channel_page(run_id: str, name: str, value: list[Any], offset: int, limit: int) -> dict[str, Any]:
    """One page of a message channel: ``{runId, channel, total, offset, items, nextOffset?}``."""
    page: dict[str, Any] = {
        "runId": run_id,
        "channel": name,
        "total": len(value),
        "offset": offset,
        "items": value[offset : offset + limit],
    }
    if offset + limit < len(value):
        page["nextOffset"] = offset + limit
    return page


def run_snapshot(
    run: RunRecord,
    *,
    open_views: Sequence[Mapping[str, Any]],
    channels: Mapping[str, Any] | None,
    children: Sequence[RunRecord],
    status: str | None = None,
    channel_pages: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``RunSnapshot`` document (``run-snapshot.schema.json``) of a run.

    ``status`` overrides the stored one: a run that only waits on a suspended
    child reports the child's waiting status. ``channel_pages`` notes the message
    channels the snapshot shows only the end of (see :func:`paged_channels`).
    """
    snap = _snapshot_head(run, status)
    _add_run_details(snap, run)
    if children:
        snap["childRuns"] = [{"runId": c.run_id, "status": c.status, "workflowId": c.workflow_id} for c in children]
    _add_open_interrupts(snap, run, open_views)
    if channels:
        snap["channels"] = dict(channels)
    if channel_pages:
        snap["channelPages"] = dict(channel_pages)
    return snap
