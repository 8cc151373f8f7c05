"""The identity file: the identity providers whose tokens the host accepts (``--identity-config FILE``).

One JSON document, read and checked once at start-up::

    {"issuers": [{"issuer": "https://idp.example.com", "lane": "oidc", "audience": "openwop-bridge",
                  "revocation": "exp-only", "revocationWindowSeconds": 3600,
                  "claims": {"principal": "preferred_username", "tenant": "org", "roles": "groups",
                             "scopes": "scope", "name": "name", "email": "email"},
                  "defaultTenant": "default",
                  "roleScopes": {"approvers": ["runs:read", "interrupts:read", "approvals:respond"]}},
                 {"issuer": "https://login.example.org", "audience": "openwop-bridge",
                  "revocation": "exp-and-recheck", "revocationWindowSeconds": 300,
                  "introspection": {"clientId": "bridge", "clientSecret": {"env": "INTROSPECTION_SECRET"}}}],
     "inbox": {"issuer": "https://idp.example.com", "clientId": "bridge-inbox",
               "clientSecret": {"env": "INBOX_CLIENT_SECRET"}, "scopes": ["openid", "profile", "email"]},
     "sessions": {"idleMs": 3600000, "absoluteMs": 43200000}}

An issuer is ``https://``, or ``http://`` on a loopback address only (tests and local
development). An ``exp-and-recheck`` issuer names the client the host asks its RFC 7662
introspection endpoint with (the endpoint is the discovery document's
``introspection_endpoint``, or ``introspectionUri``). A client secret (the inbox's, an
introspection client's) may be written inline or as ``{"env": "NAME"}``; either way it is
held as :class:`pydantic.SecretStr`, so no ``repr``, log line or error message shows it.
Any mistake stops start-up with one line naming the field (``issuers[0].audience: …``).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError
from pydantic.alias_generators import to_camel

from openwop_bridge.core.auth import DEFAULT_TENANT, SCOPES, known_scope

__all__ = [
    "ALGORITHMS",
    "ClaimNames",
    "IdentityConfig",
    "IdentityConfigError",
    "InboxClient",
    "IntrospectionClient",
    "IssuerConfig",
    "Sessions",
    "load_identity_config",
    "parse_identity_config",
]

#: The signature algorithms a token may use: asymmetric only (``none`` and ``HS*`` are never accepted).
ALGORITHMS: tuple[str, ...] = ("RS256", "PS256", "ES256", "EdDSA")
_TENANT = re.compile(r"^[A-Za-z0-9._~-]{1,128}$")


class IdentityConfigError(RuntimeError):
    """The identity file cannot be used; the message names the field (never a secret's value)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


def is_loopback(host: str) -> bool:
    """``localhost`` or an address of the loopback network (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(value: str, what: str) -> str:
    """``value`` as an https URL, or an http one on a loopback address; no credentials, query or fragment."""
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f"{what} must be an https:// URL")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ValueError(f"{what} must be https:// (http:// only on a loopback address such as 127.0.0.1)")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ValueError(f"{what} must carry no user, password, query or fragment")
    return value


def secret_from(value: Any, info: ValidationInfo) -> Any:
    """A client secret as written: a string, or ``{"env": "NAME"}`` read from the environment."""
    if isinstance(value, Mapping):
        if set(value) != {"env"} or not isinstance(value["env"], str) or not value["env"]:
            raise ValueError('a secret is a string or {"env": "NAME"}')
        environ: Mapping[str, str] = (info.context or {}).get("environ", os.environ)
        found = environ.get(value["env"])
        if not found:
            raise ValueError(f"the environment variable {value['env']!r} is not set")
        return found
    return value


class IntrospectionClient(_Model):
    """The client an ``exp-and-recheck`` issuer knows the host as, to ask it about tokens (RFC 7662)."""

    client_id: str = Field(min_length=1)
    client_secret: SecretStr

    @field_validator("client_secret", mode="before")
    @classmethod
    def _secret(cls, value: Any, info: ValidationInfo) -> Any:
        return secret_from(value, info)


class ClaimNames(_Model):
    """Which claim of a token carries what. ``tenant`` and ``roles`` are optional: without them every
    token of the issuer is in its ``defaultTenant`` and holds no role."""

    principal: str = Field(default="sub", min_length=1)
    tenant: str | None = Field(default=None, min_length=1)
    roles: str | None = Field(default=None, min_length=1)
    scopes: str = Field(default="scope", min_length=1)
    name: str = Field(default="name", min_length=1)
    email: str = Field(default="email", min_length=1)


class IssuerConfig(_Model):
    """One identity provider: its tokens, the audience they must name, and what their claims mean."""

    issuer: str
    lane: Literal["oidc", "oauth2"] = "oidc"
    audience: str = Field(min_length=1)
    revocation: Literal["exp-only", "exp-and-recheck"] = "exp-only"
    revocation_window_seconds: int = Field(default=3600, ge=1)
    claims: ClaimNames = ClaimNames()
    default_tenant: str = Field(default=DEFAULT_TENANT, min_length=1)
    #: The tenants besides ``defaultTenant`` this issuer may speak for (a token naming another is refused).
    tenants: tuple[str, ...] = ()
    role_scopes: dict[str, tuple[str, ...]] = {}
    #: The JWKS location, when the provider publishes no discovery document (else read from it).
    jwks_uri: str | None = None
    #: How long fetched keys are used before they are fetched again (an unknown ``kid`` fetches sooner).
    keys_max_age_seconds: int = Field(default=300, ge=1, le=86_400)
    #: Clock skew allowed on ``exp``, ``nbf`` and ``iat``.
    leeway_seconds: int = Field(default=60, ge=0, le=300)
    #: ``exp-and-recheck``: the client the host introspects tokens with.
    introspection: IntrospectionClient | None = None
    #: The RFC 7662 endpoint, when the discovery document names none (else read from it).
    introspection_uri: str | None = None

    @field_validator("issuer")
    @classmethod
    def _issuer(cls, value: str) -> str:
        return check_url(value, "the issuer")

    @field_validator("default_tenant", "tenants")
    @classmethod
    def _tenants(cls, value: str | tuple[str, ...]) -> str | tuple[str, ...]:
        for tenant in (value,) if isinstance(value, str) else value:
            if not _TENANT.match(tenant):
                raise ValueError(f"{tenant!r} is not a tenant id (letters, digits and . _ ~ -, at most 128)")
        return value

    @field_validator("jwks_uri")
    @classmethod
    def _jwks(cls, value: str | None) -> str | None:
        return None if value is None else check_url(value, "jwksUri")

    @field_validator("introspection_uri")
    @classmethod
    def _introspection_uri(cls, value: str | None) -> str | None:
        return None if value is None else check_url(value, "introspectionUri")

    @model_validator(mode="after")
    def _recheck(self) -> IssuerConfig:
        # The host advertises only a window it enforces (identity.md §2.2): re-checking needs the provider's ear.
        if self.revocation == "exp-and-recheck" and self.introspection is None:
            raise ValueError("'exp-and-recheck' needs 'introspection', the client the host asks the provider with")
        if self.revocation == "exp-only" and (self.introspection is not None or self.introspection_uri is not None):
            raise ValueError("'introspection' is used with 'exp-and-recheck' only (this issuer is 'exp-only')")
        return self

    @field_validator("role_scopes")
    @classmethod
    def _role_scopes(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for role, scopes in value.items():
            unknown = sorted(s for s in scopes if not known_scope(s))
            if unknown:
                raise ValueError(
                    f"role {role!r}: unknown scope(s) {', '.join(unknown)} (the host's are {', '.join(SCOPES)})"
                )
        return value

    @property
    def allowed_tenants(self) -> frozenset[str]:
        """The tenants this issuer may speak for."""
        return frozenset({self.default_tenant, *self.tenants})


class InboxClient(_Model):
    """The inbox's client at one of the issuers (the sign-in of people)."""

    issuer: str
    client_id: str = Field(min_length=1)
    client_secret: SecretStr | None = None
    scopes: tuple[str, ...] = ("openid", "profile", "email")
    #: What the inbox's button names the provider ("Sign in with <name>"); default the issuer's host name.
    name: str | None = Field(default=None, min_length=1, max_length=64)

    @field_validator("client_secret", mode="before")
    @classmethod
    def _secret(cls, value: Any, info: ValidationInfo) -> Any:
        return secret_from(value, info)


class Sessions(_Model):
    """How long an inbox session lives: since its last use (``idleMs``) and at most (``absoluteMs``)."""

    idle_ms: int = Field(default=3_600_000, ge=60_000)
    absolute_ms: int = Field(default=43_200_000, ge=60_000)

    @model_validator(mode="after")
    def _order(self) -> Sessions:
        if self.absolute_ms < self.idle_ms:
            raise ValueError("absoluteMs must be at least idleMs")
        return self


class IdentityConfig(_Model):
    """The whole identity file."""

    issuers: tuple[IssuerConfig, ...] = Field(min_length=1)
    inbox: InboxClient | None = None
    sessions: Sessions = Sessions()

    @model_validator(mode="after")
    def _references(self) -> IdentityConfig:
        seen: set[str] = set()
        for issuer in self.issuers:
            if issuer.issuer in seen:
                raise ValueError(f"issuers: {issuer.issuer!r} is configured twice")
            seen.add(issuer.issuer)
        if self.inbox is not None and self.inbox.issuer not in seen:
            raise ValueError(f"inbox.issuer: {self.inbox.issuer!r} is not one of the configured issuers")
        return self

    def issuer(self, iss: str) -> IssuerConfig | None:
        """The configured issuer whose identifier is exactly ``iss``."""
        return next((i for i in self.issuers if i.issuer == iss), None)


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def parse_identity_config(data: Any, *, environ: Mapping[str, str] | None = None) -> IdentityConfig:
    """Check a parsed identity document; :class:`IdentityConfigError` names the first bad field."""
    try:
        return IdentityConfig.model_validate(data, context={"environ": os.environ if environ is None else environ})
    except PydanticValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = _where(tuple(p for p in first["loc"] if not str(p).startswith("function-")))
        message = str(first["msg"]).removeprefix("Value error, ")
        raise IdentityConfigError(f"{where}: {message}" if where else message) from None


def load_identity_config(path: str | Path, *, environ: Mapping[str, str] | None = None) -> IdentityConfig:
    """Read and check the identity file at ``path`` (see :func:`parse_identity_config`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise IdentityConfigError(f"cannot read the identity file {str(path)!r}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IdentityConfigError(f"the identity file is not JSON (line {exc.lineno}, column {exc.colno})") from None
    try:
        return parse_identity_config(data, environ=environ)
    except IdentityConfigError as exc:
        raise IdentityConfigError(f"identity file {str(path)!r}: {exc}") from None
