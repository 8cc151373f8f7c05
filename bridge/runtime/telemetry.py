"""OpenTelemetry spans and structured logs.

Spans come from ``opentelemetry-api``. Until an SDK tracer provider is set,
nothing is built at all (even a no-op span costs microseconds on the hot path).
A wait for a person can outlive the process, so an interrupt is two short
spans — its request and its resolution — joined by the
``openwop.interrupt_id`` attribute rather than one span left open. Each attempt to
deliver a notice is a span of its own (``openwop.notification.deliver``): its
channel, attempt and outcome, never an address, a body or a secret.
"""

from __future__ import annotations

import json
import logging
import os
import re
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from opentelemetry import trace

if TYPE_CHECKING:
    from openwop_bridge.core.notices import Notice
    from openwop_bridge.core.records import InterruptRecord
    from openwop_bridge.runtime.context import NodeContext

tracer = trace.get_tracer("openwop-bridge")
_NO_SDK = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
#: What a span helper returns while no SDK collects spans (``None`` as its span; reusable).
_NO_SPAN: AbstractContextManager[None] = nullcontext()


#: Whether the environment names a tracer provider for OpenTelemetry to load (read once, at import).
_PROVIDER_FROM_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ


def tracing() -> bool:
    """Whether an OpenTelemetry SDK is collecting spans (checked on every call: it may be set late).

    Until a provider is set, ``get_tracer_provider`` looks the environment up on every call; a cycle asks
    several times, so while none is set and the environment named none at import, one attribute read answers.
    """
    # OpenTelemetry's own slot for the provider set; without it (another version) the full check runs.
    if getattr(trace, "_TRACER_PROVIDER", trace) is None and not _PROVIDER_FROM_ENV:
        return False
    return not isinstance(trace.get_tracer_provider(), _NO_SDK)


def run_span(run_id: str, workflow_id: str) -> AbstractContextManager[Any]:
    """One stretch of a run's execution on this instance."""
    if not tracing():
        return _NO_SPAN
    return tracer.start_as_current_span(
        "openwop.run", attributes={"openwop.run_id": run_id, "openwop.workflow_id": workflow_id}
    )


def node_span(ctx: NodeContext) -> AbstractContextManager[Any]:
    """One activation of a node."""
    if not tracing():
        return _NO_SPAN
    return tracer.start_as_current_span(
        "openwop.node",
        attributes={
            "openwop.run_id": ctx.run_id,
            "openwop.node_id": ctx.node_id,
            "openwop.node_type": ctx.node.type_id,
            "openwop.node_visit": ctx.visit,
        },
    )


def interrupt_attributes(record: InterruptRecord) -> dict[str, Any]:
    """The OpenWOP interrupt attributes for a span."""
    return {
        "openwop.interrupt_kind": record.kind,
        "openwop.interrupt_id": record.interrupt_id,
        "openwop.interrupt_count": record.ordinal + 1,
        "openwop.run_id": record.run_id,
        "openwop.node_id": record.node_id,
    }


def interrupt_requested(record: InterruptRecord) -> None:
    """Record that an interrupt was raised."""
    if not tracing():
        return
    with tracer.start_as_current_span("openwop.interrupt.request", attributes=interrupt_attributes(record)):
        pass


def interrupt_resolving(action: str, **attributes: Any) -> AbstractContextManager[Any]:
    """Around a resolution attempt (resolve, vote, timeout, cancel)."""
    if not tracing():
        return _NO_SPAN
    attrs = {"openwop.interrupt_action": action, **{k: v for k, v in attributes.items() if v is not None}}
    return tracer.start_as_current_span("openwop.interrupt.resolve", attributes=attrs)


def notice_span(notice: Notice) -> AbstractContextManager[Any]:
    """One attempt to deliver ``notice``; the caller sets ``openwop.notification.outcome`` on the span (if any)."""
    if not tracing():
        return _NO_SPAN
    attrs: dict[str, Any] = {
        "openwop.notification.channel": notice.channel,
        "openwop.notification.attempt": notice.attempt,
        "openwop.notification.id": notice.notice_id,
        "openwop.run_id": notice.run_id,
    }
    if notice.interrupt_id is not None:
        attrs["openwop.interrupt_id"] = notice.interrupt_id
    return tracer.start_as_current_span("openwop.notification.deliver", attributes=attrs)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and any ``extra`` fields."""

    _SKIP = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in self._SKIP:
                body[key] = value
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str)


#: A URL in a log message: its scheme and host are kept, credentials, path, query and fragment cut.
_URL = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)(?:[^/\s@?#\"'<>]*@)?([^/\s?#\"'<>]+)[^\s\"'<>]*")
#: The loggers of the HTTP client every outbound call goes through (webhooks, Slack, Teams), and Slack's own.
HTTP_CLIENT_LOGGERS = (
    "httpx",
    "httpcore",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "slack_sdk",
)


class RedactUrls(logging.Filter):
    """Cuts every URL in a record down to its scheme and host: webhook paths and queries, Slack webhook paths
    and Teams Workflows signatures (``sig=``) are secrets."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = _URL.sub(r"\1\2", message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


_REDACT = RedactUrls()
for _name in HTTP_CLIENT_LOGGERS:  # whoever configures logging, these never log a path or a query
    logging.getLogger(_name).addFilter(_REDACT)


def configure_logging(level: str = "info", fmt: str = "text") -> None:
    """Set up the root logger for the server: the HTTP client's loggers at ``WARNING`` whatever ``level`` is, and
    every URL any logger writes cut to its scheme and host."""
    handler = logging.StreamHandler()
    handler.addFilter(_REDACT)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in HTTP_CLIENT_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
