"""``serve --identity-config`` against a real OpenID provider: tokens on v1 beside API keys, challenges,
RFC 9728 metadata and the v2 ``auth`` facet."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from openwop_bridge.spec import v2 as spec
from tests.identity.provider import OpenIdProvider, issuer_config
from tests.server import ServerProcess, wait_for_status

pytestmark = [pytest.mark.node, pytest.mark.slow]

KEY = "ops-key-identity-0001"


@pytest.fixture(scope="module")
def server(provider: OpenIdProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("identity-serve")
    identity = folder / "identity.json"
    identity.write_text(json.dumps({"issuers": [issuer_config(provider)]}))
    args = ["--identity-config", str(identity), "--api-key", f"ops={KEY}:runs:read"]
    with ServerProcess(folder / "serve.db", args) as started:
        yield started


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_provider_token_runs_v1_and_the_decision_records_its_principal(
    provider: OpenIdProvider, server: ServerProcess
) -> None:
    service = _bearer(provider.token("service", scope="runs:create runs:read"))
    created = httpx.post(f"{server.url}/v1/runs", json={"workflowId": "demo-expense-approval"}, headers=service)
    assert created.status_code == 201, created.text
    run_id = created.json()["runId"]
    wait_for_status(server.url, service, run_id, ("waiting-approval",))
    answer = {"resumeValue": {"action": "accept"}}
    where = f"{server.url}/v1/runs/{run_id}/interrupts/review"
    # The service's token lacks the scope: a 403 naming it in the challenge.
    refused = httpx.post(where, json=answer, headers=service)
    assert refused.status_code == 403 and refused.json()["details"]["requiredScope"] == "approvals:respond"
    assert refused.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{server.url}/.well-known/oauth-protected-resource", '
        'error="insufficient_scope", scope="approvals:respond"'
    )
    # Alice's token carries runs:read only; her group "approvers" is granted approvals:respond by roleScopes.
    alice = _bearer(provider.token("alice-app", scope="runs:read"))
    answered = httpx.post(where, json=answer, headers=alice)
    assert answered.status_code == 200, answered.text
    assert answered.json()["resumeValue"]["decidedBy"] == "alice"
    # The API key stays valid beside tokens, and reads the decision the token made.
    key = {"Authorization": f"Bearer {KEY}", "Accept": "application/json"}
    wait_for_status(server.url, key, run_id, ("completed",))
    events = httpx.get(f"{server.url}/v1/runs/{run_id}/events", headers=key).json()["events"]
    resolved = [e["payload"] for e in events if e["type"] == "interrupt.resolved"]
    assert [p["resumeValue"]["decidedBy"] for p in resolved] == ["alice"], resolved


def test_refusals_are_401_envelopes_with_the_challenge(provider: OpenIdProvider, server: ServerProcess) -> None:
    metadata = f"{server.url}/.well-known/oauth-protected-resource"
    missing = httpx.get(f"{server.url}/v1/runs")
    assert missing.status_code == 401 and missing.json()["error"] == "unauthenticated"
    assert missing.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata}"'
    header, payload, signature = provider.token("service").split(".")
    cases = {
        f"{header}.{payload}.{signature[:-4]}AAAA": "identity_unverified",
        provider.token("long-lived"): "credential_lifetime_exceeded",
        provider.token("nameless"): "identity_unresolvable",
        provider.token("other-tenant"): "identity_unresolvable",
        "not-a-key-nor-a-token": "unauthenticated",
    }
    for token, code in cases.items():
        refused = httpx.get(f"{server.url}/v1/runs", headers=_bearer(token))
        assert (refused.status_code, refused.json()["error"]) == (401, code), refused.text
        assert refused.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata}", error="invalid_token"'
    # A route that does not authenticate does not look at the token.
    assert httpx.get(f"{server.url}/healthz", headers=_bearer(next(iter(cases)))).status_code == 200
    # The MCP surface names its own metadata.
    mcp = httpx.post(f"{server.url}/mcp", json={}, headers=_bearer(provider.token("long-lived")))
    assert mcp.status_code == 401 and mcp.json()["error"] == "credential_lifetime_exceeded"
    assert mcp.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{server.url}/.well-known/oauth-protected-resource/mcp", error="invalid_token"'
    )


def test_protected_resource_metadata_and_the_v2_auth_facet(provider: OpenIdProvider, server: ServerProcess) -> None:
    root = httpx.get(f"{server.url}/.well-known/oauth-protected-resource")
    assert root.status_code == 200
    assert root.json()["resource"] == server.url
    assert root.json()["authorization_servers"] == [provider.issuer]
    assert "approvals:respond" in root.json()["scopes_supported"]
    mcp = httpx.get(f"{server.url}/.well-known/oauth-protected-resource/mcp").json()
    assert (mcp["resource"], mcp["authorization_servers"]) == (f"{server.url}/mcp", [provider.issuer])
    doc = httpx.get(f"{server.url}/.well-known/openwop", headers={"OpenWOP-Version": "2"}).json()
    assert spec.problems("capabilities.schema.json", doc) == []
    assert doc["auth"]["lanes"] == [
        {
            "lane": "api-key",
            # Keys, and the secret a decision by signed link is checked with (no Slack here: no Slack realm).
            "issuers": ["urn:openwop-bridge:api-key", "urn:openwop-bridge:link"],
            "revocation": "next-request",
            "minimumAssurance": "bearer",
        },
        {
            "lane": "oauth2",
            "issuers": [provider.issuer],
            "revocation": "exp-only",
            "revocationWindowSeconds": 3600,
            "minimumAssurance": "bearer",
        },
    ]


def test_an_identity_file_replaces_the_dev_key(provider: OpenIdProvider, tmp_path: Path) -> None:
    identity = tmp_path / "identity.json"
    identity.write_text(json.dumps({"issuers": [issuer_config(provider)]}))
    with ServerProcess(tmp_path / "s.db", ["--identity-config", str(identity)]) as started:
        token = _bearer(provider.token("service", scope="workflows:read"))
        assert httpx.get(f"{started.url}/v1/workflows", headers=token).status_code == 200
    output = started.output()
    assert "dev API key" not in output and "identity : bearer tokens" in output


def test_every_surface_takes_the_token_as_it_takes_a_key(provider: OpenIdProvider, server: ServerProcess) -> None:
    reader = _bearer(provider.token("service", scope="runs:read workflows:read"))
    v2 = httpx.get(f"{server.url}/runs", headers={**reader, "OpenWOP-Version": "2"})
    assert v2.status_code == 200, v2.text
    assistants = httpx.post(f"{server.url}/langgraph/assistants/search", json={}, headers=reader)
    assert assistants.status_code == 200, assistants.text
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    mcp = httpx.post(
        f"{server.url}/mcp", json=initialize, headers={**reader, "Accept": "application/json, text/event-stream"}
    )
    assert mcp.status_code == 200, mcp.text
    # /metrics needs a scope this token lacks: the 403 names it in the challenge.
    metrics = httpx.get(f"{server.url}/metrics", headers=reader)
    assert metrics.status_code == 403
    assert metrics.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{server.url}/.well-known/oauth-protected-resource", '
        'error="insufficient_scope", scope="metrics:read"'
    )
    # A run that is not there (or another tenant's) stays a 404, with no challenge.
    unknown = httpx.get(f"{server.url}/v1/runs/run_unknown", headers=reader)
    assert unknown.status_code == 404 and "www-authenticate" not in unknown.headers
    # A key lacking a scope gets no bearer challenge: it presented no token.
    assert "www-authenticate" not in httpx.get(f"{server.url}/metrics", headers=_bearer(KEY)).headers
