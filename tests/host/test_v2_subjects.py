"""The v2 Subject of a run's owner and of a decision's maker: the recorded ``{issuer, subjectId, lane}``
when the run or decision has one, else the API-key subject of the principal id."""

from __future__ import annotations

from typing import Any

from openwop_bridge.host.v2 import documents, events, subjects
from openwop_bridge.spec import v2 as spec

ISSUER = "https://idp.example.com"
REF = {"issuer": ISSUER, "subjectId": "248289761001", "lane": "oidc"}
SUBJECT = {**REF, "tenant": "acme", "kind": "user"}


def _doc(type_: str, payload: dict[str, Any], node_id: str | None = "gate") -> dict[str, Any]:
    return {
        "eventId": "evt_01m8vbzgnb3m4rkc3q6yy9szrs",
        "runId": "run_01m8vbzgnb3m4rkc3q6yy9szrs",
        "sequence": 3,
        "schemaVersion": 1,
        "type": type_,
        "timestamp": "2026-12-02T12:00:00.000Z",
        "payload": payload,
        **({"nodeId": node_id} if node_id else {}),
    }


def test_a_recorded_subject_is_the_subject_and_anything_else_the_key_realm() -> None:
    assert subjects.of("acme", "alice", REF) == SUBJECT
    assert spec.problems("subject.schema.json", SUBJECT) == []
    assert subjects.of("acme", "alice", None) == subjects.subject("acme", "alice")
    for bad in ({"issuer": ISSUER, "subjectId": "x", "lane": "telepathy"}, {"issuer": "", "subjectId": "x"}, "x"):
        assert subjects.of("acme", "alice", bad)["issuer"] == subjects.API_KEY_ISSUER
    spaced = subjects.of("acme", "a", {"issuer": ISSUER, "subjectId": "a b/c", "lane": "oauth2"})
    assert spaced["subjectId"] == "a_b_c" and spec.problems("subject.schema.json", spaced) == []


def test_events_name_the_recorded_subjects() -> None:
    started = documents.event(
        _doc(
            "run.started",
            {"workflowId": "wf", "owner": {"tenant": "acme", "principal": "alice"}, "ownerSubject": REF},
            None,
        ),
        "acme",
    )
    assert started["payload"]["owner"] == {"tenant": "acme", "subject": SUBJECT}
    assert spec.validate_event(started) == []
    resolved = documents.event(
        _doc(
            "interrupt.resolved",
            {
                "nodeId": "gate",
                "interruptId": "int_01m8vbzgnb3m4rkc3q6yy9szrs",
                "resolvedBy": "alice",
                "resolvedBySubject": REF,
            },
        ),
        "acme",
    )
    assert resolved["payload"]["resolvedBy"] == SUBJECT and "x-resolvedBySubject" not in resolved["payload"]
    assert spec.validate_event(resolved) == []
    cancelled = documents.event(
        _doc(
            "run.cancelled",
            {"reason": "enough", "cancelledBy": "alice", "cancelledBySubject": REF, "durationMs": 5},
            None,
        ),
        "acme",
    )
    assert cancelled["payload"]["x-cancelledBySubject"] == REF
    assert spec.validate_event(cancelled) == []


def test_a_vote_event_finds_its_subject_in_the_gates_votes() -> None:
    lookup = events.InterruptOf(
        held=[("2026-12-02T11:00:00.000Z", "gate", "int_1")],
        votes={("int_1", "alice"): REF},
    )
    granted = documents.event(_doc("approval.granted", {"gateId": "gate", "principal": "alice"}), "acme", lookup)
    assert granted["payload"]["resolvedBy"] == SUBJECT
    other = documents.event(_doc("approval.granted", {"gateId": "gate", "principal": "bob"}), "acme", lookup)
    assert other["payload"]["resolvedBy"] == subjects.subject("acme", "bob")


def test_an_interrupt_documents_resolution_names_its_subject() -> None:
    view = {"interruptId": "int_1", "runId": "run_1", "resolution": {"resolvedBy": "alice", "resolvedBySubject": REF}}
    out = documents.interrupt(view, "acme", "http://127.0.0.1")
    assert out["resolution"] == {"resolvedBy": SUBJECT}
    keyed = documents.interrupt({"interruptId": "int_1", "resolution": {"resolvedBy": "bob"}}, "acme", "")
    assert keyed["resolution"]["resolvedBy"] == subjects.subject("acme", "bob")


def test_a_decision_made_in_someones_place_names_who_acted_as_the_actor() -> None:
    cast = {
        "voter": "alice",
        "action": "accept",
        "actingPrincipal": "bob",
        "actingSubject": REF,
        "delegation": "dlg_01m8vbzgnb3m4rkc3q6yy9szrs",
    }
    assert subjects.actor("acme", "alice", cast) == SUBJECT
    acted = subjects.of("acme", "alice", None, subjects.actor("acme", "alice", cast))
    assert acted == {**subjects.subject("acme", "alice"), "actor": SUBJECT}
    assert spec.problems("subject.schema.json", acted) == []
    for own in ({"voter": "alice"}, {"voter": "alice", "actingPrincipal": "alice"}, {"actingPrincipal": ""}, None):
        assert subjects.actor("acme", "alice", own) is None
    lookup = events.InterruptOf(
        held=[("2026-12-02T11:00:00.000Z", "gate", "int_01m8vbzgnb3m4rkc3q6yy9szrs")],
        acted={("int_01m8vbzgnb3m4rkc3q6yy9szrs", "alice"): cast},
    )
    granted = documents.event(_doc("approval.granted", {"gateId": "gate", "principal": "alice"}), "acme", lookup)
    assert granted["payload"]["resolvedBy"] == acted and spec.validate_event(granted) == []
    # A resolution names who acted itself: alice cancelling the gate she had a vote cast on is hers alone.
    cancelled = {
        "nodeId": "gate",
        "interruptId": "int_01m8vbzgnb3m4rkc3q6yy9szrs",
        "resolvedBy": "alice",
        "cancelled": True,
    }
    own = documents.event(_doc("interrupt.resolved", cancelled), "acme", lookup)
    assert own["payload"]["resolvedBy"] == subjects.subject("acme", "alice")
    settled = documents.event(_doc("interrupt.resolved", {**cancelled, **cast, "cancelled": False}), "acme", lookup)
    assert (
        settled["payload"]["resolvedBy"] == acted
        and settled["payload"]["x-delegation"] == "acme/dlg-01m8vbzgnb3m4rkc3q6yy9szrs"
    )
    assert spec.validate_event(settled) == []
