"""Limits on request headers, enforced where uvicorn reads them.

uvicorn's httptools protocol waits for a request header as long as a client
cares to send it, and httptools buffers a header line of any length. Left so,
clients that trickle or never finish a header hold a connection (and a file
descriptor) each, forever, and one unfinished header line can grow memory
without bound. :func:`http_protocol` returns uvicorn's protocol with three
limits on the header section (request line and header fields):

- it must arrive within ``timeout_s`` of the connection being ready for it
  (opened, or idle after the previous response), else ``408`` and close;
- it may be at most ``max_bytes`` long, else ``431`` and close: bytes are
  counted as they arrive, so an unfinished header never holds more than that;
- it may hold at most ``max_fields`` fields, else ``431`` and close.

Only header bytes count. A request's body is not a header: an answer sent before the body has
arrived whole (a ``413`` for a body over the limit, a refusal that reads no body) closes the
connection (``Connection: close``), so what is left of that body is never read as the next
request's header.

Refusals are OpenWOP error envelopes, as every other error of the host.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from openwop_bridge.host.http.headers import with_always
from openwop_bridge.host.http.responses import envelope

log = logging.getLogger("openwop_bridge.host.http")


@dataclass(frozen=True, slots=True)
class HeaderLimits:
    """How long, how large and how many fields a request header may be."""

    timeout_s: float = 10.0
    max_bytes: int = 32 * 1024
    max_fields: int = 100


class _TooManyFields(Exception):
    """Raised from the parser callback to stop parsing a header with too many fields."""


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with :class:`HeaderLimits` (set on a subclass by :func:`http_protocol`)."""

    limits: ClassVar[HeaderLimits] = HeaderLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self._reading_header = True
        self._header_bytes = 0
        self._header_fields = 0
        self._refusal: tuple[int, str] | None = None
        #: The request whose body is arriving, and whether its connection may be kept alive once it has.
        self._unread: tuple[RequestResponseCycle, bool] | None = None

    # --- when a header is awaited -----------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_header()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.timeout_keep_alive_task is not None:  # idle, waiting for the next request
            self._await_header()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_header = True
        self._header_fields = 0

    def on_headers_complete(self) -> None:
        self._reading_header = False
        self._header_bytes = 0
        self._stop_timer()
        previous = self.cycle
        super().on_headers_complete()
        if self.cycle is not None and self.cycle is not previous:
            # Until the body has arrived whole, an answer closes the connection (uvicorn sends
            # ``Connection: close`` and closes once the answer is out); a body-less request's message
            # completes in this same parse, before its app runs.
            self._unread = (self.cycle, self.cycle.keep_alive)
            self.cycle.keep_alive = False

    def on_message_complete(self) -> None:
        if self._unread is not None:
            cycle, keep_alive = self._unread
            self._unread = None
            if not cycle.response_started:
                cycle.keep_alive = keep_alive
        super().on_message_complete()

    def _await_header(self) -> None:
        self._reading_header = True
        self._header_bytes = 0
        self._header_fields = 0
        self._stop_timer()
        self._header_timer = self.loop.call_later(self.limits.timeout_s, self._header_timed_out)

    def _stop_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        if not self._reading_header or self.transport.is_closing():
            return
        if self._header_bytes:
            log.info(
                "closing a connection from %s: no complete request header in %ss", self._peer(), self.limits.timeout_s
            )
            self._refuse(408, "request_timeout", f"the request header did not arrive within {self.limits.timeout_s}s")
        else:
            self.transport.close()

    # --- how large a header may be ------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return  # answered and closing: what still arrives is nobody's request
        while data:
            if not self._reading_header:
                super().data_received(data)
                return
            room = self.limits.max_bytes - self._header_bytes
            if room <= 0:
                log.info("refusing a request from %s: header larger than %d bytes", self._peer(), self.limits.max_bytes)
                self._refuse(
                    431, "header_too_large", f"the request header is larger than {self.limits.max_bytes} bytes"
                )
                return
            part, data = data[:room], data[room:]
            self._header_bytes += len(part)
            super().data_received(part)
            if self.transport.is_closing():
                return

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_fields += 1
        if self._header_fields > self.limits.max_fields:
            self._refusal = (431, f"the request header has more than {self.limits.max_fields} fields")
            raise _TooManyFields
        super().on_header(name, value)

    def send_400_response(self, msg: str) -> None:
        """The parser stopped: on a field too many, refuse with 431; else 400 (an envelope; uvicorn sends text)."""
        if self._refusal is not None:
            status, message = self._refusal
            log.info("refusing a request from %s: %s", self._peer(), message)
            self._refuse(status, "header_too_large", message)
        else:
            self._refuse(400, "validation_error", msg)

    # --- refusing -----------------------------------------------------------------------

    def _refuse(self, status: int, code: str, message: str) -> None:
        body = orjson.dumps(envelope(code, message))
        reason = {400: b"Bad Request", 408: b"Request Timeout", 431: b"Request Header Fields Too Large"}[status]
        head = [
            b"HTTP/1.1 %d %s\r\n" % (status, reason),
            *(name + b": " + value + b"\r\n" for name, value in with_always(list(self.server_state.default_headers))),
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
        ]
        self._stop_timer()
        self.transport.write(b"".join(head) + body)
        self.transport.close()

    def _peer(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "?"


def http_protocol(limits: HeaderLimits) -> type[LimitedHttpToolsProtocol]:
    """The protocol class to give ``uvicorn.Config(http=...)`` for these limits."""
    return type("LimitedHttpToolsProtocol", (LimitedHttpToolsProtocol,), {"limits": limits})
