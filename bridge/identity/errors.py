"""The identity refusals of the OpenWOP registry (identity.md §6): each a 401 with its own code."""

from __future__ import annotations

from openwop_bridge.core.errors import UnauthenticatedError

__all__ = [
    "AudienceMismatchError",
    "CredentialLifetimeExceededError",
    "CredentialRevokedError",
    "IdentityUnresolvableError",
    "IdentityUnverifiedError",
]


class IdentityUnverifiedError(UnauthenticatedError, code="identity_unverified"):
    """The token fails verification against its issuer's keys (signature, algorithm, issuer, time)."""


class AudienceMismatchError(UnauthenticatedError, code="audience_mismatch"):
    """The token's audience is not this host."""


class CredentialLifetimeExceededError(UnauthenticatedError, code="credential_lifetime_exceeded"):
    """On an ``exp-only`` issuer: the token lives longer than the window, or carries no ``iat``."""


class IdentityUnresolvableError(UnauthenticatedError, code="identity_unresolvable"):
    """A verified token names no principal, or a tenant its issuer may not speak for."""


class CredentialRevokedError(UnauthenticatedError, code="credential_revoked"):
    """A revoked credential: a token its provider says is not active (``exp-and-recheck``), a signed-out session."""
