"""Bearer tokens against a real OpenID provider: what verifies, and each refusal with its registry code."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, OKPKey, RSAKey
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from openwop_bridge.core.errors import BridgeError
from openwop_bridge.identity.config import parse_identity_config
from openwop_bridge.identity.verifier import TokenVerifier, Verified
from tests.identity.provider import AUDIENCE, OpenIdProvider, issuer_config
from tests.server import uvicorn_server

#: The provider runs under Node.
pytestmark = pytest.mark.node


def _verifier(*entries: dict[str, Any], **options: Any) -> TokenVerifier:
    return TokenVerifier(parse_identity_config({"issuers": list(entries)}, environ={}), **options)


@pytest.fixture
async def verifier(provider: OpenIdProvider) -> AsyncIterator[TokenVerifier]:
    found = _verifier(issuer_config(provider))
    yield found
    await found.aclose()


async def _refusal(verifier: TokenVerifier, token: str) -> BridgeError:
    with pytest.raises(BridgeError) as caught:
        await verifier.verify(token)
    assert caught.value.status == 401
    return caught.value


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _claims(provider: OpenIdProvider, **over: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {"iss": provider.issuer, "aud": AUDIENCE, "sub": "forged", "preferred_username": "alice"}
    claims.update(iat=now, exp=now + 300, scope="runs:read")
    claims.update(over)
    return {k: v for k, v in claims.items() if v is not None}


def _signed(provider: OpenIdProvider, **over: Any) -> str:
    """A token signed with the provider's own key, carrying claims the provider would not issue."""
    jwk = provider.signing_key()
    key = RSAKey.import_key(jwk)
    return jwt.encode({"alg": "RS256", "typ": "at+jwt", "kid": jwk["kid"]}, _claims(provider, **over), key)


async def test_a_provider_token_names_its_principal_tenant_roles_and_scopes(
    provider: OpenIdProvider, verifier: TokenVerifier
) -> None:
    verified = await verifier.verify(provider.token("alice-app", scope="runs:read"))
    assert (verified.issuer, verified.lane, verified.subject_id) == (provider.issuer, "oauth2", "alice-app")
    principal = verified.principal
    assert (principal.id, principal.tenant, principal.roles) == ("alice", "default", {"approvers"})
    # runs:read from the token's scope; the rest granted to the role "approvers" by roleScopes.
    assert principal.scopes == {"runs:read", "interrupts:read", "approvals:respond"}
    service = (await verifier.verify(provider.token("service", scope="runs:read runs:create"))).principal
    assert (service.id, service.roles, service.scopes) == ("deploy-bot", frozenset(), {"runs:read", "runs:create"})
    assert not service.has_scope("approvals:respond")


async def test_a_verified_token_is_remembered_until_it_expires_in_a_bounded_cache(provider: OpenIdProvider) -> None:
    clock = {"now": time.time()}
    verifier = _verifier(issuer_config(provider), cache_size=2, now=lambda: clock["now"])
    try:
        first, second, third = (provider.token("service") for _ in range(3))
        verified = await verifier.verify(first)
        assert await verifier.verify(first) is verified and verifier.keys(provider.issuer).fetches == 1
        await verifier.verify(second)
        await verifier.verify(third)
        remembered = verifier.cached(third)
        assert verifier.cached(first) is None and remembered is not None
        clock["now"] = remembered.expires_at
        assert verifier.cached(third) is None
    finally:
        await verifier.aclose()


async def test_a_token_of_another_provider_is_refused(
    provider: OpenIdProvider, second_provider: OpenIdProvider, verifier: TokenVerifier
) -> None:
    refused = await _refusal(verifier, second_provider.token("alice-app"))
    assert refused.code == "identity_unverified" and "issuer" in refused.message
    # Its key, claiming to be the trusted provider (iss and kid of the trusted one): the signature fails.
    foreign = RSAKey.import_key(second_provider.signing_key())
    kid = provider.signing_key()["kid"]
    forged = jwt.encode({"alg": "RS256", "typ": "at+jwt", "kid": kid}, _claims(provider), foreign)
    assert (await _refusal(verifier, forged)).code == "identity_unverified"


async def test_a_rotated_key_verifies_without_restart_and_a_removed_key_stops() -> None:
    rotating = OpenIdProvider()
    ticks = {"now": 0.0}
    verifier = _verifier(issuer_config(rotating), clock=lambda: ticks["now"])
    try:
        keys = verifier.keys(rotating.issuer)
        await verifier.verify(rotating.token("service"))
        old_key = RSAKey.import_key(rotating.signing_key())
        assert keys.fetches == 1
        rotating.rotate(keep_old=False)
        ticks["now"] += 5  # one refetch per five seconds for an unknown kid
        assert (await verifier.verify(rotating.token("service"))).principal.id == "deploy-bot"
        assert keys.fetches == 2
        # The old key is gone from the provider's set: a token it signs (never seen before) is refused.
        by_old = jwt.encode({"alg": "RS256", "typ": "at+jwt", "kid": old_key.kid}, _claims(rotating), old_key)
        assert (await _refusal(verifier, by_old)).code == "identity_unverified"
        # Unknown key ids do not make the host ask the provider again within the interval.
        assert (await _refusal(verifier, by_old)).code == "identity_unverified"
        assert keys.fetches == 2
    finally:
        await verifier.aclose()
        rotating.stop()


@pytest.mark.parametrize(
    ("claims", "code", "words"),
    [
        ({"iat": -900, "exp": -300}, "identity_unverified", "expired"),
        ({"nbf": 600, "exp": 900}, "identity_unverified", "not valid yet"),
        ({"iat": 600, "exp": 900}, "identity_unverified", "issued in the future"),
        ({"exp": None}, "identity_unverified", "no expiry"),
        ({"aud": "urn:elsewhere"}, "audience_mismatch", "not for this host"),
        ({"iat": None}, "credential_lifetime_exceeded", "no 'iat'"),
        # Minted long ago, still valid for a while: exp - iat exceeds the window.
        ({"iat": -30 * 86400, "exp": 600}, "credential_lifetime_exceeded", "lives longer"),
        # exp - iat is the window, but iat is (within the leeway) in the future: exp - now exceeds it.
        ({"iat": 50, "exp": 3650}, "credential_lifetime_exceeded", "lives longer"),
        ({"preferred_username": None}, "identity_unresolvable", "no principal"),
        ({"org": "tenant-b"}, "identity_unresolvable", "tenant"),
        # Runs and decisions record the sub: OpenID Connect bounds it at 255 characters, so does the host.
        ({"sub": "s" * 257}, "identity_unresolvable", "'sub'"),
    ],
)
async def test_a_token_signed_by_the_provider_is_refused_for_its_claims(
    provider: OpenIdProvider, verifier: TokenVerifier, claims: dict[str, Any], code: str, words: str
) -> None:
    now = int(time.time())
    relative = {k: (now + v if k in ("iat", "exp", "nbf") and v is not None else v) for k, v in claims.items()}
    refused = await _refusal(verifier, _signed(provider, **relative))
    assert (refused.code, words in refused.message) == (code, True), refused.message


async def test_provider_tokens_refused_for_audience_lifetime_and_identity(provider: OpenIdProvider) -> None:
    elsewhere = _verifier(issuer_config(provider, audience="urn:elsewhere"))
    here = _verifier(issuer_config(provider))
    tenants = _verifier(issuer_config(provider, tenants=["tenant-b"]))
    try:
        assert (await _refusal(elsewhere, provider.token("service"))).code == "audience_mismatch"
        assert (await _refusal(here, provider.token("long-lived"))).code == "credential_lifetime_exceeded"
        assert (await _refusal(here, provider.token("nameless"))).code == "identity_unresolvable"
        assert (await _refusal(here, provider.token("other-tenant"))).code == "identity_unresolvable"
        # An issuer may speak for the tenants it is given.
        assert (await tenants.verify(provider.token("other-tenant"))).principal.tenant == "tenant-b"
    finally:
        for verifier in (elsewhere, here, tenants):
            await verifier.aclose()


async def test_alg_none_hs256_with_the_public_key_and_tampering_are_refused(
    provider: OpenIdProvider, verifier: TokenVerifier
) -> None:
    kid = provider.signing_key()["kid"]
    claims = _b64(json.dumps(_claims(provider)).encode())
    unsigned = f"{_b64(json.dumps({'alg': 'none', 'typ': 'at+jwt', 'kid': kid}).encode())}.{claims}."
    refused = await _refusal(verifier, unsigned)
    assert refused.code == "identity_unverified" and "'none'" in refused.message
    # The classic confusion: HMAC with the provider's public key as the secret (joserfc refuses to make
    # such a key, so the forgery is computed by hand here).
    public = RSAKey.import_key(provider.signing_key()).as_pem(private=False)
    signing_input = f"{_b64(json.dumps({'alg': 'HS256', 'typ': 'at+jwt', 'kid': kid}).encode())}.{claims}"
    mac = _b64(hmac.new(public, signing_input.encode(), hashlib.sha256).digest())
    refused = await _refusal(verifier, f"{signing_input}.{mac}")
    assert refused.code == "identity_unverified" and "'HS256'" in refused.message
    # A real token whose claims were changed after signing.
    header, payload, signature = provider.token("service").split(".")
    changed = json.loads(base64.urlsafe_b64decode(payload + "=="))
    changed["preferred_username"] = "admin"
    refused = await _refusal(verifier, f"{header}.{_b64(json.dumps(changed).encode())}.{signature}")
    assert refused.code == "identity_unverified" and "signature" in refused.message
    for garbage in ("eyJ.not.jwt", "owb_dev_not_a_jwt", "eyJhbGciOiJSUzI1NiJ9." + "A" * 20000 + ".x"):
        assert (await _refusal(verifier, garbage)).code == "identity_unverified"


# joserfc calls the name EdDSA superseded by Ed25519 (RFC 9864); providers still sign with it.
@pytest.mark.filterwarnings("ignore:EdDSA is deprecated")
async def test_every_asymmetric_algorithm_verifies_from_a_configured_jwks_uri() -> None:
    keys: dict[str, Any] = {
        "RS256": RSAKey.generate_key(2048, parameters={"kid": "rs"}),
        "PS256": RSAKey.generate_key(2048, parameters={"kid": "ps"}),
        "ES256": ECKey.generate_key("P-256", parameters={"kid": "es"}),
        "EdDSA": OKPKey.generate_key("Ed25519", parameters={"kid": "ed"}),
    }
    jwks = {"keys": [key.as_dict(private=False) for key in keys.values()]}

    async def serve_jwks(request: Any) -> JSONResponse:
        return JSONResponse(jwks)

    async with uvicorn_server(Starlette(routes=[Route("/jwks", serve_jwks)])) as url:
        verifier = _verifier({"issuer": url, "audience": "bridge", "jwksUri": f"{url}/jwks"})
        now = int(time.time())
        claims = {"iss": url, "aud": "bridge", "sub": "s-1", "iat": now, "exp": now + 60}
        sign: Callable[[str], str] = lambda alg: jwt.encode(  # noqa: E731
            {"alg": alg, "kid": keys[alg].kid}, claims, keys[alg], algorithms=[alg]
        )
        try:
            for alg in keys:
                verified: Verified = await verifier.verify(sign(alg))
                assert (verified.principal.id, verified.lane, verified.principal.scopes) == ("s-1", "oidc", set())
            # A token that is not an RFC 9068 access token (an ID token) must name exactly the audience.
            two = jwt.encode({"alg": "ES256", "kid": "es"}, {**claims, "aud": ["bridge", "x"]}, keys["ES256"])
            assert (await _refusal(verifier, two)).code == "audience_mismatch"
        finally:
            await verifier.aclose()
