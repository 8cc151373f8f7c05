"""The people planner (pure): notices for an opened interrupt, delayed ones, and Slack rewrites for closed ones."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.notify.config import NotifyConfig, parse_notify_config
from openwop_bridge.notify.planner import PeoplePlanner, still_owed

NOW = 1_700_000_000_000


def _config(route: dict[str, Any], *, slack: bool = True) -> NotifyConfig:
    channels: dict[str, Any] = {"email": {"smtp": "smtp://127.0.0.1:8025", "from": "a@example.com"}}
    people: dict[str, Any] = {
        "alice": {"email": "alice@example.com", "roles": ["finance"]},
        "bob": {"email": "bob@example.com", "roles": ["director"]},
    }
    if slack:
        channels["slack"] = {"token": "xoxb-1", "signingSecret": "s", "apiBase": "http://127.0.0.1:9/"}
        people["alice"]["slack"] = "U0ALICE"
    return parse_notify_config(
        {"publicBaseUrl": "http://127.0.0.1:8000", "people": people, "channels": channels, "routes": [route]},
        environ={},
    )


def _record(kind: str = "approval", **data: Any) -> InterruptRecord:
    return InterruptRecord(
        interrupt_id="int_1",
        run_id="run_1",
        tenant="default",
        workflow_id="wf",
        node_id="review",
        exec_node="review",
        visit=1,
        ordinal=0,
        key="review",
        kind=kind,
        status="pending",
        payload={"data": {"title": "Go?", "actions": ["accept", "reject"], **data}},
        requested_at_ms=NOW,
    )


def _run() -> RunRecord:
    return RunRecord.__new__(RunRecord)  # the planner reads nothing of the run


def _plan(config: NotifyConfig, record: InterruptRecord, events: list[dict[str, Any]] | None = None) -> list[Any]:
    return PeoplePlanner(config)(_run(), events or [], [record], NOW)


def test_one_notice_per_person_and_channel_at_once() -> None:
    drafts = _plan(_config({"notify": ["alice", "role:director"]}), _record())
    assert [(d.channel, d.recipient, d.not_before_ms) for d in drafts] == [
        ("slack", "alice", None),
        ("email", "alice", None),
        ("email", "bob", None),
    ]
    assert drafts[0].payload == {
        "address": "U0ALICE",
        "person": "alice",
        "purpose": "notice",
        "of": 3,
        "onUndeliverable": "wait",
    }
    assert all(d.interrupt_id == "int_1" for d in drafts)


def test_reminders_and_escalations_are_notices_due_later() -> None:
    route = {"notify": ["alice"], "remindAfterMs": 1000, "escalateAfterMs": 5000, "escalateTo": ["role:director"]}
    drafts = _plan(_config(route), _record())
    later = [(d.channel, d.recipient, d.payload["purpose"], d.not_before_ms) for d in drafts if d.not_before_ms]
    assert later == [
        ("slack", "alice", "reminder", NOW + 1000),
        ("email", "alice", "reminder", NOW + 1000),
        ("email", "bob", "escalation", NOW + 5000),
    ]


def test_fallback_tries_a_persons_channels_one_after_another() -> None:
    drafts = _plan(_config({"notify": ["alice", "bob"], "fallbackAfterMs": 60_000}), _record())
    assert [(d.channel, d.recipient, d.not_before_ms) for d in drafts] == [
        ("slack", "alice", None),
        ("email", "alice", NOW + 60_000),
        ("email", "bob", None),
    ]


def test_nothing_for_an_interrupt_no_route_matches_nor_for_unlisted_kinds() -> None:
    config = _config({"match": {"workflowId": "other"}, "notify": ["alice"]})
    assert _plan(config, _record()) == []
    conversation = _config({"notify": ["alice"]})
    assert _plan(conversation, _record(kind="conversation.start")) == []


def test_closing_events_plan_one_slack_rewrite_per_interrupt_only_with_slack() -> None:
    closing = [
        {"type": "interrupt.resolved", "payload": {"interruptId": "int_9"}},
        {"type": "approval.granted", "payload": {"interruptId": "int_9"}},
        {"type": "interrupt.resolved", "payload": {"interruptId": "int_9"}},
    ]
    planner = PeoplePlanner(_config({"notify": []}))
    drafts = planner(_run(), closing, [], NOW)
    assert [(d.channel, d.interrupt_id, d.payload) for d in drafts] == [("slack", "int_9", {"purpose": "closed"})]
    assert PeoplePlanner(_config({"notify": []}, slack=False))(_run(), closing, [], NOW) == []


def test_a_reminder_is_owed_only_while_open_and_not_to_a_voter() -> None:
    record = _record()
    reminder = {"person": "alice", "purpose": "reminder"}
    assert still_owed(record, reminder)
    voted = replace(record, state={"votes": [{"voter": "alice", "action": "accept"}]})
    assert not still_owed(voted, reminder)
    assert still_owed(voted, {"person": "bob", "purpose": "reminder"})
    assert still_owed(voted, {"person": "alice", "purpose": "notice"})
    assert not still_owed(replace(record, status="resolved"), {"person": "bob", "purpose": "notice"})
