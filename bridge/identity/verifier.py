"""Bearer tokens (JWTs) verified against their issuer's keys, and the principal their claims name.

:meth:`TokenVerifier.verify` takes a token and returns :class:`Verified` or raises one of the
registry's refusals (:mod:`openwop_bridge.identity.errors`):

- ``identity_unverified``: not a signed JWT; an algorithm other than RS256, PS256, ES256 or EdDSA
  (``none`` and ``HS*`` never verify); an issuer not configured (``iss`` is compared exactly);
  a key id the issuer does not publish; a bad signature; expired, not yet valid (``nbf``) or
  issued in the future (``iat``), each with the issuer's leeway;
- ``audience_mismatch``: ``aud`` does not contain the configured audience (a token that is not
  an RFC 9068 access token, an ID token say, must name exactly that audience, identity.md §2.1);
- ``credential_lifetime_exceeded``: on an ``exp-only`` issuer, ``exp - iat`` or ``exp - now``
  exceeds ``revocationWindowSeconds``, or ``iat`` is missing (identity.md §2.2);
- ``identity_unresolvable``: no principal claim, a ``sub`` over 256 characters, or a tenant the issuer
  may not speak for;
- ``credential_revoked``: on an ``exp-and-recheck`` issuer, the provider's introspection
  endpoint says the token is no longer active (:mod:`openwop_bridge.identity.introspection`;
  a provider that cannot be asked is ``identity_unverified``).

``people`` maps ``(issuer, sub)`` to a principal id: a token of a person so named resolves to that
id whatever its principal claim says (the host builds it from the notify file's ``people.*.subject``,
so one person is one principal on every channel). Such an id is bound to that identity: a token
whose principal claim names it with another ``iss`` or ``sub`` is ``identity_unresolvable``.

A verified token is remembered until its ``exp`` (the last :data:`CACHE_SIZE` of them), so
a request with a token costs about what one with an API key costs. On an ``exp-and-recheck``
issuer it is remembered until ``revocationWindowSeconds`` after the provider was asked, or its
``exp`` if sooner; then the next request asks again. A token the provider says is revoked is
refused until its ``exp`` without asking again. Concurrent requests with a token not yet
remembered share one verification (and one introspection).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from joserfc import jws, jwt
from joserfc.errors import JoseError, SecurityWarning

from openwop_bridge.core.auth import Principal, Subject, known_scope
from openwop_bridge.identity.config import ALGORITHMS, IdentityConfig, IssuerConfig
from openwop_bridge.identity.errors import (
    AudienceMismatchError,
    CredentialLifetimeExceededError,
    CredentialRevokedError,
    IdentityUnresolvableError,
    IdentityUnverifiedError,
)
from openwop_bridge.identity.introspection import Introspector
from openwop_bridge.identity.keys import REFETCH_INTERVAL_S, IssuerKeys

__all__ = ["CACHE_SIZE", "MAX_TOKEN_BYTES", "TokenVerifier", "Verified", "looks_like_jwt"]

#: How many verified tokens are remembered.
CACHE_SIZE = 10_000
#: The longest token looked at.
MAX_TOKEN_BYTES = 16 * 1024
#: RFC 9068's ``typ`` of a JWT access token.
_ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})
# joserfc flags the algorithm name EdDSA as superseded by Ed25519 (RFC 9864); providers still sign with it.
warnings.filterwarnings("ignore", message="EdDSA is deprecated", category=SecurityWarning)


@dataclass(frozen=True, slots=True)
class Verified:
    """A verified token: the principal it names and where it comes from."""

    principal: Principal
    issuer: str
    lane: str
    #: The token's ``sub`` (the issuer-scoped subject id), else the principal.
    subject_id: str
    name: str | None
    email: str | None
    #: ``exp``, in seconds since the epoch.
    expires_at: float


def looks_like_jwt(token: str) -> bool:
    """Whether ``token`` has the shape of a compact JWS (three base64url parts, a JSON header)."""
    return token.count(".") == 2 and token.startswith("eyJ")


class TokenVerifier:
    """Verifies the tokens of the issuers of an identity file (see the module's docstring).

    ``now`` is the wall clock tokens' times are compared with; ``clock`` the monotonic one the key
    caches age by.
    """

    def __init__(
        self,
        config: IdentityConfig,
        *,
        client: httpx.AsyncClient | None = None,
        refetch_interval_s: float = REFETCH_INTERVAL_S,
        cache_size: int = CACHE_SIZE,
        now: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
        people: Mapping[tuple[str, str], str] | None = None,
    ) -> None:
        self.config = config
        self._people = dict(people or {})
        self._bound = frozenset(self._people.values())
        self._client = client or httpx.AsyncClient(timeout=10.0, follow_redirects=False)
        self._keys = {
            i.issuer: IssuerKeys(i, self._client, refetch_interval_s=refetch_interval_s, clock=clock)
            for i in config.issuers
        }
        self._introspectors = {
            i.issuer: Introspector(i, self._client, self._keys[i.issuer])
            for i in config.issuers
            if i.revocation == "exp-and-recheck"
        }
        #: Verified tokens (by digest), each with the time it is trusted until.
        self._cache: OrderedDict[bytes, tuple[Verified, float]] = OrderedDict()
        #: Tokens the provider said are revoked (by digest), each with its ``exp``.
        self._revoked: OrderedDict[bytes, float] = OrderedDict()
        #: Verifications under way, shared by the requests presenting the same token.
        self._pending: dict[bytes, asyncio.Future[Verified]] = {}
        self._cache_size = cache_size
        self._now = now

    def keys(self, issuer: str) -> IssuerKeys:
        """The key cache of a configured issuer."""
        return self._keys[issuer]

    def introspector(self, issuer: str) -> Introspector:
        """The introspection client of a configured ``exp-and-recheck`` issuer."""
        return self._introspectors[issuer]

    async def aclose(self) -> None:
        """Close the HTTP client the keys are fetched with."""
        await self._client.aclose()

    def cached(self, token: str) -> Verified | None:
        """The token's verification when it is remembered and still trusted (before its ``exp``, and on an
        ``exp-and-recheck`` issuer within the window since the provider was asked)."""
        digest = _digest(token)
        found = self._cache.get(digest)
        if found is None:
            return None
        if self._now() >= found[1]:
            del self._cache[digest]
            return None
        self._cache.move_to_end(digest)
        return found[0]

    async def verify(self, token: str) -> Verified:
        """The verified token, or one of the registry's refusals (401)."""
        found = self.cached(token)
        if found is not None:
            return found
        digest = _digest(token)
        revoked_until = self._revoked.get(digest)
        if revoked_until is not None:
            if self._now() < revoked_until:
                raise CredentialRevokedError("the token was revoked at its identity provider")
            del self._revoked[digest]
        pending = self._pending.get(digest)
        if pending is None:
            pending = asyncio.ensure_future(self._check(token, digest))
            self._pending[digest] = pending
            pending.add_done_callback(lambda done: self._settled(digest, done))
        # Shielded: a request that goes away does not cancel the others' verification.
        return await asyncio.shield(pending)

    def _settled(self, digest: bytes, done: asyncio.Future[Verified]) -> None:
        self._pending.pop(digest, None)
        if not done.cancelled():
            done.exception()  # retrieved, even when every request waiting for it went away

    async def _check(self, token: str, digest: bytes) -> Verified:
        verified = await self._verify(token)
        trusted_until = verified.expires_at
        introspector = self._introspectors.get(verified.issuer)
        if introspector is not None:
            asked_at = self._now()
            if not await introspector.active(token):
                _remember(self._revoked, digest, verified.expires_at, self._cache_size)
                raise CredentialRevokedError("the token was revoked at its identity provider")
            trusted_until = min(trusted_until, asked_at + introspector.issuer.revocation_window_seconds)
        _remember(self._cache, digest, (verified, trusted_until), self._cache_size)
        return verified

    async def verify_id_token(self, token: str, *, client_id: str, nonce: str) -> Verified:
        """An OpenID Connect ID token of a sign-in (never remembered): verified as a bearer token of its issuer
        is (keys, algorithm, ``iss``, ``exp``/``nbf``/``iat``, claims mapping, tenant rules), except that its
        ``aud`` must be exactly ``client_id`` and its ``nonce`` the one the sign-in sent; no lifetime window
        applies (the session it opens has its own limits)."""
        return await self._verify(token, (client_id, nonce))

    async def _verify(self, token: str, id_token: tuple[str, str] | None = None) -> Verified:
        if len(token) > MAX_TOKEN_BYTES or not looks_like_jwt(token):
            raise IdentityUnverifiedError("the bearer token is not a signed JWT")
        try:
            compact = jws.extract_compact(token.encode("ascii"))
            header = compact.headers()
            unverified = json.loads(compact.payload)
        except (JoseError, ValueError, UnicodeError):
            raise IdentityUnverifiedError("the bearer token is not a signed JWT") from None
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise IdentityUnverifiedError(
                f"tokens signed with {alg!r} are not accepted (only {', '.join(ALGORITHMS)})",
                details={"alg": str(alg)[:32]},
            )
        iss = unverified.get("iss") if isinstance(unverified, dict) else None
        issuer = self.config.issuer(iss) if isinstance(iss, str) else None
        if issuer is None:
            raise IdentityUnverifiedError("the token's issuer is not one this host trusts")
        kid = header.get("kid")
        keys = await self._keys[issuer.issuer].key_set(kid if isinstance(kid, str) else None)
        try:
            decoded = jwt.decode(token, keys, algorithms=[alg])
        except JoseError:
            raise IdentityUnverifiedError("the token's signature does not verify with the issuer's keys") from None
        claims: dict[str, Any] = dict(decoded.claims)
        if claims.get("iss") != issuer.issuer:
            raise IdentityUnverifiedError("the token's issuer is not one this host trusts")
        if id_token is None:
            _check_audience(issuer, claims, str(header.get("typ", "")).lower())
        else:
            _check_id_token(claims, *id_token)
        expires_at = _check_times(issuer, claims, self._now(), bounded=id_token is None)
        return _resolve(issuer, claims, expires_at, self._people, self._bound)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def _remember(cache: OrderedDict[bytes, Any], digest: bytes, value: Any, size: int) -> None:
    cache[digest] = value
    cache.move_to_end(digest)
    while len(cache) > size:
        cache.popitem(last=False)


def _check_audience(issuer: IssuerConfig, claims: Mapping[str, Any], typ: str) -> None:
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if typ in _ACCESS_TOKEN_TYPES:
        if issuer.audience in audiences:
            return
    elif audiences == [issuer.audience]:
        return
    raise AudienceMismatchError(f"the token is not for this host (its audience must be {issuer.audience!r})")


def _check_id_token(claims: Mapping[str, Any], client_id: str, nonce: str) -> None:
    aud = claims.get("aud")
    if (aud if isinstance(aud, list) else [aud]) != [client_id]:
        raise AudienceMismatchError("the ID token is not for this host's inbox client")
    found = claims.get("nonce")
    if not isinstance(found, str) or not hmac.compare_digest(found.encode(), nonce.encode()):
        raise IdentityUnverifiedError("the ID token's nonce is not the one this sign-in sent")


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IdentityUnverifiedError(f"the token's {name!r} is not a number")
    return float(value)


def _check_times(issuer: IssuerConfig, claims: Mapping[str, Any], now: float, *, bounded: bool = True) -> float:
    """``exp``, after checking ``exp``, ``nbf``, ``iat`` and (``exp-only``) the lifetime bounds."""
    leeway = issuer.leeway_seconds
    exp, nbf, iat = _number(claims, "exp"), _number(claims, "nbf"), _number(claims, "iat")
    if exp is None:
        raise IdentityUnverifiedError("the token has no expiry ('exp')")
    if now > exp + leeway:
        raise IdentityUnverifiedError("the token has expired")
    if nbf is not None and nbf > now + leeway:
        raise IdentityUnverifiedError("the token is not valid yet ('nbf')")
    if iat is not None and iat > now + leeway:
        raise IdentityUnverifiedError("the token was issued in the future ('iat')")
    if bounded and issuer.revocation == "exp-only":
        window = issuer.revocation_window_seconds
        if iat is None:
            raise CredentialLifetimeExceededError("the token has no 'iat', so its lifetime cannot be bounded")
        if exp - iat > window or exp - now > window:
            raise CredentialLifetimeExceededError(
                f"the token lives longer than this host accepts ({window} seconds)", details={"maxSeconds": window}
            )
    return exp


def _strings(value: Any) -> list[str]:
    """A claim holding names: a list of strings, or one string of names separated by spaces."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v]
    return []


def _resolve(
    issuer: IssuerConfig,
    claims: Mapping[str, Any],
    expires_at: float,
    people: Mapping[tuple[str, str], str],
    bound: frozenset[str] = frozenset(),
) -> Verified:
    names = issuer.claims
    sub = claims.get("sub")
    if isinstance(sub, str) and len(sub) > 256:  # recorded with every run and decision (v2's subjectId grammar)
        raise IdentityUnresolvableError("the token's 'sub' is longer than 256 characters")
    person = people.get((issuer.issuer, sub)) if isinstance(sub, str) else None
    principal = person or claims.get(names.principal)
    if not isinstance(principal, str) or not principal.strip() or len(principal) > 256:
        raise IdentityUnresolvableError(f"the token names no principal (claim {names.principal!r})")
    if person is None and principal in bound:
        raise IdentityUnresolvableError("the token's principal claim names a person bound to another identity")
    tenant: Any = issuer.default_tenant
    if names.tenant is not None and claims.get(names.tenant) is not None:
        tenant = claims[names.tenant]
    if not isinstance(tenant, str) or tenant not in issuer.allowed_tenants:
        raise IdentityUnresolvableError("the token names a tenant its issuer may not speak for")
    roles = frozenset(_strings(claims.get(names.roles))) if names.roles else frozenset()
    scopes = {s for s in _strings(claims.get(names.scopes)) if known_scope(s)}
    for role in roles:
        scopes.update(issuer.role_scopes.get(role, ()))
    name, email = claims.get(names.name), claims.get(names.email)
    subject_id = sub if isinstance(sub, str) and sub else principal
    display = name if isinstance(name, str) else None
    mail = email if isinstance(email, str) else None
    who = Subject(issuer=issuer.issuer, subject_id=subject_id, lane=issuer.lane, name=display, email=mail)
    return Verified(
        # Scopes are always given: a Principal without them would hold every scope.
        principal=Principal(id=principal, tenant=tenant, scopes=frozenset(scopes), roles=roles, subject=who),
        issuer=issuer.issuer,
        lane=issuer.lane,
        subject_id=subject_id,
        name=display,
        email=mail,
        expires_at=expires_at,
    )
