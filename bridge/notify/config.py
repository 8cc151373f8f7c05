"""The notify file: people, channels and routes (``--notify-config FILE``).

One JSON document, read and checked once at start-up::

    {"publicBaseUrl": "https://approvals.example.com",
     "people": {"alice": {"tenant": "tenant-a", "email": "alice@example.com", "slack": "U0ALICE",
                          "roles": ["finance"],
                          "subject": {"issuer": "https://idp.example.com", "subjectId": "248289761001"}}},
     "channels": {"email": {"smtp": "smtp://mail.example.com:587", "starttls": true,
                            "from": "Approvals <approvals@example.com>"},
                  "slack": {"token": {"env": "SLACK_BOT_TOKEN"}, "signingSecret": {"env": "SLACK_SIGNING_SECRET"}},
                  "teams": {"ops": {"url": {"env": "TEAMS_OPS_URL"}}}},
     "routes": [{"match": {"workflowId": "expense-approval", "kind": "approval"},
                 "notify": ["alice", "role:finance", "email:finance-team@example.com", "slack:C0FINANCE"]}]}

A person's key in ``people`` is their principal id (what their API key names); their ``subject``, when
given, is who they are at an identity provider of the identity file, so that the provider's tokens for
them resolve to this principal id whatever their principal claim says (the host checks the issuer
against the identity file at start: :mod:`openwop_bridge.host.people`). ``channels`` holds a
section per channel, each checked by its channel type's model (:mod:`openwop_bridge.notify.channel_types`:
e-mail, Slack and Teams are the bridge's own; another package may register more), and a route target
``<prefix>:ADDRESS`` names a shared address on the configured channel with that prefix. Secrets
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
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError
from pydantic.alias_generators import to_camel

from openwop_bridge.notify.channel_types import ChannelType, channel_names, channel_type

__all__ = [
    "EMAIL",
    "SLACK_ID",
    "ConfigModel",
    "NotifyConfig",
    "NotifyConfigError",
    "Person",
    "PersonSubject",
    "Route",
    "RouteMatch",
    "load_notify_config",
    "parse_notify_config",
    "secret",
]

#: How long a notice's link may live at most when the interrupt has no deadline (30 days).
MAX_LINK_TTL_MS = 30 * 24 * 3600 * 1000
#: An e-mail address, as the notify file accepts one.
EMAIL = re.compile(r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$")
#: A Slack user or channel id.
SLACK_ID = re.compile(r"^[A-Z0-9][A-Z0-9]{2,}$")


class NotifyConfigError(RuntimeError):
    """The notify file cannot be used; the message names the field (never a secret's value)."""


class ConfigModel(BaseModel):
    """A part of the notify file: camelCase keys, nothing unknown, frozen (a channel's section is one too)."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class SecretFromEnv(ConfigModel):
    """``{"env": "NAME"}``: the secret is the value of the environment variable ``NAME``."""

    env: str = Field(min_length=1)


def secret(value: Any, info: ValidationInfo) -> Any:
    """A secret written inline or as ``{"env": NAME}``, read from the environment given to the parser (a
    ``mode="before"`` field validator of a channel's section: ``field_validator("token", mode="before")(secret)``)."""
    if isinstance(value, Mapping):
        ref = SecretFromEnv.model_validate(value)
        environ: Mapping[str, str] = (info.context or {}).get("environ", os.environ)
        found = environ.get(ref.env)
        if not found:
            raise ValueError(f"the environment variable {ref.env!r} is not set")
        return found
    return value


class PersonSubject(ConfigModel):
    """Who a person is at an identity provider: its ``issuer`` (as the identity file names it) and their
    ``subjectId`` there (a token's ``sub``). A token with that ``iss`` and ``sub`` is this person."""

    issuer: str = Field(min_length=1, max_length=1024, pattern=r"^\S+$")
    subject_id: str = Field(min_length=1, max_length=256)


class Person(ConfigModel):
    """Someone who may be told: their tenant, addresses and roles, and who they are at an identity provider."""

    tenant: str = "default"
    email: str | None = None
    slack: str | None = None
    roles: tuple[str, ...] = ()
    subject: PersonSubject | None = None
    #: Take one e-mail every this long listing everything waiting on them, instead of a mail per interrupt.
    digest_every_ms: int | None = Field(default=None, ge=1000)

    @field_validator("email")
    @classmethod
    def _email(cls, value: str | None) -> str | None:
        if value is not None and not EMAIL.match(value):
            raise ValueError("not an e-mail address")
        return value

    @field_validator("slack")
    @classmethod
    def _slack(cls, value: str | None) -> str | None:
        if value is not None and not SLACK_ID.match(value):
            raise ValueError("not a Slack user id (such as U0ALICE)")
        return value


class Channels(ConfigModel):
    """The channels notices may go out on: ``channels.<name>``, a section per channel type
    (:mod:`openwop_bridge.notify.channel_types`). The model a file is read with has a field for each channel
    the file names (:func:`parse_notify_config`); reading ``config.channels.<name>`` gives its section."""

    #: The channel types of this model's fields, by name.
    types: ClassVar[dict[str, ChannelType]] = {}

    if TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any: ...

    def configured(self) -> dict[str, Any]:
        """The sections given (empty ones left out), by channel name."""
        found = {name: getattr(self, name, None) for name in self.types}
        return {name: section for name, section in found.items() if section}

    def get(self, name: str) -> Any:
        """The section of channel ``name``, or None when it is not configured."""
        return self.configured().get(name)

    def by_prefix(self, prefix: str) -> tuple[ChannelType, Any] | None:
        """The configured channel whose shared addresses route targets name ``<prefix>:ADDRESS``, and its section."""
        for name, section in self.configured().items():
            if self.types[name].prefix == prefix:
                return self.types[name], section
        return None


class RouteMatch(ConfigModel):
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


class Route(ConfigModel):
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


class NotifyConfig(ConfigModel):
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
        named: dict[tuple[str, str], str] = {}
        for pid, person in self.people.items():
            if person.subject is not None:
                who = (person.subject.issuer, person.subject.subject_id)
                if who in named:
                    out.append(f"people.{pid}.subject: {named[who]!r} already names this identity")
                named.setdefault(who, pid)
            if person.email and self.channels.get("email") is None:
                out.append(f"people.{pid}.email: no channels.email is configured to send it")
            if person.slack and self.channels.get("slack") is None:
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
        prefix, sep, rest = target.partition(":")
        if not sep:
            if any(c.isspace() for c in target):
                return _not_a_target(target)
            return None if target in self.people else f"no person {target!r} in people"
        if not rest:
            return _not_a_target(target)
        if prefix == "role":
            return None  # role:NAME may name a role nobody holds yet
        found = self.channels.by_prefix(prefix)
        if found is None:
            known = channel_type(prefix) if prefix in channel_names() else None
            return f"no channels.{known.name} is configured" if known is not None else _not_a_target(target)
        kind, section = found
        return kind.check_address(section, rest) if kind.check_address is not None else None

    def link_base(self, public_url: str | None) -> str:
        """The base of links in notices: ``publicBaseUrl``, else the host's ``--public-url``."""
        base = self.public_base_url or (public_url.rstrip("/") if public_url else None)
        if not base:
            raise NotifyConfigError("publicBaseUrl: links in notices need it (or --public-url)")
        return base


def _not_a_target(target: str) -> str:
    shared = ", ".join(f"{name}:ADDRESS" for name in channel_names())
    return f"{target!r} is not a person, role:NAME or a channel's shared address ({shared})"


def _model(names: frozenset[str]) -> type[NotifyConfig]:
    """The model of a notify file whose ``channels`` names ``names``: a field for each registered channel among
    them (an unknown name stays unknown: refused as an extra input)."""
    types = tuple((name, kind) for name in sorted(names) if (kind := channel_type(name)) is not None)
    return _model_of(types)


@lru_cache(maxsize=32)
def _model_of(types: tuple[tuple[str, ChannelType], ...]) -> type[NotifyConfig]:
    fields: dict[str, Any] = {name: (kind.config | None, Field(default=None, alias=name)) for name, kind in types}
    channels = create_model("Channels", __base__=Channels, **fields)
    channels.types = dict(types)
    model: type[NotifyConfig] = create_model(
        "NotifyConfig", __base__=NotifyConfig, channels=(channels, Field(default_factory=channels))
    )
    return model


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
        named = data.get("channels") if isinstance(data, Mapping) else None
        model = _model(frozenset(str(k) for k in named) if isinstance(named, Mapping) else frozenset())
        return model.model_validate(data, context={"environ": os.environ if environ is None else environ})
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
