"""Signed resolution tokens (OpenWOP v1.1, RFC 0093).

``token = base64url(JSON{runId, nodeId, interruptId, expiresAt, intent, kid}) "." base64url(mac)``
with ``mac = HMAC-SHA256(secret[kid], JSON bytes)``, both parts unpadded base64url in
their one canonical spelling (any other spelling is refused). A link may name its person (``sub``) and,
for a delegate's copy of a notice, whose place that person answers in (``for``: the delegator, through
a delegation that must still stand when the link is used). Several secrets verify at
once (``kid`` selects one) so signing secrets rotate without orphaning links
already sent; only the active one signs. Checks are constant-time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from openwop_bridge.core.clock import iso_ms, parse_iso_ms
from openwop_bridge.core.errors import InterruptExpiredError, InterruptNotFoundError, ValidationError

DEFAULT_TTL_MS = 30 * 60 * 1000
INTENTS = ("resolve", "inspect")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    """Decode unpadded base64url, refusing any spelling but the one :func:`_b64` writes."""
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(data) != text:  # padding, other alphabets, stray characters, unused bits set
        raise ValueError("not canonical base64url")
    return data


def kid_for(secret: str) -> str:
    """A stable key id derived from a secret (used when none is given)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()[:8]


def new_secret() -> str:
    """A fresh random signing secret."""
    return secrets.token_urlsafe(32)


def parse_secret_spec(text: str) -> tuple[str, str]:
    """``kid:secret`` or a bare secret (its kid is derived from it)."""
    kid, sep, secret = text.partition(":")
    if sep and kid and secret:
        return kid, secret
    if len(text) < 16:
        raise ValidationError("a token secret must be at least 16 characters long")
    return kid_for(text), text


@dataclass(frozen=True, slots=True)
class TokenClaims:
    """What a verified token says."""

    run_id: str
    node_id: str
    interrupt_id: str
    expires_at_ms: int
    intent: str
    kid: str
    subject: str | None = None
    #: Whose place the link's subject answers in, through a delegation (``for``); None for their own.
    on_behalf: str | None = None


#: What a derived key's HMAC input starts with, before its purpose (see :meth:`TokenSigner.derived_keys`).
DERIVED_LABEL = b"openwop-bridge derived key:"


class TokenSigner:
    """Mints and verifies tokens with a set of secrets, one of them active."""

    def __init__(self, secrets_by_kid: Mapping[str, str], active_kid: str) -> None:
        if active_kid not in secrets_by_kid:
            raise ValueError("the active key id must be one of the secrets")
        self._secrets = {k: v.encode("utf-8") for k, v in secrets_by_kid.items()}
        self.active_kid = active_kid

    @property
    def kids(self) -> list[str]:
        """Key ids that verify."""
        return list(self._secrets)

    def mint(
        self,
        run_id: str,
        node_id: str,
        interrupt_id: str,
        expires_at_ms: int,
        intent: str,
        subject: str | None = None,
        on_behalf: str | None = None,
    ) -> str:
        """A token for one interrupt with the given expiry and intent.

        ``subject`` names the person the link is for; it becomes ``decidedBy``. ``on_behalf`` names the
        delegator the subject stands in for (their answer is recorded in that person's place).
        """
        if intent not in INTENTS:
            raise ValueError(f"intent must be one of {INTENTS}")
        claims = {
            "runId": run_id,
            "nodeId": node_id,
            "interruptId": interrupt_id,
            "expiresAt": iso_ms(expires_at_ms),
            "intent": intent,
            "kid": self.active_kid,
        }
        if subject:
            claims["sub"] = subject
            if on_behalf:
                claims["for"] = on_behalf
        body = json.dumps(claims, separators=(",", ":")).encode("utf-8")
        mac = hmac.new(self._secrets[self.active_kid], body, hashlib.sha256).digest()
        return f"{_b64(body)}.{_b64(mac)}"

    def derived_keys(self, purpose: str) -> list[bytes]:
        """One 32-byte key per verifying secret for another use (``purpose``), the active one's first.

        Each is ``HMAC-SHA256(secret, "openwop-bridge derived key:" + purpose)``: it rotates and
        retires with its secret, and neither reveals the secret nor signs a link.
        """
        label = DERIVED_LABEL + purpose.encode("utf-8")
        order = [self.active_kid, *(k for k in self._secrets if k != self.active_kid)]
        return [hmac.new(self._secrets[kid], label, hashlib.sha256).digest() for kid in order]

    def verify(self, token: str, now_ms: int) -> TokenClaims:
        """Check signature then expiry; raise 404 for a bad token, 410 when expired."""
        head, sep, tail = token.partition(".")
        if not sep or not head or not tail:
            raise InterruptNotFoundError("no interrupt answers to this token (malformed)")
        try:
            body = _unb64(head)
            mac = _unb64(tail)
            claims = json.loads(body)
        except (ValueError, json.JSONDecodeError) as exc:
            raise InterruptNotFoundError("no interrupt answers to this token (malformed)") from exc
        if not isinstance(claims, dict):
            raise InterruptNotFoundError("no interrupt answers to this token (malformed)")
        secret = self._secrets.get(str(claims.get("kid", "")))
        expected = hmac.new(secret or b"\0", body, hashlib.sha256).digest()
        if not hmac.compare_digest(expected, mac) or secret is None:
            raise InterruptNotFoundError("no interrupt answers to this token (bad signature or retired key)")
        try:
            out = TokenClaims(
                run_id=str(claims["runId"]),
                node_id=str(claims["nodeId"]),
                interrupt_id=str(claims["interruptId"]),
                expires_at_ms=parse_iso_ms(str(claims["expiresAt"])),
                intent=str(claims["intent"]),
                kid=str(claims["kid"]),
                subject=str(claims["sub"]) if claims.get("sub") else None,
                on_behalf=str(claims["for"]) if claims.get("sub") and claims.get("for") else None,
            )
        except (KeyError, ValueError) as exc:
            raise InterruptNotFoundError("no interrupt answers to this token (incomplete)") from exc
        if now_ms >= out.expires_at_ms:
            raise InterruptExpiredError("this link has expired", details={"expiresAt": iso_ms(out.expires_at_ms)})
        return out


def token_expiry(now_ms: int, deadline_ms: int | None, ttl_ms: int = DEFAULT_TTL_MS) -> int:
    """A token's expiry: ``now + ttl``, never past the interrupt's own deadline."""
    expiry = now_ms + ttl_ms
    if deadline_ms is not None:
        expiry = min(expiry, deadline_ms)
    return expiry
