"""Who is told about an interrupt: approvers, role holders, routes; once each; never another tenant."""

from __future__ import annotations

from typing import Any

from openwop_bridge.core.notices import Audience
from openwop_bridge.notify.config import NotifyConfig, parse_notify_config
from openwop_bridge.notify.recipients import Recipient, audience_of, recipients_for, targets_to_recipients


def _config(routes: list[dict[str, Any]]) -> NotifyConfig:
    return parse_notify_config(
        {
            "publicBaseUrl": "http://127.0.0.1:8000",
            "people": {
                "alice": {"tenant": "a", "email": "alice@example.com", "slack": "U0ALICE", "roles": ["finance"]},
                "bob": {"tenant": "a", "email": "bob@example.com", "roles": ["finance", "director"]},
                "carol": {"tenant": "a", "slack": "U0CAROL"},
                "mallory": {"tenant": "b", "email": "mallory@example.com", "roles": ["finance"]},
                "dave": {"tenant": "a", "roles": ["finance"]},
            },
            "channels": {
                "email": {"smtp": "smtp://127.0.0.1:8025", "from": "a@example.com"},
                "slack": {"token": "xoxb-1", "signingSecret": "s", "apiBase": "http://127.0.0.1:9/"},
                "teams": {"ops": {"url": "http://127.0.0.1:9/t"}},
            },
            "routes": routes,
        },
        environ={},
    )


def _tell(config: NotifyConfig, data: dict[str, Any], *, tenant: str = "a", kind: str = "approval") -> list[Recipient]:
    return recipients_for(config, workflow_id="wf", kind=kind, tenant=tenant, data=data)


def test_approvers_then_role_holders_each_on_every_channel_they_have() -> None:
    found = _tell(_config([]), {"approversList": ["carol", "alice", "nobody"], "requiredRole": "finance"})
    assert found == [
        Recipient("slack", "U0CAROL", "carol"),
        Recipient("slack", "U0ALICE", "alice"),
        Recipient("email", "alice@example.com", "alice"),
        Recipient("email", "bob@example.com", "bob"),
    ]
    assert [r.key for r in found] == ["carol", "alice", "alice", "bob"]


def test_a_person_named_by_several_rules_is_told_once() -> None:
    routes = [
        {"notify": ["alice", "role:finance", "email:team@example.com"]},
        {"match": {"kind": "approval"}, "notify": ["alice", "email:team@example.com", "slack:C0FIN", "teams:ops"]},
    ]
    found = _tell(_config(routes), {"approversList": ["alice"], "requiredRole": "finance"})
    assert [(r.channel, r.key) for r in found] == [
        ("slack", "alice"),
        ("email", "alice"),
        ("email", "bob"),
        ("email", "email:team@example.com"),
        ("slack", "slack:C0FIN"),
        ("teams", "teams:ops"),
    ]
    assert found[3].person is None and found[3].address == "team@example.com"


def test_people_of_another_tenant_are_never_told() -> None:
    routes = [{"notify": ["mallory", "role:finance"]}]
    found = _tell(_config(routes), {"approversList": ["mallory"]})
    assert "mallory" not in [r.person for r in found]
    assert [r.person for r in _tell(_config(routes), {}, tenant="b")] == ["mallory"]


def test_routes_match_on_workflow_kind_and_tenant_absent_meaning_any() -> None:
    routes = [
        {"match": {"workflowId": "other"}, "notify": ["alice"]},
        {"match": {"kind": "clarification"}, "notify": ["bob"]},
        {"match": {"tenant": "b"}, "notify": ["carol"]},
        {"match": {"workflowId": "wf", "kind": "approval", "tenant": "a"}, "notify": ["carol"]},
    ]
    config = _config(routes)
    assert [r.person for r in _tell(config, {})] == ["carol"]
    assert [r.person for r in _tell(config, {}, kind="clarification")] == ["bob"]
    assert _tell(config, {}, tenant="b") == []  # the route names carol, of tenant a


def test_a_person_without_any_address_and_a_role_nobody_holds_tell_no_one() -> None:
    assert _tell(_config([{"notify": ["dave", "role:legal"]}]), {}) == []


def test_escalation_targets_follow_the_same_rules() -> None:
    config = _config([])
    assert targets_to_recipients(config, ["role:director", "role:director", "mallory"], "a") == [
        Recipient("email", "bob@example.com", "bob")
    ]


def test_a_persons_audience_names_them_their_roles_and_the_routes_that_reach_them() -> None:
    config = _config(
        [
            {"match": {"workflowId": "expense"}, "notify": ["alice"]},
            {"match": {"kind": "clarification"}, "notify": ["role:finance"]},
            {"match": {"workflowId": "hr", "tenant": "b"}, "notify": ["alice"]},
            {"match": {"workflowId": "ops"}, "notify": ["bob", "role:director"]},
        ]
    )
    assert audience_of(config, "alice", "a") == Audience(
        "alice", frozenset({"finance"}), (("expense", None), (None, "clarification"))
    )
    assert audience_of(config, "alice", "b") is None, "nobody of another tenant"
    assert audience_of(config, "nobody", "a") is None
