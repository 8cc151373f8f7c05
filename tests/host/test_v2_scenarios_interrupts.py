"""The official v2 interrupt scenarios, leg by leg, against the host on real uvicorn.

Each test names its scenario (``conformance/src/scenarios/<id>.test.ts`` in
openwop/openwop) and encodes its steps and expectations: runs are driven only
through the v2 HTTP surface, ids are used as the host returned them.
"""

from __future__ import annotations

import httpx

from tests.host.test_v2_schemas import assert_envelope
from tests.host.v2_scenario import (
    TERMINAL,
    V2,
    code_of,
    enc,
    events,
    h,
    suspended,
    wait_status,
)

ACCEPT = {"resumeValue": {"action": "accept"}}


async def test_v2_interrupt_resolve_terminal_after_complete_and_unknown_run(
    live: tuple[str, httpx.AsyncClient],
) -> None:
    """v2-interrupt-resolve-terminal, legs 2 and 3 (leg 1 is ``test_v2_interrupt_resolve_terminal``)."""
    _, http = live
    run_id = await suspended(http)
    first = await http.post(f"/runs/{enc(run_id)}/interrupts/gate", json=ACCEPT, headers=h())
    assert first.status_code == 200, first.text
    assert (await wait_status(http, run_id, TERMINAL))["status"] == "completed"
    again = await http.post(f"/runs/{enc(run_id)}/interrupts/gate", json=ACCEPT, headers=h())
    assert_envelope(again, 409, "interrupt_already_resolved")
    tenant = run_id.split("/", 1)[0]
    unknown = await http.post(
        f"/runs/{enc(tenant + '/openwopconformanceunknown1x2y3z')}/interrupts/gate", json=ACCEPT, headers=h()
    )
    assert_envelope(unknown, 404, "not_found")


async def test_v2_interrupt_token_scheme_unauthenticated_probes(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-interrupt-token-scheme: both probes are sent without credentials, the token percent-encoded."""
    _, http = live
    unprefixed = "b3BlbndvcC1jb25mb3JtYW5jZQ.0123456789abcdef0123456789abcdef"
    unheld = "ow2.hs256.nokid.b3BlbndvcC1jb25mb3JtYW5jZQ.0123456789abcdef0123456789abcdef"
    probe = await http.get(f"/interrupts/{enc(unprefixed)}", headers=V2)
    assert probe.status_code in (401, 404), probe.text
    expected = ("interrupt_token_invalid",) if probe.status_code == 401 else ("not_found", "interrupt_not_found")
    assert code_of(probe) in expected
    assert_envelope(await http.get(f"/interrupts/{enc(unheld)}", headers=V2), 401, "interrupt_token_invalid")


async def test_v2_approval_reject_disposition_unrouted_gate_fails_the_run(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-approval-reject-disposition, legs 1-3: ``conformance-approval`` (no edges) resolved ``reject``."""
    _, http = live
    run_id = await suspended(http)
    no = await http.post(
        f"/runs/{enc(run_id)}/interrupts/gate", json={"resumeValue": {"action": "reject"}}, headers=h()
    )
    assert 200 <= no.status_code < 300, no.text
    terminal = await wait_status(http, run_id, TERMINAL)
    log = await events(http, run_id)
    # leg 1: the run fails with approval_rejected, on the snapshot and on run.failed
    assert terminal["status"] == "failed"
    assert terminal["error"]["code"] == "approval_rejected"
    run_failed = next(e for e in log if e["type"] == "run.failed")
    assert run_failed["payload"]["error"]["code"] == "approval_rejected"
    # leg 2: interrupt.resolved records the reject
    resolved = next(e for e in log if e["type"] == "interrupt.resolved")
    assert (resolved["payload"]["action"], resolved["payload"]["decision"]) == ("reject", "rejected")
    # leg 3: the gate's node.failed, not retryable, and run.failed names the gate
    node_failed = next(
        e for e in log if e["type"] == "node.failed" and e["payload"].get("nodeId", e.get("nodeId")) == "gate"
    )
    error = node_failed["payload"]["error"]
    assert (error["code"], error["retryable"]) == ("approval_rejected", False)
    assert run_failed["payload"]["failedNodeId"] == "gate"


async def test_v2_approval_reject_disposition_majority_reject_decides_quorum(
    live: tuple[str, httpx.AsyncClient],
) -> None:
    """v2-approval-reject-disposition, leg 4: ``conformance-interrupt-quorum``, votes told apart by ``voter``."""
    _, http = live
    run_id = await suspended(http, "conformance-interrupt-quorum")
    path = f"/runs/{enc(run_id)}/interrupts/gate"
    first = await http.post(path, json={"resumeValue": {"action": "reject", "voter": "approver-1"}}, headers=h())
    assert 200 <= first.status_code < 300, first.text
    between = (await http.get(f"/runs/{enc(run_id)}", headers=h())).json()["status"]
    resolved_early = any(e["type"] == "interrupt.resolved" for e in await events(http, run_id))
    second = await http.post(path, json={"resumeValue": {"action": "reject", "voter": "approver-2"}}, headers=h())
    assert 200 <= second.status_code < 300, second.text
    terminal = await wait_status(http, run_id, TERMINAL)
    assert between == "waiting-approval" and resolved_early is False
    assert terminal["status"] == "failed" and terminal["error"]["code"] == "approval_rejected"


async def test_v2_resolve_response_decision_speaks_the_event_vocabulary(live: tuple[str, httpx.AsyncClient]) -> None:
    """The resolve response's ``decision`` is ``interruptResolved.decision``'s word (``granted | rejected |
    overridden``, run-event-payloads.schema.json), the word the run's ``interrupt.resolved`` carries."""
    _, http = live
    for action, word in (("accept", "granted"), ("reject", "rejected")):
        run_id = await suspended(http)
        body = {"resumeValue": {"action": action}}
        resp = await http.post(f"/runs/{enc(run_id)}/interrupts/gate", json=body, headers=h())
        assert resp.status_code == 200, resp.text
        assert resp.json()["decision"] == word
        await wait_status(http, run_id, TERMINAL)
        [resolved] = [e for e in await events(http, run_id) if e["type"] == "interrupt.resolved"]
        assert resolved["payload"]["decision"] == word
