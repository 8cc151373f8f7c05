"""The identity file: what it accepts, and the one-line message naming the field when it refuses."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge.host.cli import main
from openwop_bridge.identity.config import IdentityConfigError, load_identity_config, parse_identity_config

SECRET = "inbox-client-secret-do-not-print"

#: The issue's example, with the secret read from the environment.
EXAMPLE: dict[str, Any] = {
    "issuers": [
        {
            "issuer": "https://idp.example.com",
            "lane": "oidc",
            "audience": "openwop-bridge",
            "revocation": "exp-only",
            "revocationWindowSeconds": 3600,
            "claims": {
                "principal": "preferred_username",
                "tenant": "org",
                "roles": "groups",
                "scopes": "scope",
                "name": "name",
                "email": "email",
            },
            "defaultTenant": "default",
            "roleScopes": {"approvers": ["runs:read", "interrupts:read", "approvals:respond"]},
        }
    ],
    "inbox": {
        "issuer": "https://idp.example.com",
        "clientId": "bridge-inbox",
        "clientSecret": {"env": "INBOX_SECRET"},
        "scopes": ["openid", "profile", "email"],
    },
    "sessions": {"idleMs": 3600000, "absoluteMs": 43200000},
}
ENV = {"INBOX_SECRET": SECRET}


def _doc(**issuer: Any) -> dict[str, Any]:
    doc = copy.deepcopy(EXAMPLE)
    doc["issuers"][0].update(issuer)
    return doc


def _refusal(doc: Any) -> str:
    with pytest.raises(IdentityConfigError) as caught:
        parse_identity_config(doc, environ=ENV)
    return str(caught.value)


def test_the_issue_example_parses_with_the_secret_from_the_environment() -> None:
    config = parse_identity_config(EXAMPLE, environ=ENV)
    issuer = config.issuers[0]
    assert (issuer.issuer, issuer.lane, issuer.audience) == ("https://idp.example.com", "oidc", "openwop-bridge")
    assert (issuer.revocation, issuer.revocation_window_seconds) == ("exp-only", 3600)
    claims = issuer.claims
    assert (claims.principal, claims.tenant, claims.roles) == ("preferred_username", "org", "groups")
    assert issuer.role_scopes["approvers"] == ("runs:read", "interrupts:read", "approvals:respond")
    assert issuer.allowed_tenants == {"default"}
    assert config.inbox is not None and config.inbox.client_secret is not None
    assert config.inbox.client_secret.get_secret_value() == SECRET
    assert SECRET not in repr(config) and SECRET not in str(config)
    assert (config.sessions.idle_ms, config.sessions.absolute_ms) == (3600000, 43200000)
    assert config.issuer("https://idp.example.com") is issuer and config.issuer("https://idp.example.com/") is None


def test_several_issuers_and_defaults() -> None:
    config = parse_identity_config(
        {
            "issuers": [
                {"issuer": "https://a.example", "audience": "bridge", "tenants": ["tenant-a"], "defaultTenant": "x"},
                {"issuer": "http://127.0.0.1:4000/realm", "lane": "oauth2", "audience": "bridge"},
                {"issuer": "http://[::1]:4000", "audience": "bridge"},
                {"issuer": "http://localhost:4000", "audience": "bridge"},
            ]
        },
        environ={},
    )
    first, second = config.issuers[:2]
    assert first.allowed_tenants == {"tenant-a", "x"} and first.claims.principal == "sub"
    assert (second.lane, second.revocation, second.revocation_window_seconds) == ("oauth2", "exp-only", 3600)
    assert config.inbox is None and config.sessions.idle_ms == 3600000


@pytest.mark.parametrize(
    ("issuer", "expected"),
    [
        (
            {"issuer": "http://idp.example.com"},
            "issuers[0].issuer: the issuer must be https:// (http:// only on a loopback address such as 127.0.0.1)",
        ),
        ({"issuer": "ftp://idp.example.com"}, "issuers[0].issuer: the issuer must be an https:// URL"),
        (
            {"issuer": "https://idp.example.com/?tenant=1"},
            "issuers[0].issuer: the issuer must carry no user, password, query or fragment",
        ),
        ({"lane": "saml"}, "issuers[0].lane: Input should be 'oidc' or 'oauth2'"),
        ({"audience": ""}, "issuers[0].audience: String should have at least 1 character"),
        (
            {"revocation": "exp-and-recheck"},
            "issuers[0]: 'exp-and-recheck' needs 'introspection', the client the host asks the provider with",
        ),
        (
            {"revocation": "exp-and-recheck", "introspection": {"clientId": "bridge", "clientSecret": {"env": "NO"}}},
            "issuers[0].introspection.clientSecret: the environment variable 'NO' is not set",
        ),
        (
            {"introspection": {"clientId": "bridge", "clientSecret": "s"}},
            "issuers[0]: 'introspection' is used with 'exp-and-recheck' only (this issuer is 'exp-only')",
        ),
        (
            {"introspectionUri": "http://idp.example.com/introspect"},
            "issuers[0].introspectionUri: introspectionUri must be https://",
        ),
        ({"revocation": "never"}, "issuers[0].revocation: Input should be 'exp-only' or 'exp-and-recheck'"),
        ({"revocationWindowSeconds": 0}, "issuers[0].revocationWindowSeconds: Input should be greater than or equal"),
        (
            {"roleScopes": {"approvers": ["approvals:respnd"]}},
            "issuers[0].roleScopes: role 'approvers': unknown scope(s) approvals:respnd",
        ),
        ({"claims": {"principal": "sub", "group": "groups"}}, "issuers[0].claims.group: Extra inputs are not"),
        ({"jwksUri": "http://keys.example.com/jwks"}, "issuers[0].jwksUri: jwksUri must be https://"),
    ],
)
def test_a_bad_issuer_field_is_named(issuer: dict[str, Any], expected: str) -> None:
    assert _refusal(_doc(**issuer)).startswith(expected)


def test_file_level_mistakes_are_named() -> None:
    assert _refusal({"issuers": []}) == "issuers: Tuple should have at least 1 item after validation, not 0"
    twice = copy.deepcopy(EXAMPLE)
    twice["issuers"].append(twice["issuers"][0])
    assert _refusal(twice) == "issuers: 'https://idp.example.com' is configured twice"
    other = copy.deepcopy(EXAMPLE)
    other["inbox"]["issuer"] = "https://other.example.com"
    assert _refusal(other) == "inbox.issuer: 'https://other.example.com' is not one of the configured issuers"
    short = copy.deepcopy(EXAMPLE)
    short["sessions"] = {"idleMs": 3600000, "absoluteMs": 600000}
    assert _refusal(short) == "sessions: absoluteMs must be at least idleMs"
    with pytest.raises(IdentityConfigError, match=r"inbox\.clientSecret: the environment variable 'INBOX_SECRET'"):
        parse_identity_config(EXAMPLE, environ={})


def test_a_secret_in_a_refused_file_is_never_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = copy.deepcopy(EXAMPLE)
    doc["inbox"]["clientSecret"] = SECRET
    doc["inbox"]["clientId"] = 5
    path = tmp_path / "identity.json"
    path.write_text(json.dumps(doc))
    assert main(["serve", "--db", str(tmp_path / "s.db"), "--identity-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "inbox.clientId: Input should be a valid string" in err and SECRET not in err


def test_recheck_takes_the_introspection_client_and_never_shows_its_secret() -> None:
    doc = _doc(
        revocation="exp-and-recheck",
        revocationWindowSeconds=60,
        introspectionUri="https://idp.example.com/oauth/introspect",
        introspection={"clientId": "bridge", "clientSecret": {"env": "INTROSPECTION_SECRET"}},
    )
    config = parse_identity_config(doc, environ={"INBOX_SECRET": SECRET, "INTROSPECTION_SECRET": SECRET + "-2"})
    [issuer] = config.issuers
    assert issuer.revocation == "exp-and-recheck" and issuer.introspection is not None
    assert issuer.introspection.client_id == "bridge"
    assert issuer.introspection.client_secret.get_secret_value() == SECRET + "-2"
    assert issuer.introspection_uri == "https://idp.example.com/oauth/introspect"
    assert SECRET not in repr(config) and SECRET not in str(config)


def test_unreadable_and_non_json_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(IdentityConfigError, match="cannot read the identity file"):
        load_identity_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{,")
    with pytest.raises(IdentityConfigError, match=r"the identity file is not JSON \(line 1, column 2\)"):
        load_identity_config(bad)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(EXAMPLE))
    assert load_identity_config(good, environ=ENV).issuers[0].audience == "openwop-bridge"


def test_a_bad_identity_file_stops_serve_in_one_line_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "identity.json"
    path.write_text(json.dumps(_doc(issuer="http://idp.example.com")))
    result = subprocess.run(
        [sys.executable, "-m", "openwop_bridge", "serve", "--db", str(tmp_path / "i.db"), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "OPENWOP_BRIDGE_IDENTITY_CONFIG": str(path), "INBOX_SECRET": SECRET},
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"openwop-bridge: identity file {str(path)!r}: issuers[0].issuer: the issuer must be https:// "
        "(http:// only on a loopback address such as 127.0.0.1)"
    ]
    assert "serving on" not in result.stdout
    assert not (tmp_path / "i.db").exists(), "nothing starts half-configured"
