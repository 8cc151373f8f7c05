"""One tool call: start a run, follow it until it ends or waits on people, and apply their answers.

The calls go through the engine's public API only, so an answer given through MCP
is checked and applied exactly as the REST answer is (validation, roles, quorum,
one winner). Both MCP eras share this module; :mod:`openwop_bridge.mcp.server` decides
whether a wait becomes an ``elicitation/create`` request or an ``InputRequiredResult``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

import mcp_types as types

from openwop_bridge import Engine, InterruptRecord, Principal, RunRecord, assurance, kinds
from openwop_bridge.mcp.forms import Form, approval_variant, flatten, with_voter

Progress = Callable[[int, str], Awaitable[None]]


def form_for(record: InterruptRecord, voters: Sequence[str] = ()) -> tuple[str, Form]:
    """The elicitation message and form for an open interrupt (see :mod:`openwop_bridge.mcp.forms`).

    ``voters``: whom the caller may answer an approval for, when they stand in for someone
    (a delegation): the form then asks whose slot the answer fills (:func:`with_voter`).
    """
    kind = kinds.kind_of(record.kind)
    data = record.payload.get("data") or {}
    schema: Mapping[str, Any] = kind.response_schema(record.payload)
    if kind.votes:
        actions = data.get("actions") or ["accept"]
        schema = approval_variant(schema, "accept" if "accept" in actions else actions[0])
        return kind.prompt(data), with_voter(flatten(schema), voters)
    return kind.prompt(data), flatten(schema)


def elicitation(record: InterruptRecord, voters: Sequence[str] = ()) -> types.ElicitRequestFormParams:
    """The form-mode ``elicitation/create`` params for an open interrupt."""
    message, form = form_for(record, voters)
    return types.ElicitRequestFormParams(message=message, requested_schema=form.schema)


async def apply(
    engine: Engine, principal: Principal, record: InterruptRecord, action: str, content: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Apply the client's ``accept`` / ``decline`` / ``cancel`` to one interrupt.

    An approval's ``accept`` approves with the form's fields and ``decline`` rejects
    (its reject route); ``cancel`` cancels the interrupt (an approval fails closed).
    For other kinds ``accept`` answers with the form's fields and ``decline`` cancels.
    """
    _, form = form_for(record)
    if action == "cancel" or (action == "decline" and not kinds.kind_of(record.kind).votes):
        return await engine.cancel_interrupt(principal, record.interrupt_id, reason=f"cancelled from MCP ({action})")
    value = form.answer(content)
    if kinds.kind_of(record.kind).votes:
        value = {**value, "action": "accept" if action == "accept" else "reject"}
    return await engine.resolve(principal, value, interrupt_id=record.interrupt_id)


async def preview(
    engine: Engine, principal: Principal, record: InterruptRecord, action: str, content: Mapping[str, Any] | None
) -> None:
    """Raise what :func:`apply` would refuse (a wrong key, role or answer), applying nothing."""
    _, form = form_for(record)
    if action == "cancel" or (action == "decline" and not kinds.kind_of(record.kind).votes):
        await engine.preview_cancel(principal, record.interrupt_id)
        return
    value = form.answer(content)
    if kinds.kind_of(record.kind).votes:
        value = {**value, "action": "accept" if action == "accept" else "reject"}
    await engine.preview_answer(principal, value, interrupt_id=record.interrupt_id)


async def settle(
    engine: Engine, run_id: str, after: int, progress: Progress
) -> tuple[RunRecord, list[InterruptRecord], int]:
    """Follow a run until it ends or waits on people; returns it, its open interrupts and the last sequence."""
    async for batch in engine.follow(run_id, after, idle_s=0.5):
        for doc in batch:
            after = doc["sequence"]
            await progress(after, str(doc.get("type", "")))
        run = await engine.run_record(run_id)
        assert run is not None
        if run.terminal:
            return run, [], after
        opened = await engine.open_interrupts(run_id)
        if opened and run.status != "running":
            return run, opened, after
    run = await engine.run_record(run_id)
    assert run is not None
    return run, [] if run.terminal else await engine.open_interrupts(run_id), after


def _text(body: Mapping[str, Any]) -> list[types.ContentBlock]:
    return [types.TextContent(text=json.dumps(body, default=str))]


async def finished(engine: Engine, run: RunRecord, base_url: str) -> types.CallToolResult:
    """The result of an ended run: its outputs when it completed, its error otherwise."""
    snap = await engine.snapshot_of(run, base_url=base_url, link=None)
    if run.status == "completed":
        outputs = snap.get("outputs") or {}
        return types.CallToolResult(content=_text(outputs), structured_content=outputs, is_error=False)
    error = snap.get("error") or {"message": f"the run ended {run.status}"}
    body = {"runId": run.run_id, "status": run.status, "error": error}
    return types.CallToolResult(content=_text(body), structured_content=body, is_error=True)


def waiting(
    engine: Engine,
    principal: Principal,
    run: RunRecord,
    records: list[InterruptRecord],
    base_url: str,
    reason: str,
    may_answer: Collection[str] | None = None,
) -> types.CallToolResult:
    """A call that ends while the run still waits: which interrupts, and where to answer or look at them.

    ``may_answer``: the interrupts the caller's key may answer (all when ``None``); the others carry
    a link that only looks (``inspect``).
    """
    link = engine.link_for(principal)
    shown = []
    acts = False
    for record in records:
        intent = link if may_answer is None or record.interrupt_id in may_answer else "inspect"
        acts = acts or intent == "resolve"
        view = engine.interrupt_view(record, base_url=base_url, link=intent, reader=principal.id)
        entry = {k: view[k] for k in ("interruptId", "nodeId", "kind", "title", "callbackUrl", "votes") if k in view}
        shown.append(entry)
    body = {
        "runId": run.run_id,
        "status": "waiting",
        "reason": reason,
        "interrupts": shown,
        "inboxUrl": f"{base_url}/ui/",
        "inboxApi": f"{base_url}/v1/interrupts",
        "runUrl": f"{base_url}/v1/runs/{run.run_id}",
    }
    names = ", ".join(f"{e['title']!r} ({e['interruptId']})" for e in shown)
    where = "Answer in the inbox at" if acts else "See it in the inbox at"
    text = f"Run {run.run_id} is waiting on {names}: {reason}. {where} {body['inboxUrl']}"
    if any("callbackUrl" in e for e in shown):
        text += " or through the signed link " + ", ".join(e["callbackUrl"] for e in shown if "callbackUrl" in e)
    return types.CallToolResult(
        content=[types.TextContent(text=text + "."), *_text(body)], structured_content=body, is_error=True
    )


def needs_passkey(record: InterruptRecord) -> bool:
    """Whether ``record`` is a key-bound gate: answered only with a passkey, which no MCP form carries."""
    return (
        kinds.kind_of(record.kind).votes and assurance.required(record.payload.get("data") or {}) == assurance.KEY_BOUND
    )


def answerable(records: list[InterruptRecord]) -> bool:
    """Whether every open interrupt can be answered by a flat MCP form (never a key-bound gate)."""
    return all(form_for(r)[1].complete and not needs_passkey(r) for r in records)
