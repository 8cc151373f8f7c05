"""The decision record: every decision appends a signed, hash-chained record in its own transaction.

Exported (``GET /v1/audit/decisions``) and checked offline (:func:`verify_lines`, what ``openwop-bridge audit
verify`` runs) against the published keys (``GET /v1/audit/keys``); editing, removing or reordering a stored
record or an exported line is caught and the first broken record named. Runs on both stores.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from openwop_bridge import Engine, Workflow
from openwop_bridge.core.decision_record import GENESIS, canonical, digest
from openwop_bridge.core.decision_verify import Verdict, verify_lines
from openwop_bridge.core.record_signature import key_set
from openwop_bridge.store.steps import Plan, Sql
from tests.conftest import auth
from tests.helpers import envelope, events, settle

pytestmark = pytest.mark.engine_store

EXPORT = "/v1/audit/decisions"


async def _run(client: httpx.AsyncClient, engine: Engine, workflow: str, who: str = "admin") -> str:
    r = await client.post("/v1/runs", json={"workflowId": workflow}, headers=auth(who))
    assert r.status_code == 201, r.text
    run_id = str(r.json()["runId"])
    await settle(engine, run_id)
    return run_id


async def _answer(client: httpx.AsyncClient, run_id: str, node: str, value: Any, who: str = "bob") -> httpx.Response:
    return await client.post(f"/v1/runs/{run_id}/interrupts/{node}", json={"resumeValue": value}, headers=auth(who))


async def _export(client: httpx.AsyncClient, who: str = "admin") -> list[bytes]:
    r = await client.get(EXPORT, params={"format": "jsonl"}, headers=auth(who))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    return [line for line in r.content.split(b"\n") if line]


async def _keys(client: httpx.AsyncClient) -> dict[str, Any]:
    r = await client.get("/v1/audit/keys")  # no key needed
    assert r.status_code == 200, r.text
    return dict(r.json())


async def _verify(client: httpx.AsyncClient, lines: list[bytes], *, partial: bool = False) -> Verdict:
    return verify_lines(lines, key_set(await _keys(client)), partial=partial)


def _records(lines: list[bytes]) -> list[dict[str, Any]]:
    return [orjson.loads(line)["record"] for line in lines]


async def _sql(engine: Engine, text: str, args: tuple[Any, ...] = ()) -> None:
    """Run one statement on the engine's database, as someone with write access to it would."""

    def plan() -> Plan[None]:
        yield Sql(text, args)

    await engine.store._plan(plan)  # type: ignore[attr-defined]


def _gate(engine: Engine, workflow_id: str, **config: Any) -> None:
    wf = Workflow(workflow_id)
    wf.node("gate", type_id="core.approvalGate", config={"title": "Ship?", "actions": ["accept", "reject"], **config})
    wf.node("after", type_id="core.noop", after="gate")
    wf.register(engine)


async def _three_decisions(client: httpx.AsyncClient, engine: Engine) -> list[str]:
    run_ids = [await _run(client, engine, "conformance-approval") for _ in range(3)]
    for run_id in run_ids:
        assert (await _answer(client, run_id, "gate", {"action": "accept"})).status_code == 200
    return run_ids


async def test_every_kind_of_decision_appends_a_record_named_by_its_resolved_event(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    _gate(engine, "record-quorum", approversList=["bob", "opal"], requiredApprovals=2)
    vote = await _run(client, engine, "conformance-approval")
    assert (await _answer(client, vote, "gate", {"action": "accept"})).status_code == 200
    quorum = await _run(client, engine, "record-quorum")
    assert (await _answer(client, quorum, "gate", {"action": "accept"})).status_code == 200
    assert (await _answer(client, quorum, "gate", {"action": "reject"}, who="operator")).status_code == 200
    clarified = await _run(client, engine, "conformance-clarification")
    assert (await _answer(client, clarified, "ask", {"answers": {"q1": "red"}}, who="admin")).status_code == 200
    refused = await _run(client, engine, "record-quorum")
    r = await _answer(client, refused, "gate", {"action": "accept"}, who="reader")
    assert r.status_code == 403, r.text
    r = await _answer(client, refused, "gate", {"action": "accept"}, who="admin")
    envelope(r, 403, "forbidden")  # alice is not among the approvers: refused by policy, and recorded
    cancelled = await _run(client, engine, "conformance-approval")
    r = await client.post(f"/v1/runs/{cancelled}/interrupts/gate/cancel", headers=auth("admin"))
    assert r.status_code == 200, r.text
    run_cancelled = await _run(client, engine, "conformance-clarification")
    assert (await client.post(f"/v1/runs/{run_cancelled}/cancel", headers=auth("admin"))).status_code in (200, 202)
    timed_out = await _run(client, engine, "conformance-approval-timeout")
    await settle(engine, timed_out, statuses=("completed", "failed"), timeout=15)

    lines = await _export(client)
    verdict = await _verify(client, lines)
    assert verdict.holds, verdict.broken
    records = _records(lines)
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert records[0]["prev"] == GENESIS
    by_run: dict[str, list[tuple[str, str | None, str]]] = {}
    for record in records:
        by_run.setdefault(record["runId"], []).append((record["decision"], record["action"], record["by"]))
    assert by_run[vote] == [("vote", "accept", "bob")]
    assert by_run[quorum] == [("vote", "accept", "bob"), ("vote", "reject", "opal")]
    assert by_run[clarified] == [("answer", None, "alice")]
    assert by_run[refused] == [("denial", "approvals:respond", "alice")]
    assert by_run[cancelled] == [("cancel", "reject", "alice")]
    assert by_run[run_cancelled] == [("cancel", None, "alice")]
    assert by_run[timed_out] == [("timeout", "timeout", "system:timeout")]
    reasons = {r["runId"]: r["reason"] for r in records if r["runId"] in (cancelled, run_cancelled, timed_out, refused)}
    assert reasons[cancelled] == reasons[run_cancelled] == "cancelled" and reasons[timed_out] == "timeout"
    assert "not among this gate's approvers" in reasons[refused]
    assert next(r for r in records if r["runId"] == vote)["reason"] is None

    # interrupt.resolved names the record of the decision that settled it.
    ids = {r["id"]: r for r in records}
    for run_id in (vote, quorum, clarified, cancelled, run_cancelled, timed_out):
        resolved = await events(engine, run_id, "interrupt.resolved")
        assert len(resolved) == 1, resolved
        named = ids[resolved[0]["payload"]["decisionRecordId"]]
        assert named["runId"] == run_id and named == [r for r in records if r["runId"] == run_id][-1]

    # What the person was shown and what they gave, as hashes an auditor recomputes.
    first = next(r for r in records if r["runId"] == vote)
    shown = await engine.store.interrupt_at(vote, "gate")
    assert shown is not None
    assert first["shownHash"] == digest(shown.payload) and first["valueHash"] == digest({"action": "accept"})
    assert first["interruptId"] == shown.interrupt_id and first["kind"] == "approval"
    assert first["subject"] == {"issuer": "urn:openwop-bridge:api-key", "subjectId": "bob", "lane": "api-key"}
    assert first["assurance"] == "bearer"


async def test_a_conversation_records_each_turn(client: httpx.AsyncClient, engine: Engine) -> None:
    wf = Workflow("record-chat")
    wf.node("talk", type_id="core.conversationGate", config={"initialPrompt": "Hi", "prompt": "More?", "turnCount": 2})
    wf.register(engine)
    run_id = await _run(client, engine, "record-chat")
    for said in ("one", "two"):
        r = await _answer(client, run_id, "talk", said, who="admin")
        assert r.status_code == 200, r.text
        await settle(engine, run_id)
    records = _records(await _export(client))
    assert [(r["decision"], r["action"], r["valueHash"]) for r in records] == [
        ("turn", "exchange", digest("one")),
        ("turn", "exchange", digest("two")),
    ]
    # The conversation's opening and close are the node's, not anyone's decision: no record names them.
    resolved = [e["payload"] for e in await events(engine, run_id, "interrupt.resolved")]
    assert [(p["kind"], p.get("decisionRecordId")) for p in resolved] == [
        ("conversation.start", None),
        ("conversation.exchange", records[0]["id"]),
        ("conversation.exchange", records[1]["id"]),
        ("conversation.close", None),
    ]


async def test_a_refused_answer_records_nothing(client: httpx.AsyncClient, engine: Engine) -> None:
    run_id = await _run(client, engine, "conformance-approval")
    assert (await _answer(client, run_id, "gate", {"action": "maybe"})).status_code == 400
    assert await _export(client) == []
    assert (await _answer(client, run_id, "gate", {"action": "accept"})).status_code == 200
    envelope(await _answer(client, run_id, "gate", {"action": "accept"}), 409, "interrupt_already_resolved")
    assert [r["seq"] for r in _records(await _export(client))] == [1]


async def test_a_rolled_back_batch_leaves_no_record_and_no_gap(client: httpx.AsyncClient, engine: Engine) -> None:
    run_ids = [await _run(client, engine, "conformance-approval") for _ in range(3)]
    items = [{"runId": r, "nodeId": "gate", "resumeValue": {"action": "accept"}} for r in run_ids]
    items[2]["resumeValue"] = {"action": "maybe"}
    r = await client.post("/v1/interrupts/batch", json={"items": items, "atomic": True}, headers=auth("bob"))
    assert r.status_code == 400, r.text
    assert await _export(client) == []
    items[2]["resumeValue"] = {"action": "reject"}
    r = await client.post("/v1/interrupts/batch", json={"items": items, "atomic": True}, headers=auth("bob"))
    assert r.status_code == 200, r.text
    lines = await _export(client)
    assert [(r["seq"], r["runId"]) for r in _records(lines)] == [(i + 1, run_id) for i, run_id in enumerate(run_ids)]
    assert (await _verify(client, lines)).holds


async def test_each_tenant_has_its_own_chain_and_reads_only_its_own(client: httpx.AsyncClient, engine: Engine) -> None:
    await _three_decisions(client, engine)
    theirs = await _run(client, engine, "conformance-approval", who="other")
    assert (await _answer(client, theirs, "gate", {"action": "accept"}, who="other")).status_code == 200
    ours = _records(await _export(client))
    assert [(r["tenant"], r["seq"]) for r in ours] == [("default", 1), ("default", 2), ("default", 3)]
    other = await _export(client, who="other")
    assert [(r["tenant"], r["seq"], r["prev"]) for r in _records(other)] == [("other", 1, GENESIS)]
    assert (await _verify(client, other)).holds
    envelope(await client.get(EXPORT, headers=auth("bob")), 403, "forbidden")  # needs audit:read
    envelope(await client.get(EXPORT), 401, "unauthenticated")


async def test_pages_follow_their_cursor(client: httpx.AsyncClient, engine: Engine) -> None:
    await _three_decisions(client, engine)
    first = await client.get(EXPORT, params={"limit": 2}, headers=auth("admin"))
    assert first.status_code == 200, first.text
    assert [line["record"]["seq"] for line in first.json()["records"]] == [1, 2]
    cursor = first.json()["nextCursor"]
    rest = (await client.get(EXPORT, params={"limit": 2, "cursor": cursor}, headers=auth("admin"))).json()
    assert [line["record"]["seq"] for line in rest["records"]] == [3] and rest["nextCursor"] is None
    after = await client.get(EXPORT, params={"format": "jsonl", "cursor": cursor}, headers=auth("admin"))
    assert [orjson.loads(line)["record"]["seq"] for line in after.content.splitlines()] == [3]
    envelope(await client.get(EXPORT, params={"cursor": "nope"}, headers=auth("admin")), 400, "validation_error")
    envelope(await client.get(EXPORT, params={"limit": 0}, headers=auth("admin")), 400, "validation_error")
    envelope(await client.get(EXPORT, params={"format": "xml"}, headers=auth("admin")), 400, "validation_error")
    paged = [orjson.dumps(line) for line in first.json()["records"] + rest["records"]]
    assert (await _verify(client, paged)).holds
    later = [orjson.dumps(line) for line in rest["records"]]
    assert (await _verify(client, later, partial=True)).holds  # a page after a cursor starts mid-chain


async def test_a_receipt_lists_the_decisions_on_one_interrupt(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "receipt-quorum", approversList=["bob", "opal"], requiredApprovals=2)
    run_id = await _run(client, engine, "receipt-quorum")
    await _three_decisions(client, engine)
    await _answer(client, run_id, "gate", {"action": "accept"})
    await _three_decisions(client, engine)
    await _answer(client, run_id, "gate", {"action": "accept"}, who="operator")
    r = await client.get(f"/v1/runs/{run_id}/interrupts/gate/receipt", headers=auth("reader"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert [(line["record"]["by"], line["record"]["seq"]) for line in body["records"]] == [("bob", 4), ("opal", 8)]
    assert body["keys"] == "/v1/audit/keys"
    # A receipt is part of a chain: each record holds on its own; only a whole export shows that none is missing.
    receipt = [orjson.dumps(line) for line in body["records"]]
    assert (await _verify(client, receipt, partial=True)).holds
    whole = (await _verify(client, receipt)).broken
    assert whole is not None and whole.seq == 1 and "missing" in whole.reason
    forged = [receipt[0], receipt[1].replace(b'"by":"opal"', b'"by":"olga"')]
    broken = (await _verify(client, forged, partial=True)).broken
    assert broken is not None and broken.seq == 8 and "edited" in broken.reason
    backwards = (await _verify(client, receipt[::-1], partial=True)).broken
    assert backwards is not None and "out of order" in backwards.reason
    envelope(
        await client.get(f"/v1/runs/{run_id}/interrupts/gate/receipt", headers=auth("other")), 404, "run_not_found"
    )
    envelope(
        await client.get(f"/v1/runs/{run_id}/interrupts/nowhere/receipt", headers=auth("admin")),
        404,
        "interrupt_not_found",
    )


def _tampered(lines: list[bytes], index: int, old: bytes, new: bytes) -> list[bytes]:
    assert old in lines[index]
    return [*lines[:index], lines[index].replace(old, new, 1), *lines[index + 1 :]]


async def test_verify_catches_an_edited_a_removed_and_reordered_exported_line(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    await _three_decisions(client, engine)
    lines = await _export(client)
    assert (await _verify(client, lines)).holds
    cases: Iterator[tuple[list[bytes], int, str]] = iter(
        [
            (_tampered(lines, 1, b'"by":"bob"', b'"by":"bub"'), 2, "edited"),
            ([lines[0], lines[2]], 2, "missing"),
            ([lines[0], lines[2], lines[1]], 2, "missing"),
            ([lines[1], lines[0], lines[2]], 1, "missing"),
            (_tampered(lines, 2, b'"signature":"', b'"signature":"x'), 3, "unsigned"),
            ([*lines, b"not json"], None, "not a record line"),
        ]
    )
    for tampered, seq, why in cases:
        verdict = await _verify(client, tampered)
        assert verdict.broken is not None, (seq, why)
        assert verdict.broken.seq == seq and why in verdict.broken.reason, verdict.broken
    # A record signed by a key the set does not hold.
    verdict = await _verify(client, _tampered(lines, 0, b'"kid":"', b'"kid":"x'))
    assert verdict.broken is not None and verdict.broken.seq == 1 and "does not hold" in verdict.broken.reason
    # A record edited together with its hash still fails: the host's signature covers the content.
    record = orjson.loads(lines[1])
    record["record"]["action"] = "reject"
    record["hash"] = digest(record["record"])
    verdict = await _verify(client, [lines[0], orjson.dumps(record), lines[2]])
    assert verdict.broken is not None and verdict.broken.seq == 2 and "unsigned" in verdict.broken.reason


async def test_verify_catches_an_edited_a_deleted_and_swapped_stored_record(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    await _three_decisions(client, engine)
    await _three_decisions(client, engine)
    assert (await _verify(client, await _export(client))).holds
    # One byte of the stored record 2.
    await _sql(engine, "UPDATE decision_records SET body=REPLACE(body, '\"accept\"', '\"acceqt\"') WHERE seq=2")
    broken = (await _verify(client, await _export(client))).broken
    assert broken is not None and (broken.seq, broken.tenant) == (2, "default") and "edited" in broken.reason
    await _sql(engine, "UPDATE decision_records SET body=REPLACE(body, '\"acceqt\"', '\"accept\"') WHERE seq=2")
    assert (await _verify(client, await _export(client))).holds
    # Records 4 and 5 swapped.
    await _sql(engine, "UPDATE decision_records SET seq=-4 WHERE seq=4")
    await _sql(engine, "UPDATE decision_records SET seq=4 WHERE seq=5")
    await _sql(engine, "UPDATE decision_records SET seq=5 WHERE seq=-4")
    broken = (await _verify(client, await _export(client))).broken
    assert broken is not None and broken.seq == 4, broken
    # Record 3 deleted.
    await _sql(engine, "DELETE FROM decision_records WHERE seq=3")
    broken = (await _verify(client, await _export(client))).broken
    assert broken is not None and broken.seq == 3 and "missing" in broken.reason, broken


async def test_rotated_and_retired_keys_keep_old_records_verifiable(client: httpx.AsyncClient, engine: Engine) -> None:
    await _three_decisions(client, engine)
    first_kid = (await _keys(client))["keys"][0]["kid"]
    old_link_key = next(kid for kid, active in await engine.signing_key_ids() if active)
    await engine.rotate_signing_key()
    await _three_decisions(client, engine)
    await engine.retire_signing_key(old_link_key)
    lines = await _export(client)
    jwks = await _keys(client)
    assert len(jwks["keys"]) == 2 and first_kid in {k["kid"] for k in jwks["keys"]}
    assert all(k["kty"] == "OKP" and k["crv"] == "Ed25519" and "d" not in k for k in jwks["keys"])
    verdict = verify_lines(lines, key_set(jwks))
    assert verdict.holds and verdict.records == 6 and len(verdict.kids) == 2, verdict
    signed = [orjson.loads(line)["kid"] for line in lines]
    assert signed[0] == signed[2] == first_kid != signed[3] == signed[5]
    # Without the first key, the first records can no longer be checked: verify says so.
    only_new = {"keys": [k for k in jwks["keys"] if k["kid"] != first_kid]}
    broken = verify_lines(lines, key_set(only_new)).broken
    assert broken is not None and broken.seq == 1 and "unsigned" in broken.reason


async def test_a_stored_record_is_its_jcs_form(client: httpx.AsyncClient, engine: Engine) -> None:
    await _three_decisions(client, engine)
    for row in await engine.store.decision_records("default", 10):
        record = orjson.loads(row.body)
        assert canonical(record).decode() == row.body and digest(record) == row.hash


async def test_making_using_and_ending_a_delegation_are_recorded(client: httpx.AsyncClient, engine: Engine) -> None:
    _gate(engine, "record-away", approversList=["alice"])
    until = int(time.time() * 1000) + 3_600_000
    r = await client.post("/v1/delegations", json={"delegate": "bob", "until": until}, headers=auth("admin"))
    assert r.status_code == 201, r.text
    delegation = r.json()["delegationId"]
    run_id = await _run(client, engine, "record-away", who="operator")
    r = await _answer(client, run_id, "gate", {"action": "accept", "voter": "alice"}, who="bob")
    assert r.status_code == 200, r.text
    assert (await client.delete(f"/v1/delegations/{delegation}", headers=auth("admin"))).status_code == 200
    lines = await _export(client)
    assert (await _verify(client, lines)).holds
    made, used, ended = _records(lines)
    assert (made["decision"], made["by"], made["action"], made["delegation"]) == (
        "delegation.created",
        "alice",
        "bob",
        delegation,
    )
    assert made["runId"] is None and made["interruptId"] is None and made["valueHash"].startswith("sha256:")
    assert (used["decision"], used["by"], used["delegation"], used["runId"]) == ("vote", "alice", delegation, run_id)
    assert used["subject"]["subjectId"] == "alice" and used["subject"]["actor"]["subjectId"] == "bob"
    assert (ended["decision"], ended["by"], ended["delegation"]) == ("delegation.ended", "alice", delegation)
    assert ended["valueHash"] != made["valueHash"]  # the ended delegation says when it ended
