"""API keys, principals, scopes and roles.

A key is configured as ``[PRINCIPAL=]KEY[:scope,scope…][@tenant][+role,role]``
(repeatable ``--api-key``) or in a JSON keys file. The principal id is what the
host records as ``decidedBy``; it is opaque to everyone else.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openwop_bridge.core.errors import ForbiddenError, UnauthenticatedError, ValidationError

#: Every scope the host checks. ``*`` grants all of them; ``runs:*`` all ``runs:`` scopes.
SCOPES: tuple[str, ...] = (
    "runs:create",
    "runs:read",
    "runs:cancel",
    "runs:fork",
    "approvals:respond",
    "approvals:act-as",
    "interrupts:read",
    "workflows:read",
    "metrics:read",
    "webhooks:manage",
    "audit:read",
)

#: Roles allowed to vote or answer on behalf of another principal.
ACT_AS_ROLES = frozenset({"admin", "operator"})

DEFAULT_TENANT = "default"

_SPEC = re.compile(
    r"^(?:(?P<principal>[^=:@+\s]+)=)?(?P<key>[^=:@+\s]+)"
    r"(?::(?P<scopes>[^@+\s]*))?(?:@(?P<tenant>[^+\s]+))?(?:\+(?P<roles>\S+))?$"
)


#: The lanes a credential may come through (identity.md §2): a key, a provider's token, an inbox session.
LANES: tuple[str, ...] = ("api-key", "oidc", "oauth2", "session")
#: The trust root of the ``api-key`` lane: the host's own keys (a key's principal id is the subject id).
API_KEY_ISSUER = "urn:openwop-bridge:api-key"
#: The trust root of the ``session`` lane: the host issues inbox sessions (identity.md §2.2: ``urn:<host>:session``).
SESSION_ISSUER = "urn:openwop-bridge:session"

#: The trust root of a decision by signed link: the host's link-signing secret (a realm of the API-key lane).
LINK_ISSUER = "urn:openwop-bridge:link"
#: The trust root of a decision by Slack button: the Slack app's signing secret (a realm of the API-key lane).
SLACK_ISSUER = "urn:openwop-bridge:slack"


@dataclass(frozen=True, slots=True)
class Subject:
    """Who a person is at an identity provider, and the lane their credential came through.

    ``issuer`` is the trust root (the provider's issuer identifier), ``subject_id`` the person's
    id there (the token's ``sub``), ``lane`` one of :data:`LANES`. ``name`` and ``email`` are
    what the provider says, for display only: nothing is authorised by them.
    """

    issuer: str
    subject_id: str
    lane: str
    name: str | None = None
    email: str | None = None

    def ref(self) -> dict[str, str]:
        """``{issuer, subjectId, lane}``: what runs and decisions record of this subject (never name or email)."""
        return {"issuer": self.issuer, "subjectId": self.subject_id, "lane": self.lane}


def subject_ref(principal: Principal | None) -> dict[str, str] | None:
    """The recorded form of ``principal``'s subject (:meth:`Subject.ref`); None for an API key or nobody."""
    return principal.subject.ref() if principal is not None and principal.subject is not None else None


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: an opaque id, a tenant, scopes and roles.

    ``subject`` says who the person is at their identity provider when the credential came from
    one (a token, an inbox session); None for an API key.
    """

    id: str
    tenant: str = DEFAULT_TENANT
    scopes: frozenset[str] = field(default_factory=lambda: frozenset({"*"}))
    roles: frozenset[str] = field(default_factory=frozenset)
    subject: Subject | None = None

    def has_scope(self, scope: str) -> bool:
        """True when any granted scope covers ``scope`` (exact, ``*`` or ``prefix:*``)."""
        if "*" in self.scopes or scope in self.scopes:
            return True
        prefix = scope.split(":", 1)[0]
        return f"{prefix}:*" in self.scopes

    def require(self, scope: str) -> None:
        """Raise 403 ``forbidden`` unless the principal holds ``scope``."""
        if not self.has_scope(scope):
            raise ForbiddenError(f"this key lacks the {scope!r} scope", details={"requiredScope": scope})

    def has_role(self, role: str) -> bool:
        """True when the principal holds ``role`` (``admin`` holds every role)."""
        return role in self.roles or "admin" in self.roles

    def run_tenant(self, requested: str | None) -> str:
        """The tenant a run this principal creates belongs to (only an all-tenant key may name one)."""
        return self.tenant if self.tenant != "*" else (requested or DEFAULT_TENANT)

    @property
    def can_act_as(self) -> bool:
        """May answer or vote on behalf of another principal."""
        return bool(self.roles & ACT_AS_ROLES) or self.has_scope("approvals:act-as")


SYSTEM = Principal(id="system", tenant="*", scopes=frozenset({"*"}), roles=frozenset({"admin"}))


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A configured key (only its digest is kept in memory after start-up)."""

    digest: bytes
    principal: Principal
    fingerprint: str


_HOST_NAMESPACES = frozenset(scope.split(":", 1)[0] for scope in SCOPES)


def _known_scope(scope: str) -> bool:
    """The host's scopes and wildcards, or a scope in a namespace of its own (``deploy:promote``),
    which only approval gates' ``requiredScope`` checks. A misspelt host scope stays an error."""
    if scope == "*" or scope in SCOPES or scope.endswith(":*"):
        return True
    namespace, sep, action = scope.partition(":")
    return bool(sep and namespace and action) and namespace not in _HOST_NAMESPACES


#: Public name of the scope check keys are held to (the identity file holds ``roleScopes`` to it too).
known_scope = _known_scope


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


def make_key(
    key: str,
    *,
    principal: str | None = None,
    tenant: str = DEFAULT_TENANT,
    scopes: Iterable[str] = ("*",),
    roles: Iterable[str] = (),
) -> ApiKey:
    """Build an :class:`ApiKey` from its parts."""
    if not key or len(key) < 8:
        raise ValidationError("an API key must be at least 8 characters long")
    fingerprint = hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]
    scope_set = frozenset(s.strip() for s in scopes if s.strip()) or frozenset({"*"})
    unknown = {s for s in scope_set if not _known_scope(s)}
    if unknown:
        raise ValidationError(
            f"unknown scope(s): {', '.join(sorted(unknown))} (the host's are {', '.join(SCOPES)}; "
            "scopes for approval gates' requiredScope take a namespace of their own, e.g. deploy:promote)",
            details={"known": list(SCOPES)},
        )
    return ApiKey(
        digest=_digest(key),
        principal=Principal(
            id=principal or f"key:{fingerprint}",
            tenant=tenant or DEFAULT_TENANT,
            scopes=scope_set,
            roles=frozenset(r.strip() for r in roles if r.strip()),
        ),
        fingerprint=fingerprint,
    )


def parse_key_spec(text: str) -> ApiKey:
    """Parse ``[PRINCIPAL=]KEY[:scope,scope…][@tenant][+role,role]``."""
    match = _SPEC.match(text.strip())
    if not match:
        raise ValidationError(f"cannot parse API key spec {text!r}; expected [PRINCIPAL=]KEY[:scopes][@tenant][+roles]")
    scopes = (match["scopes"] or "*").split(",")
    roles = (match["roles"] or "").split(",")
    return make_key(
        match["key"],
        principal=match["principal"],
        tenant=match["tenant"] or DEFAULT_TENANT,
        scopes=scopes,
        roles=roles,
    )


def load_keys_file(path: str | Path) -> list[ApiKey]:
    """Load keys from JSON: ``[{"key", "principal"?, "tenant"?, "scopes"?, "roles"?}, …]``."""
    try:
        items: Any = json.loads(Path(path).read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValidationError(f"cannot read keys file {path}: {exc}") from exc
    if isinstance(items, Mapping):
        items = items.get("keys", [])
    if not isinstance(items, list):
        raise ValidationError('a keys file holds a list of key objects (or {"keys": [...]})')
    keys = []
    for item in items:
        if not isinstance(item, Mapping) or "key" not in item:
            raise ValidationError("each entry of a keys file needs a 'key'")
        keys.append(
            make_key(
                str(item["key"]),
                principal=item.get("principal"),
                tenant=item.get("tenant", DEFAULT_TENANT),
                scopes=item.get("scopes", ["*"]),
                roles=item.get("roles", []),
            )
        )
    return keys


def generate_dev_key() -> tuple[str, ApiKey]:
    """A fresh development key with every scope and the admin role."""
    key = "owb_dev_" + secrets.token_urlsafe(24)
    return key, make_key(key, principal="dev", scopes=["*"], roles=["admin"])


class KeyRing:
    """Authenticates bearer keys; lookups compare digests in constant time."""

    def __init__(self, keys: Iterable[ApiKey]) -> None:
        self._by_digest: dict[bytes, ApiKey] = {}
        self._tokens: Callable[[str], Principal | None] | None = None
        self._session: Callable[[], Principal | None] | None = None
        for k in keys:
            self._by_digest[k.digest] = k

    def use_tokens(self, resolve: Callable[[str], Principal | None]) -> None:
        """Also accept bearer credentials that are not keys: ``resolve`` maps one to its principal, returns
        None when it is none of its kind, or raises its refusal (the identity providers' JWTs)."""
        self._tokens = resolve

    def use_sessions(self, resolve: Callable[[], Principal | None]) -> None:
        """Also accept, on a request without an Authorization header, the credential the request carries
        elsewhere (the inbox's session cookie): ``resolve`` returns its principal, None when the request
        carries none, or raises its refusal."""
        self._session = resolve

    @property
    def takes_tokens(self) -> bool:
        """Whether bearer credentials other than keys are accepted (an identity file is configured)."""
        return self._tokens is not None

    def __len__(self) -> int:
        return len(self._by_digest)

    def add(self, key: ApiKey) -> None:
        """Accept one more key."""
        self._by_digest[key.digest] = key

    def principals(self) -> list[Principal]:
        """Every configured principal."""
        return [k.principal for k in self._by_digest.values()]

    def authenticate(self, authorization: str | None) -> Principal:
        """Resolve an ``Authorization`` header to a principal, or raise 401."""
        if not authorization:
            carried = self._session() if self._session is not None else None
            if carried is not None:
                return carried
            raise UnauthenticatedError("missing Authorization: Bearer <api key>")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise UnauthenticatedError("the Authorization header must be 'Bearer <api key>'")
        digest = _digest(token.strip())
        found = self._by_digest.get(digest)
        # The dict lookup finds a candidate by digest; the comparison below is
        # constant-time so a near-miss digest leaks nothing either.
        if found is None or not hmac.compare_digest(found.digest, digest):
            resolved = self._tokens(token.strip()) if self._tokens is not None else None
            if resolved is not None:
                return resolved
            raise UnauthenticatedError("unknown API key")
        return found.principal
