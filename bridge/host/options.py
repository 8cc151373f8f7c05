"""The ``serve`` command's options: every flag, its ``OPENWOP_BRIDGE_*`` environment variable, and its check."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from openwop_bridge.core.conversation_limits import ConversationLimits
from openwop_bridge.core.quota import RunRate
from openwop_bridge.host.arguments import ENV_VARIABLE, number, switch_default, whole
from openwop_bridge.host.http.budget import DEFAULT_BYTES as DEFAULT_PENDING_BYTES
from openwop_bridge.host.http.limits import HeaderLimits
from openwop_bridge.host.http.streams import StreamLimits

#: The attribute of an argparse action naming its variable when the flag does not spell it
#: (``--api-key`` is ``OPENWOP_BRIDGE_API_KEYS``), and the separator of a repeatable flag's values.
ENV_NAME = "openwop_env"
ENV_SEPARATOR = "openwop_env_separator"
ENV_PREFIX = "OPENWOP_BRIDGE_"


def env(name: str, default: str | None = None) -> str | None:
    """The value of the environment variable ``OPENWOP_BRIDGE_<name>``, or ``default``."""
    return os.environ.get(f"OPENWOP_BRIDGE_{name}", default)


def _lease_ms(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of milliseconds") from None
    if value < 100:
        raise argparse.ArgumentTypeError("must be at least 100 milliseconds")
    return value


def _idempotency_hours(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of hours") from None
    if not 24 <= value <= 24 * 90:
        raise argparse.ArgumentTypeError("must be between 24 (the OpenWOP minimum) and 2160 hours")
    return value


def _positive(kind: type[int] | type[float]) -> Callable[[str], float]:
    """A converter of a whole number (``int``) or a finite number (``float``) greater than 0."""
    if kind is int:
        return whole("", 1)
    return number("seconds", 0, above_low=True)


def _env_list(name: str, sep: str) -> list[str]:
    raw = env(name)
    return [p for p in raw.split(sep) if p.strip()] if raw else []


def _switch(serve: argparse.ArgumentParser, flag: str, help: str) -> None:
    """A yes/no flag (``--no-ui``, ``--separation-of-duties``), also set by ``OPENWOP_BRIDGE_<FLAG>=1``."""
    default = switch_default(ENV_PREFIX + flag[2:].upper().replace("-", "_"))
    serve.add_argument(flag, action="store_true", default=default, help=help)


def _repeatable(serve: argparse.ArgumentParser, flag: str, name: str, sep: str, *, metavar: str, help: str) -> None:
    """A flag given once per value, its defaults from ``OPENWOP_BRIDGE_<name>`` split at ``sep``."""
    action = serve.add_argument(flag, action="append", default=_env_list(name, sep), metavar=metavar, help=help)
    setattr(action, ENV_NAME, name)
    setattr(action, ENV_SEPARATOR, sep)


def _add_source_arguments(serve: argparse.ArgumentParser) -> None:
    """``serve``: where to listen, the database, and the workflows to load."""
    serve.add_argument("--host", default=env("HOST", "127.0.0.1"), help="interface to bind (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=whole("", 0, 65535), default=env("PORT", "8000"), help="port, 0 to 65535 (default 8000)"
    )
    serve.add_argument(
        "--db",
        default=env("DB", "./openwop-bridge.db"),
        help="SQLite file (default ./openwop-bridge.db) or postgresql:// URL",
    )
    _repeatable(
        serve,
        "--workflows",
        "WORKFLOWS",
        os.pathsep,
        metavar="DIR",
        help="load every *.json workflow in DIR (repeatable)",
    )
    _switch(serve, "--no-demo", "do not load the bundled demo workflows")
    _repeatable(
        serve,
        "--graph",
        "GRAPHS",
        ";",
        metavar="ID=module:attr",
        help="serve a compiled LangGraph graph as workflow ID (repeatable)",
    )


def _add_access_arguments(serve: argparse.ArgumentParser) -> None:
    """``serve``: API keys, link signing secrets, and the names the host answers to."""
    _repeatable(
        serve,
        "--api-key",
        "API_KEYS",
        ";",
        metavar="[PRINCIPAL=]KEY[:scopes][@tenant][+roles]",
        help="accept this API key (repeatable); without any, a dev key with every scope is printed",
    )
    serve.add_argument(
        "--keys-file",
        default=env("KEYS_FILE"),
        metavar="FILE",
        help="JSON file of API keys: a list (or {\"keys\": [...]}) of objects, each with 'key' (the secret, "
        "at least 8 characters) and optionally 'principal' (default: derived from the key), 'scopes' (a list; "
        "default every scope), 'tenant' (default 'default') and 'roles' (a list); like --api-key, it replaces "
        "the dev key",
    )
    _repeatable(
        serve,
        "--token-secret",
        "TOKEN_SECRETS",
        ";",
        metavar="[KID:]SECRET",
        help="signing secret for interrupt links (repeatable: the first signs, all verify); "
        "default: generated and kept in the database",
    )
    serve.add_argument("--public-url", default=env("PUBLIC_URL"), help="base URL used in links (default: request URL)")
    _repeatable(
        serve,
        "--allowed-host",
        "ALLOWED_HOSTS",
        ",",
        metavar="NAME",
        help="also answer requests for this host name (repeatable; '*.example.com' for subdomains, '*' for any); "
        "always: localhost, 127.0.0.1, ::1, the --host address and the --public-url host",
    )


def _add_feature_arguments(serve: argparse.ArgumentParser) -> None:
    """``serve``: the primitives and surfaces switched on, and the escalation threshold."""
    _switch(serve, "--no-conversation", "switch off the conversation primitive (workflows using it are refused)")
    _switch(serve, "--no-agui", "do not serve workflows as AG-UI agents")
    _switch(
        serve,
        "--no-ui",
        "do not serve the operator inbox (/ui/), the signed-link page, the landing page or the API page (/docs/)",
    )
    _switch(
        serve,
        "--separation-of-duties",
        'whoever requested a run may not decide its approvals, unless a gate says "separationOfDuties": false',
    )
    serve.add_argument(
        "--escalation-threshold",
        type=number("confidence", 0, 1),
        default=env("ESCALATION_THRESHOLD", "0.7"),
        metavar="CONFIDENCE",
        help="confidence (0 to 1) below which ctx.decide(...) and core.lowConfidence nodes wait for a person; "
        "a call's own threshold or the run's configurable 'escalationThreshold' wins",
    )


def _add_limit_arguments(serve: argparse.ArgumentParser) -> None:
    """``serve``: leases, idempotency retention, request header and stream limits, and logging."""
    serve.add_argument(
        "--lease-ms",
        type=_lease_ms,
        default=env("LEASE_MS", "30000"),
        help="how long a run stays with an instance that stopped renewing it (default 30000)",
    )
    serve.add_argument(
        "--idempotency-hours",
        type=_idempotency_hours,
        default=env("IDEMPOTENCY_HOURS", "24"),
        help="how long an Idempotency-Key and its response are kept (default 24)",
    )
    limits = HeaderLimits()
    serve.add_argument(
        "--header-timeout",
        type=_positive(float),
        default=env("HEADER_TIMEOUT", str(limits.timeout_s)),
        metavar="SECONDS",
        help=f"close connections whose request header is not complete in this time (default {limits.timeout_s})",
    )
    serve.add_argument(
        "--max-header-bytes",
        type=_positive(int),
        default=env("MAX_HEADER_BYTES", str(limits.max_bytes)),
        help=f"refuse request headers larger than this with 431 (default {limits.max_bytes})",
    )
    serve.add_argument(
        "--max-header-fields",
        type=_positive(int),
        default=env("MAX_HEADER_FIELDS", str(limits.max_fields)),
        help=f"refuse request headers with more fields than this with 431 (default {limits.max_fields})",
    )
    streams = StreamLimits()
    serve.add_argument(
        "--max-streams-per-key",
        type=_positive(int),
        default=env("MAX_STREAMS_PER_KEY", str(streams.per_key)),
        help=f"event streams one API key may hold open at once; more are 429 (default {streams.per_key})",
    )
    serve.add_argument(
        "--max-streams-per-run",
        type=_positive(int),
        default=env("MAX_STREAMS_PER_RUN", str(streams.per_run)),
        help=f"event streams one run may have open at once; more are 429 (default {streams.per_run})",
    )
    serve.add_argument(
        "--stream-buffer-bytes",
        type=_positive(int),
        default=env("STREAM_BUFFER_BYTES", str(streams.buffer_bytes)),
        metavar="BYTES",
        help=f"the most a stream writes ahead of what its client has read (default {streams.buffer_bytes})",
    )
    serve.add_argument(
        "--max-pending-response-bytes",
        type=_positive(int),
        default=env("MAX_PENDING_RESPONSE_BYTES", str(DEFAULT_PENDING_BYTES)),
        metavar="BYTES",
        help="the most that answers of 64 KiB or more may hold while their clients take them; one more is 429 "
        f"(default {DEFAULT_PENDING_BYTES})",
    )
    rate = RunRate()
    serve.add_argument(
        "--max-runs-per-minute",
        type=_positive(int),
        default=env("MAX_RUNS_PER_MINUTE", str(rate.per_minute)),
        help=f"runs one API key may create a minute, in bursts of a quarter of that; more are 429 "
        f"(default {rate.per_minute})",
    )
    _add_conversation_limits(serve)
    serve.add_argument(
        "--log-level",
        choices=["critical", "error", "warning", "info", "debug"],
        type=str.lower,
        default=env("LOG_LEVEL", "info"),
        help="the least severe log records written",
    )
    serve.add_argument(
        "--log-format",
        choices=["text", "json"],
        default=env("LOG_FORMAT", "text"),
        help="text lines, or one JSON object per line",
    )


def env_name(action: argparse.Action) -> str:
    """The ``OPENWOP_BRIDGE_*`` variable that sets ``action``'s default: its own, or its flag spelled
    in capitals (``--lease-ms`` is ``OPENWOP_BRIDGE_LEASE_MS``)."""
    name = getattr(action, ENV_NAME, None) or action.option_strings[-1].lstrip("-").upper().replace("-", "_")
    return ENV_PREFIX + name


def explain(parser: argparse.ArgumentParser) -> None:
    """End every option's help with its default (unless the help says it) and its variable."""
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        notes = []
        text = action.help or ""
        if "default" not in text:
            notes.append(_default_text(action))
        sep = getattr(action, ENV_SEPARATOR, None)
        notes.append(f"env {env_name(action)}" + (f", values separated by {sep!r}" if sep else ""))
        action.help = (text + " " if text else "") + f"({'; '.join(n for n in notes if n)})"
        setattr(action, ENV_VARIABLE, env_name(action))


def _default_text(action: argparse.Action) -> str:
    if isinstance(action, argparse._StoreTrueAction):
        return "off unless given"
    if action.default in (None, [], ""):
        return "default: none"
    if isinstance(action.default, list):
        return "default: " + ", ".join(str(v) for v in action.default)
    return f"default: {action.default}"


def _add_conversation_limits(serve: argparse.ArgumentParser) -> None:
    """``serve``: the bounds on what a conversation's answers may store (413 beyond)."""
    bounds = ConversationLimits()
    for flag, name, default, what in (
        ("--conversation-message-bytes", "CONVERSATION_MESSAGE_BYTES", bounds.message_bytes, "one answer"),
        ("--conversation-bytes", "CONVERSATION_BYTES", bounds.conversation_bytes, "the answers of one conversation"),
    ):
        serve.add_argument(
            flag,
            type=_positive(int),
            default=env(name, str(default)),
            metavar="BYTES",
            help=f"refuse with 413 what would make {what} larger than this (default {default})",
        )
    serve.add_argument(
        "--conversation-turns",
        type=_positive(int),
        default=env("CONVERSATION_TURNS", str(bounds.turns)),
        metavar="N",
        help=f"refuse with 413 an answer to a conversation's turn after the N-th; a close still ends it "
        f"(default {bounds.turns})",
    )
    serve.add_argument(
        "--snapshot-messages",
        type=_positive(int),
        default=env("SNAPSHOT_MESSAGES", "50"),
        metavar="N",
        help="a run snapshot shows the last N entries of a message channel, with a count and a link to the rest "
        "(default 50)",
    )


def conversation_limits(args: argparse.Namespace) -> ConversationLimits:
    """The conversation bounds ``serve``'s options set."""
    return ConversationLimits(
        message_bytes=int(args.conversation_message_bytes),
        conversation_bytes=int(args.conversation_bytes),
        turns=int(args.conversation_turns),
    )


def _add_notify_file_argument(serve: argparse.ArgumentParser) -> None:
    """``serve``: the notify file (people, channels and routes), checked before anything starts."""
    serve.add_argument(
        "--notify-config",
        default=env("NOTIFY_CONFIG"),
        metavar="FILE",
        help="JSON file of people, channels (e-mail, Slack, Teams) and routes: who is told about a waiting "
        "interrupt, and how",
    )


def _add_identity_file_argument(serve: argparse.ArgumentParser) -> None:
    """``serve``: the identity file (the providers whose tokens are accepted), checked before anything starts."""
    serve.add_argument(
        "--identity-config",
        default=env("IDENTITY_CONFIG"),
        metavar="FILE",
        help="JSON file of identity providers (OpenID Connect, OAuth 2): their signed tokens are accepted as "
        "'Authorization: Bearer <JWT>' beside API keys, and replace the dev key",
    )


def _bounded(low: int, high: int, unit: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {unit}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high} {unit}")
        return value

    return parse


def _add_notify_arguments(serve: argparse.ArgumentParser) -> None:
    """``serve``: retries of notices (e-mail, Slack, Teams) and of v2 webhook deliveries, and webhook egress."""
    serve.add_argument(
        "--notify-retry-base-ms",
        type=_bounded(1, 3_600_000, "milliseconds"),
        default=env("NOTIFY_RETRY_BASE_MS", "2000"),
        help="first wait before a failed e-mail, Slack or Teams notice is tried again, doubled each time "
        "(default 2000)",
    )
    serve.add_argument(
        "--notify-max-attempts",
        type=_bounded(1, 100, "attempts"),
        default=env("NOTIFY_MAX_ATTEMPTS", "8"),
        help="attempts of an e-mail, Slack or Teams notice before it is a dead letter (default 8)",
    )
    serve.add_argument(
        "--webhook-retry-base-ms",
        type=_bounded(1, 3_600_000, "milliseconds"),
        default=env("WEBHOOK_RETRY_BASE_MS", "1000"),
        help="first wait before a failed webhook delivery is tried again, doubled each time (default 1000)",
    )
    serve.add_argument(
        "--webhook-max-attempts",
        type=_bounded(1, 100, "attempts"),
        default=env("WEBHOOK_MAX_ATTEMPTS", "8"),
        help="attempts of a webhook delivery before it is a dead letter (default 8)",
    )
    serve.add_argument(
        "--webhook-timeout-ms",
        type=_bounded(100, 120_000, "milliseconds"),
        default=env("WEBHOOK_TIMEOUT_MS", "10000"),
        help="how long one webhook delivery attempt may take (default 10000)",
    )
    serve.add_argument(
        "--webhook-rotation-overlap-seconds",
        type=_bounded(60, 604_800, "seconds"),
        default=env("WEBHOOK_ROTATION_OVERLAP_SECONDS", "86400"),
        help="how long the previous secret still signs after a rotation (default 86400)",
    )
    serve.add_argument(
        "--webhook-allow-loopback",
        action="store_true",
        default=switch_default(ENV_PREFIX + "WEBHOOK_ALLOW_LOOPBACK"),
        help="for local development and tests only: admit webhooks to http(s)://127.0.0.1 and [::1] "
        "(on without it while no API key is configured: the development server)",
    )


def add_serve_arguments(serve: argparse.ArgumentParser) -> None:
    """Every option of ``serve``, each help naming its default and ``OPENWOP_BRIDGE_*`` variable."""
    _add_source_arguments(serve)
    _add_access_arguments(serve)
    _add_feature_arguments(serve)
    _add_notify_file_argument(serve)
    _add_identity_file_argument(serve)
    _add_limit_arguments(serve)
    _add_notify_arguments(serve)
    explain(serve)
