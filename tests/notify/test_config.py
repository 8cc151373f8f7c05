"""The notify file: what it accepts, and the one-line message naming the field when it refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge.notify.config import NotifyConfigError, load_notify_config, parse_notify_config

SECRET = "xoxb-very-secret-token-value"


def _doc(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "publicBaseUrl": "https://approvals.example.com/",
        "people": {
            "alice": {
                "tenant": "tenant-a",
                "email": "alice@example.com",
                "slack": "U0ALICE",
                "roles": ["finance"],
                "subject": {"issuer": "https://idp.example.com", "subjectId": "248289761001"},
            }
        },
        "channels": {
            "email": {"smtp": "smtp://mail.example.com:587", "starttls": True, "from": "Approvals <a@example.com>"},
            "slack": {"token": {"env": "SLACK_TOKEN"}, "signingSecret": "s3cr3t", "apiBase": "http://127.0.0.1:9/api"},
            "teams": {"ops": {"url": {"env": "TEAMS_OPS"}}},
        },
        "routes": [
            {
                "match": {"workflowId": "expense-approval", "kind": "approval", "tenant": "tenant-a"},
                "notify": ["alice", "role:finance", "email:finance-team@example.com", "slack:C0FINANCE", "teams:ops"],
                "remindAfterMs": 3600000,
                "escalateAfterMs": 14400000,
                "escalateTo": ["role:director"],
                "onUndeliverable": "fail",
            }
        ],
    }
    doc.update(over)
    return doc


ENV = {"SLACK_TOKEN": SECRET, "TEAMS_OPS": "http://127.0.0.1:9/teams"}


def _refusal(doc: Any, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(NotifyConfigError) as caught:
        parse_notify_config(doc, environ=ENV if environ is None else environ)
    return str(caught.value)


def test_the_issue_example_parses_with_secrets_from_the_environment() -> None:
    config = parse_notify_config(_doc(), environ=ENV)
    assert config.public_base_url == "https://approvals.example.com"
    assert config.people["alice"].roles == ("finance",)
    subject = config.people["alice"].subject
    assert subject is not None and (subject.issuer, subject.subject_id) == ("https://idp.example.com", "248289761001")
    slack = config.channels.slack
    assert slack is not None and slack.token.get_secret_value() == SECRET
    assert slack.api_base == "http://127.0.0.1:9/api/"
    email = config.channels.email
    assert email is not None and (email.host, email.port, email.starttls, email.implicit_tls) == (
        "mail.example.com",
        587,
        True,
        False,
    )
    route = config.routes[0]
    assert route.on_undeliverable == "fail" and route.remind_after_ms == 3600000
    assert route.match.matches("expense-approval", "approval", "tenant-a")
    assert not route.match.matches("expense-approval", "approval", "tenant-b")
    assert config.channels.teams["ops"].url.get_secret_value() == "http://127.0.0.1:9/teams"


def test_secrets_never_show_in_repr_or_dumps() -> None:
    config = parse_notify_config(_doc(), environ=ENV)
    assert SECRET not in repr(config)
    assert SECRET not in str(config.model_dump())
    assert SECRET not in config.model_dump_json()
    assert "s3cr3t" not in repr(config) and "127.0.0.1:9/teams" not in repr(config)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d["people"]["alice"].update(pager="x"), "people.alice.pager: Extra inputs are not permitted"),
        (lambda d: d["people"]["alice"].update(email="nope"), "people.alice.email: not an e-mail address"),
        (lambda d: d["routes"][0]["notify"].append("bob"), "routes[0].notify[5]: no person 'bob' in people"),
        (
            lambda d: d["routes"][0]["notify"].append("teams:sales"),
            "routes[0].notify[5]: no channels.teams.sales",
        ),
        (
            lambda d: d["routes"][0]["escalateTo"].append("email:x"),
            "routes[0].escalateTo[1]: 'x' is not an e-mail address",
        ),
        (
            lambda d: d["routes"][0].update(onUndeliverable="shrug"),
            "routes[0].onUndeliverable: Input should be 'wait', 'fail' or 'escalate'",
        ),
        (lambda d: d["routes"][0].update(remindAfterMs=0), "routes[0].remindAfterMs: Input should be greater than 0"),
        (
            lambda d: d["channels"]["email"].update(smtp="http://mail"),
            "channels.email.smtp: must be smtp://host[:port] or smtps://host[:port]",
        ),
        (
            lambda d: d["channels"]["email"].update(smtp="smtps://mail:465"),
            "channels.email: starttls: smtps:// already speaks TLS from the start; use smtp:// with starttls",
        ),
        (lambda d: d.update(publicBaseUrl="ftp://x"), "publicBaseUrl: must be an http(s) URL"),
        (lambda d: d["channels"]["email"].update({"from": "Approvals"}), "channels.email.from: must be an address"),
        (lambda d: d["channels"].pop("slack"), "people.alice.slack: no channels.slack is configured to send it"),
        (
            lambda d: d["routes"][0].pop("escalateTo"),
            "routes[0]: escalateAfterMs needs escalateTo",
        ),
        (
            lambda d: d["people"]["alice"].update(subject={"issuer": "https://idp.example.com"}),
            "people.alice.subject.subjectId: Field required",
        ),
        (
            lambda d: d["people"]["alice"].update(subject={"issuer": "https://idp example", "subjectId": "1"}),
            "people.alice.subject.issuer: String should match pattern",
        ),
        (
            lambda d: d["people"].update(
                alice={"subject": {"issuer": "https://idp.example.com", "subjectId": "248289761001"}},
                alice2={"subject": {"issuer": "https://idp.example.com", "subjectId": "248289761001"}},
            ),
            "people.alice2.subject: 'alice' already names this identity",
        ),
    ],
)
def test_a_bad_field_is_named(mutate: Any, expected: str) -> None:
    doc = _doc()
    mutate(doc)
    assert _refusal(doc).startswith(expected)


def test_a_missing_environment_variable_is_named_without_any_value() -> None:
    message = _refusal(_doc(), environ={"TEAMS_OPS": "http://127.0.0.1:9/teams"})
    assert message == "channels.slack.token: the environment variable 'SLACK_TOKEN' is not set"


def test_a_refusal_never_echoes_a_secret() -> None:
    doc = _doc()
    doc["channels"]["slack"]["token"] = {"env": "SLACK_TOKEN", "extra": SECRET}
    assert SECRET not in _refusal(doc)
    doc = _doc()
    doc["channels"]["slack"]["token"] = 12345  # wrong type: the message must not quote it
    assert "12345" not in _refusal(doc)


def test_the_file_is_read_and_named(tmp_path: Path) -> None:
    good = tmp_path / "notify.json"
    good.write_text(json.dumps(_doc()))
    assert load_notify_config(good, environ=ENV).people["alice"].tenant == "tenant-a"
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(NotifyConfigError, match="not JSON \\(line 1, column 2\\)"):
        load_notify_config(bad)
    with pytest.raises(NotifyConfigError, match="cannot read the notify file"):
        load_notify_config(tmp_path / "missing.json")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"routes": [{"notify": ["carol"]}]}))
    with pytest.raises(NotifyConfigError) as caught:
        load_notify_config(wrong)
    assert str(caught.value) == f"notify file {str(wrong)!r}: routes[0].notify[0]: no person 'carol' in people"


def test_link_base_prefers_the_file_then_the_public_url() -> None:
    config = parse_notify_config(_doc(), environ=ENV)
    assert config.link_base("http://127.0.0.1:8000") == "https://approvals.example.com"
    bare = parse_notify_config({}, environ={})
    assert bare.link_base("http://127.0.0.1:8000/") == "http://127.0.0.1:8000"
    with pytest.raises(NotifyConfigError, match="publicBaseUrl"):
        bare.link_base(None)
