"""The local receivers ``notify_drain`` delivers to, on loopback in the bench's own event loop.

- :class:`HookReceiver`: a keep-alive HTTP/1.1 server that answers every ``POST`` 204.
- :class:`MailReceiver`: a real SMTP server (``aiosmtpd``) that accepts every mail.

Each counts what it got by the id the bridge gives one notice on every attempt (a webhook's
``eventId``, a mail's ``Message-ID``), so a lost notice and a doubled one both show.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser

import orjson
from aiosmtpd.smtp import SMTP, Envelope, Session


@dataclass
class Tally:
    """The ids received, how many times each, and an event set once ``expected`` arrived."""

    expected: int = 0
    seen: Counter[str] = field(default_factory=Counter)
    total: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)
    #: ``time.perf_counter()`` when the last expected one arrived.
    finished_at: float | None = None

    def add(self, notice_id: str, now: float) -> None:
        """Count one arrival."""
        self.seen[notice_id] += 1
        self.total += 1
        if self.total >= self.expected and not self.done.is_set():
            self.finished_at = now
            self.done.set()

    def problem(self) -> str | None:
        """What went wrong (lost or doubled notices), or None when each expected one came exactly once."""
        doubled = sum(1 for c in self.seen.values() if c > 1)
        if len(self.seen) == self.expected and not doubled:
            return None
        return f"{self.expected} owed, {len(self.seen)} delivered, {doubled} more than once"


@dataclass
class HookReceiver:
    """A keep-alive HTTP/1.1 server that answers every POST 204 and counts the event ids it got."""

    tally: Tally
    port: int = 0

    async def serve(self) -> asyncio.Server:
        """Listen on 127.0.0.1, on a free port (then in :attr:`port`)."""
        server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        return server

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length)
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
                await writer.drain()
                self.tally.add(orjson.loads(body)["event"]["eventId"], time.perf_counter())
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@dataclass
class MailReceiver:
    """A real SMTP server (``aiosmtpd``) that accepts every mail and counts the ``Message-ID`` s it got."""

    tally: Tally
    port: int = 0
    #: The recipients of every mail, in arrival order.
    recipients: list[str] = field(default_factory=list)

    async def serve(self) -> asyncio.Server:
        """Listen on 127.0.0.1, on a free port (then in :attr:`port`)."""
        loop = asyncio.get_running_loop()
        # A hostname given: without one aiosmtpd asks the resolver for this machine's name.
        server = await loop.create_server(lambda: SMTP(self, hostname="openwop_bridge.bench.invalid"), "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        return server

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Keep the mail's ``Message-ID`` and recipients; accept it."""
        headers = BytesHeaderParser().parsebytes(envelope.original_content or b"")
        self.recipients.extend(str(r) for r in envelope.rcpt_tos)
        self.tally.add(str(headers.get("Message-ID", "")), time.perf_counter())
        return "250 Message accepted for delivery"
