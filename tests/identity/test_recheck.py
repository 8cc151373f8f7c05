"""``exp-and-recheck``: a token re-checked at a real provider's RFC 7662 introspection endpoint, at most once a
window; a token revoked there (RFC 7009) refused once its cached verdict has run out; a provider that cannot be
asked refuses; the introspection client's secret never shown."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from openwop_bridge.core.errors import BridgeError
from openwop_bridge.identity.config import parse_identity_config
from openwop_bridge.identity.verifier import TokenVerifier
from tests.identity.provider import INTROSPECTOR, OpenIdProvider, issuer_config
from tests.server import ServerProcess, uvicorn_server

pytestmark = pytest.mark.node

SECRET = "introspection-secret-never-shown-7f3a"


class Wall:
    """A wall clock the test moves forward."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def _recheck(provider: OpenIdProvider, window: int = 30, **over: Any) -> dict[str, Any]:
    entry = {"revocation": "exp-and-recheck", "revocationWindowSeconds": window, "introspection": INTROSPECTOR}
    return issuer_config(provider, **{**entry, **over})


def _verifier(entry: dict[str, Any], **options: Any) -> TokenVerifier:
    return TokenVerifier(parse_identity_config({"issuers": [entry]}, environ={}), **options)


async def _refusal(verifier: TokenVerifier, token: str) -> BridgeError:
    with pytest.raises(BridgeError) as caught:
        await verifier.verify(token)
    assert caught.value.status == 401
    return caught.value


async def test_a_revoked_token_is_refused_once_its_checked_verdict_runs_out(provider: OpenIdProvider) -> None:
    wall = Wall()
    verifier = _verifier(_recheck(provider, window=30), now=wall)
    asked = verifier.introspector(provider.issuer)
    token = provider.token("service")
    try:
        assert (await verifier.verify(token)).principal.id == "deploy-bot"
        assert asked.calls == 1
        provider.revoke(token, "service")
        # Within the window the verdict stands: a revoked token is accepted at most that long.
        wall.offset = 29
        assert (await verifier.verify(token)).principal.id == "deploy-bot"
        assert asked.calls == 1
        wall.offset = 31
        refused = await _refusal(verifier, token)
        assert (refused.code, asked.calls) == ("credential_revoked", 2)
        assert "revoked" in refused.message
        # Revoked stays revoked: the provider is not asked again, and the request path refuses too.
        assert (await _refusal(verifier, token)).code == "credential_revoked"
        assert verifier.cached(token) is None and asked.calls == 2
        # Another token of the same client is unaffected.
        assert (await verifier.verify(provider.token("service"))).principal.id == "deploy-bot"
    finally:
        await verifier.aclose()


async def test_a_token_longer_than_the_window_is_accepted_and_asked_about_again(provider: OpenIdProvider) -> None:
    wall = Wall()
    verifier = _verifier(_recheck(provider, window=60), now=wall)
    asked = verifier.introspector(provider.issuer)
    token = provider.token("long-lived")  # two hours: exp-only with this window would refuse it
    try:
        assert (await verifier.verify(token)).principal.id == "carol"
        wall.offset = 61
        assert (await verifier.verify(token)).principal.id == "carol"
        assert asked.calls == 2
    finally:
        await verifier.aclose()


async def test_concurrent_requests_with_one_token_share_one_introspection(provider: OpenIdProvider) -> None:
    verifier = _verifier(_recheck(provider))
    asked = verifier.introspector(provider.issuer)
    token = provider.token("alice-app")
    try:
        found = await asyncio.gather(*(verifier.verify(token) for _ in range(20)))
        assert {v.principal.id for v in found} == {"alice"}
        assert asked.calls == 1
    finally:
        await verifier.aclose()


async def test_a_provider_that_cannot_be_asked_refuses(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    own = OpenIdProvider()
    wall = Wall()
    entry = _recheck(own, window=5, introspection={"clientId": "introspector", "clientSecret": SECRET})
    verifier = _verifier(entry, now=wall)
    try:
        # A wrong client secret: the provider refuses to answer, so the token is refused.
        refused = await _refusal(verifier, own.token("service"))
        assert refused.code == "identity_unverified" and "could not be asked" in refused.message
        good = _verifier(_recheck(own, window=5), now=wall)
        token = own.token("service")
        assert (await good.verify(token)).principal.id == "deploy-bot"
        own.stop()
        wall.offset = 6
        for _ in range(2):  # not accepted silently, not once
            down = await _refusal(good, token)
            assert down.code == "identity_unverified" and "could not be asked" in down.message
        await good.aclose()
    finally:
        own.stop()
        await verifier.aclose()
    shown = caplog.text + json.dumps(refused.envelope()) + json.dumps(down.envelope())
    assert "could not be asked" in caplog.text and SECRET not in shown


async def test_an_answer_that_is_not_rfc_7662_refuses(provider: OpenIdProvider) -> None:
    answers: list[Any] = []
    seen: list[tuple[str | None, dict[str, str]]] = []

    async def introspect(request: Request) -> Response:
        form = await request.form()
        seen.append((request.headers.get("authorization"), {k: str(v) for k, v in form.items()}))
        status, body = answers.pop(0)
        return JSONResponse(body, status_code=status)

    async with uvicorn_server(Starlette(routes=[Route("/introspect", introspect, methods=["POST"])])) as url:
        verifier = _verifier(_recheck(provider, introspectionUri=f"{url}/introspect"))
        try:
            token = provider.token("service")
            for status, body in [(200, {"active": "true"}), (200, ["active"]), (500, {"active": True})]:
                answers.append((status, body))
                assert (await _refusal(verifier, token)).code == "identity_unverified"
            answers.append((200, {"active": False}))
            assert (await _refusal(verifier, token)).code == "credential_revoked"
            answers.append((200, {"active": True}))
            assert (await verifier.verify(provider.token("service"))).principal.id == "deploy-bot"
        finally:
            await verifier.aclose()
    # RFC 7662: the token form-encoded, the host authenticated as its client.
    authorization, form = seen[0]
    assert authorization is not None and authorization.startswith("Basic ")
    assert form == {"token": token, "token_type_hint": "access_token"}


def test_serve_refuses_a_token_revoked_at_the_provider_within_the_window(
    provider: OpenIdProvider, tmp_path: Path
) -> None:
    identity = tmp_path / "identity.json"
    entry = _recheck(provider, window=3, introspection={"clientId": "introspector", "clientSecret": {"env": "ISEC"}})
    identity.write_text(json.dumps({"issuers": [entry]}))
    env = {"ISEC": INTROSPECTOR["clientSecret"]}
    args = ["--identity-config", str(identity), "--log-level", "debug"]
    with ServerProcess(tmp_path / "s.db", args, env=env) as host:
        token = provider.token("service", scope="runs:read")
        bearer = {"Authorization": f"Bearer {token}"}
        assert httpx.get(f"{host.url}/v1/runs", headers=bearer).status_code == 200
        asked_before = time.monotonic()  # the provider was asked during that request
        provider.revoke(token, "service")
        assert httpx.get(f"{host.url}/v1/runs", headers=bearer).status_code == 200  # the verdict still stands
        time.sleep(max(0.0, asked_before + 3.2 - time.monotonic()))
        refused = httpx.get(f"{host.url}/v1/runs", headers=bearer)
        assert (refused.status_code, refused.json()["error"]) == (401, "credential_revoked"), refused.text
        assert refused.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{host.url}/.well-known/oauth-protected-resource", error="invalid_token"'
        )
        mcp = httpx.post(f"{host.url}/mcp", json={}, headers=bearer)
        assert (mcp.status_code, mcp.json()["error"]) == (401, "credential_revoked")
        doc = httpx.get(f"{host.url}/.well-known/openwop", headers={"OpenWOP-Version": "2"}).json()
        [lane] = [lane for lane in doc["auth"]["lanes"] if lane["lane"] == "oauth2"]
        assert (lane["revocation"], lane["revocationWindowSeconds"]) == ("exp-and-recheck", 3)
    assert INTROSPECTOR["clientSecret"] not in host.output()
