"""The notify file: people, channels and routes (``--notify-config FILE``).

One JSON document, read and checked once at start-up::

    {"publicBaseUrl": "https://approvals.example.com",
     "people": {"alice": {"tenant": "tenant-a", "email": "alice@example.com", "slack": "U0ALICE",
                          "roles": ["finance"]}},
     "channels": {"email": {"smtp": "smtp://mail.example.com:587", "starttls": true,
                            "from": "Approvals <approvals@example.com>"},
                  "slack": {"token": {"env": "SLACK_BOT_TOKEN"}, "signingSecret": {"env": "SLACK_SIGNING_SECRET"}},
                  "teams": {"ops": {"url": {"env": "TEAMS_OPS_URL"}}}},
     "routes": [{"match": {"workflowId": "expense-approval", "kind": "approval"},
                 "notify": ["alice", "role:finance", "email:finance-team@example.com", "slack:C0FINANCE"]}]}

A person's key in ``people`` is their principal id (what their API key names). Secrets
(the Slack token and signing secret, the SMTP password, a Teams workflow URL) may be
written inline or as ``{"env": "NAME"}``; either way they are held as
:class:`pydantic.SecretStr`, so no ``repr``, log line or error message shows them. Any
mistake stops start-up with one line naming the field (``routes[0].notify[2]: …``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from email.utils import parseaddr
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError
from pydantic.alias_generators import to_camel

__all__ = [
    "EmailChannel",
    "NotifyConfig",
    "NotifyConfigError",
    "Person",
    "Route",
    "RouteMatch",
    "SlackChannel",
    "TeamsTarget",
    "load_notify_config",
    "parse_notify_config",
]

#: How long a notice's link may live at most when the interrupt has no deadline (30 days).
MAX_LINK_TTL_MS = 30 * 24 * 3600 * 1000
_TARGET = re.compile(r"^(?:(?P<prefix>role|email|slack|teams):(?P<rest>.+)|(?P<person>[^:\s]+))$")
_EMAIL = re.compile(r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$")
_SLACK_ID = re.compile(r"^[A-Z0-9][A-Z0-9]{2,}$")


class NotifyConfigError(RuntimeError):
    """The notify file cannot be used; the message names the field (never a secret's value)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class SecretFromEnv(_Model):
    """``{"env": "NAME"}``: the secret is the value of the environment variable ``NAME``."""

    env: str = Field(min_length=1)


def _secret(value: Any, info: ValidationInfo) -> Any:
    """A secret written inline or as ``{"env": NAME}``, read from the environment given to the parser."""
    if isinstance(value, Mapping):
        ref = SecretFromEnv.model_validate(value)
        environ: Mapping[str, str] = (info.context or {}).get("environ", os.environ)
        found = environ.get(ref.env)
        if not found:
            raise ValueError(f"the environment variable {ref.env!r} is not set")
        return found
    return value


class Person(_Model):
    """Someone who may be told: their tenant, addresses and roles."""

    tenant: str = "default"
    email: str | None = None
    slack: str | None = None
    roles: tuple[str, ...] = ()
    #: Take one e-mail every this long listing everything waiting on them, instead of a mail per interrupt.
    digest_every_ms: int | None = Field(default=None, ge=1000)

    @field_validator("email")
    @classmethod
    def _email(cls, value: str | None) -> str | None:
        if value is not None and not _EMAIL.match(value):
            raise ValueError("not an e-mail address")
        return value

    @field_validator("slack")
    @classmethod
    def _slack(cls, value: str | None) -> str | None:
        if value is not None and not _SLACK_ID.match(value):
            raise ValueError("not a Slack user id (such as U0ALICE)")
        return value


class EmailChannel(_Model):
    """SMTP delivery: ``smtp://host:port`` (plain, or STARTTLS with ``starttls``) or ``smtps://`` (implicit TLS)."""

    smtp: str
    starttls: bool = False
    from_: str = Field(alias="from")
    username: str | None = None
    password: SecretStr | None = None
    #: A CA bundle (PEM) to trust for the server's certificate, besides the system's (a private CA).
    tls_ca_file: str | None = None
    link_ttl_ms: int | None = Field(default=None, gt=0)
    timeout_ms: int = Field(default=30_000, gt=0)

    _password = field_validator("password", mode="before")(_secret)

    @field_validator("from_")
    @classmethod
    def _from(cls, value: str) -> str:
        if "\n" in value or "\r" in value or not _EMAIL.match(parseaddr(value)[1]):
            raise ValueError("must be an address such as 'Approvals <approvals@example.com>'")
        return value

    @field_validator("smtp")
    @classmethod
    def _smtp(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ValueError("must be smtp://host[:port] or smtps://host[:port]")
        if parts.username or parts.password:
            raise ValueError("put the user name in 'username' and the password in 'password', not in the URL")
        try:
            parts.port  # noqa: B018 - raises on a bad port
        except ValueError:
            raise ValueError("the port is not a number between 0 and 65535") from None
        return value

    @model_validator(mode="after")
    def _tls(self) -> EmailChannel:
        if self.starttls and self.implicit_tls:
            raise ValueError("starttls: smtps:// already speaks TLS from the start; use smtp:// with starttls")
        if self.tls_ca_file is not None and not Path(self.tls_ca_file).is_file():
            raise ValueError(f"tlsCaFile: no file {self.tls_ca_file!r}")
        return self

    @property
    def implicit_tls(self) -> bool:
        """TLS from the first byte (``smtps://``)."""
        return urlsplit(self.smtp).scheme == "smtps"

    @property
    def host(self) -> str:
        """The SMTP server's host name."""
        return str(urlsplit(self.smtp).hostname)

    @property
    def port(self) -> int:
        """The SMTP server's port (465 for ``smtps://``, 587 with STARTTLS, else 25 when not given)."""
        given = urlsplit(self.smtp).port
        if given is not None:
            return given
        return 465 if self.implicit_tls else 587 if self.starttls else 25


class SlackChannel(_Model):
    """Slack through a bot token (``chat:write``) and the app's signing secret."""

    token: SecretStr
    signing_secret: SecretStr
    api_base: str = "https://slack.com/api/"
    link_ttl_ms: int | None = Field(default=None, gt=0)
    timeout_ms: int = Field(default=10_000, gt=0)

    _secrets = field_validator("token", "signing_secret", mode="before")(_secret)

    @field_validator("api_base")
    @classmethod
    def _api_base(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http(s) URL such as https://slack.com/api/")
        return value if value.endswith("/") else value + "/"


class TeamsTarget(_Model):
    """One Teams channel: the URL of its Workflows "post to a channel when a webhook request is received" flow."""

    url: SecretStr
    link_ttl_ms: int | None = Field(default=None, gt=0)
    timeout_ms: int = Field(default=10_000, gt=0)

    _url_secret = field_validator("url", mode="before")(_secret)

    @field_validator("url")
    @classmethod
    def _url(cls, value: SecretStr) -> SecretStr:
        parts = urlsplit(value.get_secret_value())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http(s) URL")
        return value


class Channels(_Model):
    """The channels notices may go out on."""

    email: EmailChannel | None = None
    slack: SlackChannel | None = None
    teams: dict[str, TeamsTarget] = Field(default_factory=dict)


class RouteMatch(_Model):
    """Which interrupts a route is for; an absent field matches anything."""

    workflow_id: str | None = None
    kind: str | None = None
    tenant: str | None = None

    def matches(self, workflow_id: str, kind: str, tenant: str) -> bool:
        """Whether an interrupt of this workflow, kind and tenant falls under the route."""
        return (
            (self.workflow_id is None or self.workflow_id == workflow_id)
            and (self.kind is None or self.kind == kind)
            and (self.tenant is None or self.tenant == tenant)
        )


Target = Annotated[str, Field(min_length=1, max_length=320)]


class Route(_Model):
    """Who is told about the interrupts a route matches, and what happens when nobody answers."""

    match: RouteMatch = Field(default_factory=RouteMatch)
    notify: tuple[Target, ...] = ()
    remind_after_ms: int | None = Field(default=None, gt=0)
    escalate_after_ms: int | None = Field(default=None, gt=0)
    escalate_to: tuple[Target, ...] = ()
    on_undeliverable: Literal["wait", "fail", "escalate"] = "wait"
    fallback_after_ms: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _escalation(self) -> Route:
        if self.escalate_after_ms is not None and not self.escalate_to:
            raise ValueError("escalateAfterMs needs escalateTo")
        if self.on_undeliverable == "escalate" and not self.escalate_to:
            raise ValueError("onUndeliverable 'escalate' needs escalateTo")
        return self


class NotifyConfig(_Model):
    """The whole notify file (see the module docstring)."""

    public_base_url: str | None = None
    people: dict[str, Person] = Field(default_factory=dict)
    channels: Channels = Field(default_factory=Channels)
    routes: tuple[Route, ...] = ()

    @field_validator("public_base_url")
    @classmethod
    def _base(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError("must be an http(s) URL without a query, such as https://approvals.example.com")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _references(self) -> NotifyConfig:
        problems = [*self._people_problems(), *self._route_problems()]
        if problems:
            raise ValueError(problems[0])
        return self

    def _people_problems(self) -> list[str]:
        out = []
        for pid, person in self.people.items():
            if person.email and self.channels.email is None:
                out.append(f"people.{pid}.email: no channels.email is configured to send it")
            if person.slack and self.channels.slack is None:
                out.append(f"people.{pid}.slack: no channels.slack is configured to send it")
            if person.digest_every_ms and not person.email:
                out.append(f"people.{pid}.digestEveryMs: a digest is an e-mail, and they have no email")
        return out

    def _route_problems(self) -> list[str]:
        out = []
        for i, route in enumerate(self.routes):
            for field_name, targets in (("notify", route.notify), ("escalateTo", route.escalate_to)):
                for j, target in enumerate(targets):
                    problem = self.target_problem(target)
                    if problem:
                        out.append(f"routes[{i}].{field_name}[{j}]: {problem}")
        return out

    def target_problem(self, target: str) -> str | None:
        """Why a route target cannot be used, or None."""
        found = _TARGET.match(target)
        if found is None:
            return f"{target!r} is not a person, role:NAME, email:ADDRESS, slack:CHANNEL or teams:NAME"
        prefix, rest = found["prefix"], found["rest"]
        if prefix is None:
            return None if found["person"] in self.people else f"no person {found['person']!r} in people"
        if prefix == "email":
            if not _EMAIL.match(rest):
                return f"{rest!r} is not an e-mail address"
            return None if self.channels.email else "no channels.email is configured"
        if prefix == "slack":
            if not _SLACK_ID.match(rest):
                return f"{rest!r} is not a Slack channel id (such as C0FINANCE)"
            return None if self.channels.slack else "no channels.slack is configured"
        if prefix == "teams":
            return None if rest in self.channels.teams else f"no channels.teams.{rest}"
        return None  # role:NAME may name a role nobody holds yet

    def link_base(self, public_url: str | None) -> str:
        """The base of links in notices: ``publicBaseUrl``, else the host's ``--public-url``."""
        base = self.public_base_url or (public_url.rstrip("/") if public_url else None)
        if not base:
            raise NotifyConfigError("publicBaseUrl: links in notices need it (or --public-url)")
        return base


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def parse_notify_config(data: Any, *, environ: Mapping[str, str] | None = None) -> NotifyConfig:
    """Check a parsed notify document; :class:`NotifyConfigError` names the first bad field."""
    try:
        return NotifyConfig.model_validate(data, context={"environ": os.environ if environ is None else environ})
    except PydanticValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = _where(tuple(p for p in first["loc"] if p != "function-after[_references(), NotifyConfig]"))
        message = str(first["msg"]).removeprefix("Value error, ")
        raise NotifyConfigError(f"{where}: {message}" if where else message) from None


def load_notify_config(path: str | Path, *, environ: Mapping[str, str] | None = None) -> NotifyConfig:
    """Read and check the notify file at ``path`` (see :func:`parse_notify_config`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise NotifyConfigError(f"cannot read the notify file {str(path)!r}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotifyConfigError(f"the notify file is not JSON (line {exc.lineno}, column {exc.colno})") from None
    try:
        return parse_notify_config(data, environ=environ)
    except NotifyConfigError as exc:
        raise NotifyConfigError(f"notify file {str(path)!r}: {exc}") from None
