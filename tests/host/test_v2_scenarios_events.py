"""The official v2 event-channel scenarios (SSE, poll, the terminal event), leg by leg, on real uvicorn.

Each test names its scenario (``conformance/src/scenarios/<id>.test.ts`` in openwop/openwop).
"""

from __future__ import annotations

import httpx

from openwop_bridge.spec import v2 as spec
from tests.host.test_v2_schemas import assert_envelope
from tests.host.v2_scenario import (
    FORWARD,
    TERMINAL,
    V2,
    code_of,
    create,
    created_settled,
    enc,
    events,
    h,
    poll,
    subscribe,
    suspended,
    wait_status,
)

TERMINAL_EVENTS = ("run.completed", "run.failed", "run.cancelled")
MODES = ("values", "updates", "messages", "debug")


async def test_v2_sse_last_event_id(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-sse-last-event-id: full stream, resume at the first id, resume at the last id, the values probe."""
    _, http = live
    run_id = await created_settled(http)
    path = f"/runs/{enc(run_id)}/events?streamMode=debug"
    full = await subscribe(http, path)
    assert full.status == 200 and full.frames and full.closed_by_server
    seqs = full.ids()
    assert len(seqs) == len(full.frames) and seqs == sorted(seqs)
    first, last = seqs[0], seqs[-1]
    resumed = await subscribe(http, path, **{"Last-Event-ID": str(first)})
    assert resumed.status == 200 and first not in resumed.ids()
    assert resumed.ids() == [s for s in seqs if s > first]
    at_end = await subscribe(http, path, **{"Last-Event-ID": str(last)})
    assert at_end.status == 200 and at_end.frames == [] and at_end.closed_by_server
    probe = await http.get(f"/runs/{enc(run_id)}/events?streamMode=bogus", headers=h(Accept="text/event-stream"))
    supported = probe.json()["details"]["supported"]
    assert isinstance(supported, list) and "values" not in supported  # the values leg does not apply here


async def test_v2_sse_last_event_id_cursor(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-sse-last-event-id-cursor: a future id, a malformed id, and runs the caller cannot read."""
    _, http = live
    run_id = await created_settled(http)
    path = f"/runs/{enc(run_id)}/events?streamMode=debug"
    seqs = (await subscribe(http, path)).ids()
    past = await subscribe(http, path, **{"Last-Event-ID": str(max(seqs) + 1000)})
    assert past.status == 200 and past.frames == [] and past.closed_by_server
    malformed = await subscribe(http, path, **{"Last-Event-ID": "abc"})
    if malformed.status != 200:  # the refusal is a SHOULD; when refused it is 400 validation_error
        assert (malformed.status, malformed.body["error"]) == (400, "validation_error")
    unknown = f"{run_id.split('/', 1)[0]}/openwopconformanceunknown1x2y3z"
    foreign = "openwop-conformance-foreign-tenant/foreignopaque0123456789abcdef"
    for other in (unknown, foreign):
        other_path = f"/runs/{enc(other)}/events?streamMode=debug"
        bare = await subscribe(http, other_path)
        cursor = await subscribe(http, other_path, **{"Last-Event-ID": "0"})
        assert bare.status != 200
        assert (cursor.status, cursor.body["error"]) == (bare.status, bare.body["error"])


async def test_v2_poll_cursor_v2(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-poll-cursor-v2: the closed shape, from sequence 0, the exclusive cursor, a cursor past the end."""
    _, http = live
    run_id = await created_settled(http)
    whole = await poll(http, run_id)
    assert whole.status_code == 200
    body = whole.json()
    assert sorted(body) == sorted(["runId", "events", "lastSequence", "status", "isTerminal"])
    assert body["runId"] == run_id and isinstance(body["status"], str) and isinstance(body["isTerminal"], bool)
    seqs = [e["sequence"] for e in body["events"]]
    assert isinstance(body["lastSequence"], int) and max(seqs) <= body["lastSequence"]
    assert seqs[0] == 0
    after = await poll(http, run_id, f"&afterSequence={seqs[0]}")
    assert after.status_code == 200 and [e["sequence"] for e in after.json()["events"]] == seqs[1:]
    beyond = await poll(http, run_id, f"&afterSequence={body['lastSequence'] + 1000}")
    assert beyond.status_code == 200 and beyond.json()["events"] == []


def terminal_shape_violation(types: list[str]) -> str | None:
    """Why a log breaks events.md §The terminal event: not exactly one terminal event, or forward execution after it."""
    terminal = [i for i, t in enumerate(types) if t in TERMINAL_EVENTS]
    if len(terminal) != 1:
        return f"{len(terminal)} terminal events"
    after = [t for t in types[terminal[0] + 1 :] if t in FORWARD]
    return f"forward execution after the terminal event: {after}" if after else None


async def test_v2_terminal_event_once(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-terminal-event-once, leg 1 (noop twice, cancellable cancelled); leg 2 needs a kill hook this host has not."""
    _, http = live
    cases = [("conformance-noop", False, "completed"), ("conformance-noop", False, "completed")]
    cases.append(("conformance-cancellable", True, "cancelled"))
    for workflow_id, cancel, want in cases:
        run_id = await create(http, workflow_id)
        if cancel:
            await http.post(f"/runs/{enc(run_id)}/cancel", json={}, headers=h())
        assert (await wait_status(http, run_id, TERMINAL, 30))["status"] == want
        types = [e["type"] for e in await events(http, run_id)]
        assert terminal_shape_violation(types) is None, (workflow_id, types)
    hook = await http.get("/host/durability/kill", headers=h())
    assert hook.status_code in (404, 405)  # no duplicate-delivery hook: the second leg is inapplicable


async def test_v2_stream_mode_refusal(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-stream-mode-refusal, leg 1: refusals before content negotiation, with ``details.supported``."""
    _, http = live
    run_id = await created_settled(http)
    path = f"/runs/{enc(run_id)}/events"
    bogus = await http.get(f"{path}?streamMode=bogus", headers=h(Accept="text/event-stream"))
    assert_envelope(bogus, 400, "unsupported_stream_mode")
    supported = bogus.json()["details"]["supported"]
    assert supported and all(m in MODES for m in supported) and "updates" in supported
    negotiated = await http.get(f"{path}?streamMode=bogus", headers=h(Accept="application/json"))
    assert negotiated.status_code == 400
    combo = await http.get(f"{path}?streamMode=updates,values", headers=h(Accept="text/event-stream"))
    assert (combo.status_code, code_of(combo)) == (400, "unsupported_stream_mode")
    for missing in (m for m in MODES if m not in supported):
        unimplemented = await http.get(f"{path}?streamMode={missing}", headers=h(Accept="text/event-stream"))
        assert (unimplemented.status_code, code_of(unimplemented)) == (400, "unsupported_stream_mode")


async def test_v2_stream_mode_refusal_updates_and_buffer(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-stream-mode-refusal, leg 2: ``updates`` streams; ``bufferMs`` batches without loss; no batch without it."""
    _, http = live
    run_id = await created_settled(http)
    path = f"/runs/{enc(run_id)}/events"
    plain = await subscribe(http, f"{path}?streamMode=updates")
    assert plain.status == 200 and plain.frames and plain.closed_by_server
    assert not any(event == "batch" for event, _, _ in plain.frames)
    buffered = await subscribe(http, f"{path}?streamMode=updates&bufferMs=200")
    assert buffered.status == 200
    batches = [data for event, _, data in buffered.frames if event == "batch"]
    assert batches and all(data.startswith("[") for data in batches)
    assert [d["sequence"] for d in buffered.docs()] == [d["sequence"] for d in plain.docs()]


async def test_v2_stream_sse_projection(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-stream-sse-projection: every frame names the run by its bound id and validates, batch frames included."""
    _, http = live
    run_id = await created_settled(http)
    for query in ("", "?bufferMs=200"):
        stream = await subscribe(http, f"/runs/{enc(run_id)}/events{query}")
        assert stream.status == 200 and stream.docs()
        for doc in stream.docs():
            assert doc["runId"] == run_id and spec.validate_event(doc) == [], doc


async def test_v2_event_type_closed(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-event-type-closed: every type is in the closed enum (no vendor org is advertised); events validate,
    sequences strictly increase. Run on the noop fixture, an answered gate and a sub-workflow."""
    _, http = live
    registered = {
        t
        for branch in spec.schema("run-event.schema.json")["properties"]["type"]["oneOf"]
        for t in branch.get("enum", [])
    }
    assert "extensions" not in (await http.get("/.well-known/openwop", headers=V2)).json()
    gate = await suspended(http)
    await http.post(f"/runs/{enc(gate)}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=h())
    await wait_status(http, gate, TERMINAL)
    for run_id in (await created_settled(http), gate, await created_settled(http, "conformance-subworkflow-parent")):
        log = await events(http, run_id)
        assert [e["type"] for e in log if e["type"] not in registered] == []
        assert all(spec.validate_event(e) == [] for e in log)
        assert [e["sequence"] for e in log] == sorted({e["sequence"] for e in log})


async def test_v2_payload_seats_0186_on_the_wire(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-payload-seats-0186 (server-free, §A.2) against what this host emits: the timer's resolution of a gate
    records its cause in ``interruptResolved.reason``, beside ``action`` and ``decision``, and validates."""
    _, http = live
    for workflow in ("conformance-approval-timeout", "conformance-approval-timeout-approve"):
        run_id = await create(http, workflow)
        assert (await wait_status(http, run_id, TERMINAL))["status"] == "failed"
        log = await events(http, run_id)
        [resolved] = [e for e in log if e["type"] == "interrupt.resolved"]
        p = resolved["payload"]
        assert (p["action"], p["decision"], p["reason"]) == ("timeout", "rejected", "timeout")
        seen = [e for e in log if e["type"] in ("interrupt.requested", "node.suspended", "interrupt.resolved")]
        assert len(seen) == 3 and all(spec.validate_event(e) == [] for e in seen)
