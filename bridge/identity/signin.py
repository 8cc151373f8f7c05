"""The inbox's sign-in: the OpenID Connect authorization code flow with PKCE, at the identity file's ``inbox`` issuer.

:meth:`InboxSignIn.begin` makes the provider's authorization URL with a fresh ``state``, ``nonce``
and PKCE ``code_verifier`` (S256), and returns them as a :class:`PendingLogin`; the host keeps it
in the person's browser only, sealed (encrypted and authenticated, JWE ``dir``/``A256GCM``) by
:meth:`PendingLogin.seal` with a host secret, so an anonymous caller starting sign-ins stores
nothing. :meth:`InboxSignIn.finish` takes the provider's answer at the redirect URI: the ``state``
must be the pending one, the code is exchanged (with the verifier) at the token endpoint, and the
ID token is verified by :meth:`~openwop_bridge.identity.verifier.TokenVerifier.verify_id_token`
(the issuer's keys, ``iss``, times, ``aud`` equal to the client id, the ``nonce``) and mapped to a
principal as a token of that issuer is, its subject on the ``session`` lane.

The OAuth 2 client is authlib's (over httpx); the sealing is joserfc's. Nothing here is hand-written JOSE.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.httpx_client import AsyncOAuth2Client
from joserfc import jwe
from joserfc.errors import JoseError
from joserfc.jwk import OctKey

from openwop_bridge.core.auth import SESSION_ISSUER, Principal
from openwop_bridge.core.errors import UnauthenticatedError
from openwop_bridge.identity.config import IdentityConfig, InboxClient, check_url
from openwop_bridge.identity.errors import IdentityUnverifiedError
from openwop_bridge.identity.keys import REFETCH_INTERVAL_S, discovery_urls
from openwop_bridge.identity.verifier import TokenVerifier

__all__ = ["LOGIN_TTL_S", "InboxSignIn", "PendingLogin", "SignInError"]

#: How long a person has to sign in at the provider once they started.
LOGIN_TTL_S = 600
#: The largest sealed pending login accepted (a cookie).
_MAX_SEALED = 2048
_SEAL_HEADER = {"alg": "dir", "enc": "A256GCM"}


class SignInError(UnauthenticatedError):
    """The sign-in cannot complete: a tampered or stale answer, a refusal at the provider, a failed exchange."""


def _seal_key(secret: bytes) -> OctKey:
    return OctKey.import_key(hashlib.sha256(b"openwop-bridge inbox sign-in\x00" + secret).digest())


@dataclasses.dataclass(frozen=True, slots=True)
class PendingLogin:
    """A sign-in started and not finished: what the provider's answer is checked against."""

    state: str
    nonce: str
    code_verifier: str
    #: Until when (seconds since the epoch) the answer is accepted.
    expires_at: float

    def seal(self, secret: bytes) -> str:
        """This pending login, encrypted and authenticated with ``secret`` (a compact JWE)."""
        plain = json.dumps(dataclasses.asdict(self), separators=(",", ":")).encode()
        return jwe.encrypt_compact(_SEAL_HEADER, plain, _seal_key(secret))

    @classmethod
    def open(cls, sealed: str, secret: bytes, now: float) -> PendingLogin:
        """The pending login ``sealed`` holds, or :class:`SignInError` (altered, another host's, expired)."""
        try:
            if len(sealed) > _MAX_SEALED:
                raise ValueError("too long")
            found = jwe.decrypt_compact(sealed, _seal_key(secret), algorithms=["dir", "A256GCM"])
            data = json.loads(found.plaintext or b"")
            pending = cls(
                state=str(data["state"]),
                nonce=str(data["nonce"]),
                code_verifier=str(data["code_verifier"]),
                expires_at=float(data["expires_at"]),
            )
        except (JoseError, ValueError, KeyError, TypeError):
            raise SignInError("the sign-in cannot be completed: start it again") from None
        if now > pending.expires_at:
            raise SignInError("the sign-in took too long: start it again")
        return pending


class InboxSignIn:
    """The authorization code flow of the identity file's ``inbox`` client (see the module's docstring)."""

    def __init__(
        self,
        config: IdentityConfig,
        verifier: TokenVerifier,
        *,
        client: httpx.AsyncClient | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        if config.inbox is None:
            raise ValueError("the identity file has no 'inbox' section")
        self.inbox: InboxClient = config.inbox
        issuer = config.issuer(self.inbox.issuer)
        assert issuer is not None  # the identity file's check
        self._issuer = issuer
        self._verifier = verifier
        self._client = client or httpx.AsyncClient(timeout=10.0, follow_redirects=False)
        self._now = now
        self._endpoints: tuple[str, str] | None = None
        self._failed_at = float("-inf")

    @property
    def issuer(self) -> str:
        """The provider's issuer identifier."""
        return self.inbox.issuer

    async def aclose(self) -> None:
        """Close the HTTP client the provider's metadata is fetched with."""
        await self._client.aclose()

    async def _metadata(self) -> tuple[str, str]:
        """The provider's authorization and token endpoints (from its discovery document, fetched once)."""
        if self._endpoints is not None:
            return self._endpoints
        unreadable = IdentityUnverifiedError(f"the discovery document of {self._issuer.issuer!r} cannot be read")
        if time.monotonic() - self._failed_at < REFETCH_INTERVAL_S:
            raise unreadable  # asked a moment ago: sign-ins do not make the host hammer a failing provider
        for url in discovery_urls(self._issuer):
            try:
                answer = await self._client.get(url, headers={"Accept": "application/json"})
                answer.raise_for_status()
                found = answer.json()
            except (httpx.HTTPError, ValueError):
                continue
            if not isinstance(found, dict) or found.get("issuer") != self._issuer.issuer:
                continue
            try:
                authorize = check_url(str(found["authorization_endpoint"]), "authorization_endpoint")
                token = check_url(str(found["token_endpoint"]), "token_endpoint")
            except (KeyError, ValueError):
                continue
            self._endpoints = (authorize, token)
            return self._endpoints
        self._failed_at = time.monotonic()
        raise unreadable

    def _oauth(self, redirect_uri: str) -> AsyncOAuth2Client:
        secret = self.inbox.client_secret
        return AsyncOAuth2Client(
            client_id=self.inbox.client_id,
            client_secret=None if secret is None else secret.get_secret_value(),
            token_endpoint_auth_method="client_secret_basic" if secret is not None else "none",
            scope=" ".join(self.inbox.scopes),
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            timeout=10.0,
        )

    async def begin(self, redirect_uri: str) -> tuple[str, PendingLogin]:
        """The provider's authorization URL to send the person to, and the pending login to keep."""
        authorize, _ = await self._metadata()
        pending = PendingLogin(
            state=secrets.token_urlsafe(32),
            nonce=secrets.token_urlsafe(32),
            code_verifier=secrets.token_urlsafe(64),
            expires_at=self._now() + LOGIN_TTL_S,
        )
        async with self._oauth(redirect_uri) as oauth:
            url, _ = oauth.create_authorization_url(
                authorize, state=pending.state, code_verifier=pending.code_verifier, nonce=pending.nonce
            )
        return url, pending

    async def finish(self, pending: PendingLogin, answer: Mapping[str, str], redirect_uri: str) -> Principal:
        """The principal the provider's answer (the redirect URI's query) signs in, or a refusal (401)."""
        state = answer.get("state", "")
        if not hmac.compare_digest(state.encode(), pending.state.encode()):
            raise SignInError("the sign-in's state does not match: start it again")
        if answer.get("error"):
            raise SignInError(
                "the identity provider refused the sign-in", details={"providerError": str(answer["error"])[:64]}
            )
        code = answer.get("code")
        if not code:
            raise SignInError("the identity provider's answer carries no code")
        _, token_endpoint = await self._metadata()
        try:
            async with self._oauth(redirect_uri) as oauth:
                token: dict[str, Any] = await oauth.fetch_token(
                    token_endpoint, grant_type="authorization_code", code=code, code_verifier=pending.code_verifier
                )
        except (AuthlibBaseError, httpx.HTTPError, ValueError) as exc:
            description = getattr(exc, "error", None) or type(exc).__name__
            raise SignInError(
                "the identity provider did not exchange the code", details={"providerError": str(description)[:64]}
            ) from None
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise SignInError("the identity provider answered no ID token (is 'openid' among the inbox's scopes?)")
        verified = await self._verifier.verify_id_token(id_token, client_id=self.inbox.client_id, nonce=pending.nonce)
        principal = verified.principal
        assert principal.subject is not None  # a verified token's principal names its subject
        # The session is the host's own credential: its trust root is the host (identity.md §2.2); the person keeps
        # the id their provider gave them.
        subject = dataclasses.replace(principal.subject, issuer=SESSION_ISSUER, lane="session")
        return dataclasses.replace(principal, subject=subject)
