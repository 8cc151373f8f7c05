"""Real receivers on loopback for the notify tests: an SMTP server, a stand-in for Slack's Web API, a Teams webhook."""

from __future__ import annotations

import contextlib
import email
import email.policy
import hashlib
import hmac
import json
import ssl
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any
from urllib.parse import urlencode

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.server import free_port, uvicorn_server


@dataclass
class SmtpRecorder:
    """An ``aiosmtpd`` handler that keeps every mail, and answers RCPT with a set reply for some addresses."""

    rcpt_replies: dict[str, str] = field(default_factory=dict)
    mails: list[tuple[list[str], EmailMessage]] = field(default_factory=list)
    #: Each accepted mail's bytes as the server took them (the DATA lines, CRLF-separated).
    raw: list[bytes] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, rcpt_options: list[str]
    ) -> str:
        reply = self.rcpt_replies.get(address)
        if reply is not None:
            self.refused.append(address)
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = envelope.original_content or b""
        message = email.message_from_bytes(raw, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        self.raw.append(raw)
        self.mails.append((list(envelope.rcpt_tos), message))
        return "250 Message accepted for delivery"


@contextlib.contextmanager
def smtp_server(
    *, implicit_tls: ssl.SSLContext | None = None, starttls: ssl.SSLContext | None = None
) -> Iterator[tuple[SmtpRecorder, int]]:
    """A real SMTP server on 127.0.0.1 (in a thread), its recorder and port; with ``implicit_tls`` it speaks
    TLS from the first byte, with ``starttls`` it requires STARTTLS before a mail."""
    recorder = SmtpRecorder()
    port = free_port()
    kwargs: dict[str, Any] = {}
    if starttls is not None:
        kwargs = {"tls_context": starttls, "require_starttls": True}
    controller = Controller(recorder, hostname="127.0.0.1", port=port, ssl_context=implicit_tls, **kwargs)
    controller.start()
    try:
        yield recorder, port
    finally:
        controller.stop()


def mail_parts(message: EmailMessage) -> tuple[str, str]:
    """The plain-text and HTML parts of a mail."""
    text = message.get_body(preferencelist=("plain",))
    html = message.get_body(preferencelist=("html",))
    assert text is not None and html is not None
    return str(text.get_content()), str(html.get_content())


@dataclass
class SlackStandIn:
    """Answers ``chat.postMessage`` and ``chat.update`` as Slack does, and records each call."""

    calls: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)
    unknown_channels: set[str] = field(default_factory=set)
    _ts: int = 0

    async def api(self, request: Request) -> Response:
        method = request.path_params["method"]
        if request.headers.get("content-type", "").startswith("application/json"):
            body = await request.json()
        else:
            body = dict((await request.form()).items())
        self.calls.append((method, body, request.headers.get("authorization", "")))
        channel = str(body.get("channel", ""))
        if channel in self.unknown_channels:
            return JSONResponse({"ok": False, "error": "channel_not_found"})
        if method == "chat.postMessage":
            self._ts += 1
            # A post to a user id lands in the bot's DM with them: Slack answers with the DM's channel id.
            posted = "D" + channel[1:] if channel.startswith("U") else channel
            return JSONResponse({"ok": True, "channel": posted, "ts": f"1700000000.{self._ts:06d}", "message": body})
        if method == "chat.update":
            return JSONResponse({"ok": True, "channel": channel, "ts": body.get("ts"), "text": body.get("text")})
        return JSONResponse({"ok": False, "error": "unknown_method"}, status_code=404)

    def of(self, method: str) -> list[dict[str, Any]]:
        """The bodies of the calls to one method, in order."""
        return [body for m, body, _ in self.calls if m == method]


@contextlib.asynccontextmanager
async def slack_api() -> AsyncIterator[tuple[SlackStandIn, str]]:
    """The stand-in on uvicorn over loopback, and its ``apiBase``."""
    stand_in = SlackStandIn()
    app = Starlette(routes=[Route("/api/{method}", stand_in.api, methods=["POST"])])
    async with uvicorn_server(app) as url:
        yield stand_in, f"{url}/api/"


def slack_signed(secret: str, payload: dict[str, Any], *, at: int | None = None) -> tuple[bytes, dict[str, str]]:
    """An interaction request body and headers, signed as Slack signs them."""
    body = urlencode({"payload": json.dumps(payload)}).encode()
    ts = str(int(time.time()) if at is None else at)
    mac = hmac.new(secret.encode(), b"v0:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": f"v0={mac}",
    }
    return body, headers


def block_action(user: str, action_id: str, value: str, *, channel: str = "D0ALICE", ts: str = "1.1") -> dict[str, Any]:
    """A ``block_actions`` payload as Slack posts it for a button click."""
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower()},
        "api_app_id": "A0APP",
        "container": {"type": "message", "channel_id": channel, "message_ts": ts},
        "channel": {"id": channel},
        "message": {"ts": ts, "text": "request", "blocks": []},
        "response_url": "http://127.0.0.1:9/never-called",
        "actions": [
            {"type": "button", "action_id": action_id, "block_id": f"openwop:{value}", "value": value, "action_ts": "1"}
        ],
    }


@dataclass
class WebhookReceiver:
    """A Teams Workflows webhook stand-in: keeps every JSON body; answers ``status``."""

    status: int = 202
    bodies: list[Any] = field(default_factory=list)

    async def receive(self, request: Request) -> Response:
        self.bodies.append(await request.json())
        return Response(status_code=self.status)


@contextlib.asynccontextmanager
async def webhook_receiver() -> AsyncIterator[tuple[WebhookReceiver, str]]:
    """The receiver on uvicorn over loopback, and its URL."""
    receiver = WebhookReceiver()
    app = Starlette(routes=[Route("/workflows/ops", receiver.receive, methods=["POST"])])
    async with uvicorn_server(app) as url:
        yield receiver, f"{url}/workflows/ops"
