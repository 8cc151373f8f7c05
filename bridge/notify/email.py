"""The e-mail channel: one mail per notice over SMTP (``aiosmtplib``), plain text and HTML.

The mail names the workflow, the request's title and what it asks, the deadline, and the
recipient's own link (minted as the mail goes out, :mod:`openwop_bridge.notify.links`). Its
``Message-ID`` is fixed by the interrupt, the recipient and the notice's purpose, so a
retry sends the same id and a mail system can drop the duplicate; a reminder threads
under the first mail (``In-Reply-To``).

A person with ``digestEveryMs`` gets no mail per interrupt but one per period listing every
request still waiting on them, each with its own link (:class:`DigestSource`); while a delegate
stands in for them, the requests the delegation covers go in a mail of their own to the delegate.

A delegate's copy of a person's notice (:mod:`openwop_bridge.notify.delegated`) says so: ``(on behalf
of alice)`` ends its subject, and its body names whose place the link answers in.

SMTP replies decide what happens next: a ``4xx`` (greylisting, a full mailbox, a busy
server) and a connection that fails or times out are retried; a ``5xx`` for the
recipient is permanent and the notice is dead at once.
"""

from __future__ import annotations

import hashlib
import html
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formatdate, parseaddr
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

import aiosmtplib
from pydantic import Field, SecretStr, field_validator, model_validator

from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.notify.channel_types import ChannelType
from openwop_bridge.notify.config import EMAIL, ConfigModel, secret
from openwop_bridge.notify.content import NoticeContent
from openwop_bridge.notify.delegated import DigestCopy
from openwop_bridge.notify.digests import Digests
from openwop_bridge.notify.install import ChannelSetup
from openwop_bridge.notify.links import NoticeLinks
from openwop_bridge.notify.notice import DeliveryOutcome, Notice

__all__ = [
    "CHANNEL",
    "DigestSource",
    "EmailChannel",
    "EmailChannelSender",
    "build_digest",
    "build_message",
    "message_id",
]


class EmailChannel(ConfigModel):
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

    _password = field_validator("password", mode="before")(secret)

    @field_validator("from_")
    @classmethod
    def _from(cls, value: str) -> str:
        if "\n" in value or "\r" in value or not EMAIL.match(parseaddr(value)[1]):
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


def _domain(sender: str) -> str:
    address = parseaddr(sender)[1]
    return address.rpartition("@")[2] or "openwop-bridge.invalid"


def message_id(interrupt_id: str, recipient: str, purpose: str, sender: str) -> str:
    """``<interrupt.recipient-digest.purpose@sender-domain>``: the same for every attempt of one notice."""
    digest = hashlib.sha256(recipient.encode("utf-8")).hexdigest()[:16]
    return f"<{interrupt_id}.{digest}.{purpose}@{_domain(sender)}>"


def _yours(content: NoticeContent) -> str:
    """What the link does, for whom."""
    if not content.link_answers:
        return "This link shows the request; answer it with your own link or key."
    if content.on_behalf_of:
        return (
            f"You stand in for {content.on_behalf_of}: an answer given through this link is recorded in "
            f"{content.on_behalf_of}'s place, with you as the one who answered."
        )
    return "This link is yours: an answer given through it is recorded as yours."


def _text(content: NoticeContent) -> str:
    lines = [content.title, ""]
    if content.on_behalf_of:
        lines = [f"On behalf of {content.on_behalf_of}", "", *lines]
    if content.asked:
        lines += [content.asked, ""]
    lines += [
        f"Workflow: {content.workflow_id}",
        f"Kind:     {content.kind_label}",
        f"Answer by: {content.deadline}",
        "",
        f"{content.call_to_action}:",
        content.link,
        "",
        _yours(content),
    ]
    return "\n".join(lines) + "\n"


def _html(content: NoticeContent) -> str:
    e = html.escape
    asked = f"<p>{e(content.asked)}</p>" if content.asked else ""
    behalf = f"<p><strong>On behalf of {e(content.on_behalf_of)}</strong></p>\n" if content.on_behalf_of else ""
    return f"""<!doctype html>
<html><body style="font-family: sans-serif">
{behalf}<h2>{e(content.title)}</h2>
{asked}
<table>
<tr><th align="left">Workflow</th><td>{e(content.workflow_id)}</td></tr>
<tr><th align="left">Kind</th><td>{e(content.kind_label)}</td></tr>
<tr><th align="left">Answer by</th><td>{e(content.deadline)}</td></tr>
</table>
<p><a href="{e(content.link, quote=True)}">{e(content.call_to_action)}</a></p>
<p>{e(_yours(content))}</p>
</body></html>
"""


#: SMTP's limit on a line, in bytes and without its CRLF (RFC 5321, 4.5.3.1.6); one byte spared for dot-stuffing.
LINE_LIMIT = 997


def _set_text(message: EmailMessage, text: str) -> None:
    """The plain-text part: ``8bit`` while every line fits SMTP's line limit, so a link stays whole on one line for
    anyone reading the raw mail; quoted-printable, whose lines are short, when a line would not (a long paragraph,
    counted in bytes: a Japanese character is three)."""
    fits = all(len(line) <= LINE_LIMIT for line in text.encode("utf-8").splitlines())
    message.set_content(text, cte="8bit" if fits else "quoted-printable")


def build_message(config: EmailChannel, to: str, content: NoticeContent, recipient_key: str) -> EmailMessage:
    """The mail for one notice: a plain-text part, an HTML part, and a stable ``Message-ID``."""
    message = EmailMessage()
    message["From"] = config.from_
    message["To"] = str(Address(addr_spec=to))
    message["Subject"] = content.subject
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = message_id(content.interrupt_id, recipient_key, content.purpose, config.from_)
    if content.purpose != "notice":
        first = message_id(content.interrupt_id, recipient_key, "notice", config.from_)
        message["In-Reply-To"] = first
        message["References"] = first
    message["Auto-Submitted"] = "auto-generated"
    _set_text(message, _text(content))
    message.add_alternative(_html(content), subtype="html")
    return message


def _reply_outcome(code: int, where: str) -> DeliveryOutcome:
    reason = f"smtp_{code}_{where}"
    return DeliveryOutcome.dead(reason) if 500 <= code < 600 else DeliveryOutcome.retry(reason)


class DigestSource(Protocol):
    """What a digest needs of the host: what waits on a person, and the periods already sent."""

    async def waiting_on(self, person: str, tenant: str) -> list[InterruptRecord]:
        """The open interrupts ``person`` is told about by e-mail (at most a page)."""
        ...

    async def claim_period(self, person: str, slot: int, notice_id: str) -> bool:
        """Whether this notice sends the person's digest of period ``slot`` (False: another one does)."""
        ...

    async def schedule_next(self, notice: Notice, run_id: str) -> None:
        """Plan the person's next digest, one period on."""
        ...

    async def copies(self, person: str, tenant: str, address: str, records: list[InterruptRecord]) -> list[DigestCopy]:
        """The mails the digest of ``records`` becomes: the person's, and one per delegate standing in for them."""
        ...


def build_digest(
    config: EmailChannel,
    to: str,
    person: str,
    slot: int,
    contents: list[NoticeContent],
    *,
    delegate: str | None = None,
) -> EmailMessage:
    """One mail listing every request waiting on a person, each with its own link (to ``delegate``, standing in
    for the person, the requests they read in the person's place)."""
    n = len(contents)
    message = EmailMessage()
    message["From"] = config.from_
    message["To"] = str(Address(addr_spec=to))
    waiting = f"{n} request{'s' if n != 1 else ''} waiting"
    message["Subject"] = f"{waiting} (on behalf of {person})" if delegate else f"{waiting} for you"
    message["Date"] = formatdate(usegmt=True)
    key = f"{person}\x1f{delegate}" if delegate else person
    message["Message-ID"] = message_id("digest", key, str(slot), config.from_)
    message["Auto-Submitted"] = "auto-generated"
    text = "\n".join(
        f"{c.subject}\n  workflow {c.workflow_id} · answer by {c.deadline}\n  {c.link}\n" for c in contents
    )
    items = "".join(
        f'<li><a href="{html.escape(c.link, quote=True)}">{html.escape(c.subject)}</a>'
        f" ({html.escape(c.workflow_id)}, answer by {html.escape(c.deadline)})</li>"
        for c in contents
    )
    _set_text(message, text)
    message.add_alternative(f"<!doctype html><html><body><ul>{items}</ul></body></html>\n", subtype="html")
    return message


class EmailChannelSender:
    """The ``email`` channel: delivers a notice's mail through the configured SMTP server."""

    name = "email"

    def __init__(self, config: EmailChannel, links: NoticeLinks, digests: DigestSource | None = None) -> None:
        self._config = config
        self._links = links
        self._digests = digests

    async def deliver(self, notice: Notice) -> DeliveryOutcome:
        """One attempt: mint the link, build the mail, send it; the SMTP reply decides the outcome."""
        if notice.payload.get("purpose") == "digest":
            return await self._digest(notice)
        record = await self._links.open_interrupt(notice)
        if record is None:
            return DeliveryOutcome("delivered", "interrupt_closed")  # nothing left to ask
        address = str(notice.payload["address"])
        content = self._links.content(record, notice.payload, self._config.link_ttl_ms)
        return await self.send(build_message(self._config, address, content, notice.recipient))

    async def _digest(self, notice: Notice) -> DeliveryOutcome:
        if self._digests is None:
            return DeliveryOutcome.dead("digest_unavailable")
        person, slot = str(notice.payload["person"]), int(notice.payload["slot"])
        if not await self._digests.claim_period(person, slot, notice.notice_id):
            return DeliveryOutcome("delivered", "digest_sent")
        waiting = await self._digests.waiting_on(person, str(notice.payload.get("tenant", notice.tenant)))
        if not waiting:
            return DeliveryOutcome("delivered", "nothing_waiting")
        tenant = str(notice.payload.get("tenant", notice.tenant))
        outcome = DeliveryOutcome.delivered()
        # One mail to the person and one to each delegate standing in for some of the requests; a retry sends
        # each again with its same Message-ID.
        for copy in await self._digests.copies(person, tenant, str(notice.payload["address"]), waiting):
            payload = {"person": person, "purpose": "digest", "delegate": copy.delegate}
            contents = [self._links.content(r, payload, self._config.link_ttl_ms) for r in copy.records]
            message = build_digest(self._config, copy.address, person, slot, contents, delegate=copy.delegate)
            outcome = await self.send(message)
            if outcome.kind != "delivered":
                return outcome
        await self._digests.schedule_next(notice, waiting[0].run_id)
        return outcome

    async def send(self, message: EmailMessage) -> DeliveryOutcome:
        """Send one built mail and say how it went."""
        config = self._config
        try:
            await aiosmtplib.send(
                message,
                hostname=config.host,
                port=config.port,
                username=config.username,
                password=config.password.get_secret_value() if config.password else None,
                use_tls=config.implicit_tls,
                start_tls=config.starttls,
                cert_bundle=config.tls_ca_file,
                timeout=config.timeout_ms / 1000,
            )
        except aiosmtplib.SMTPRecipientsRefused as exc:
            codes = [r.code for r in exc.recipients] or [550]
            return _reply_outcome(max(codes), "recipient")
        except aiosmtplib.SMTPResponseException as exc:
            return _reply_outcome(exc.code, "reply")
        except aiosmtplib.SMTPTimeoutError:
            return DeliveryOutcome.retry("smtp_timeout")
        except (aiosmtplib.SMTPException, OSError) as exc:
            return DeliveryOutcome.retry(f"smtp_{type(exc).__name__}")
        return DeliveryOutcome.delivered()


def _check_address(config: EmailChannel, address: str) -> str | None:
    return None if EMAIL.match(address) else f"{address!r} is not an e-mail address"


def _build(setup: ChannelSetup, config: EmailChannel) -> EmailChannelSender:
    return EmailChannelSender(config, setup.links, Digests(setup.engine, setup.config, setup.planner, setup.delegated))


#: The ``email`` channel: ``channels.email``, route targets ``email:ADDRESS`` (a shared mailbox).
CHANNEL = ChannelType(
    name="email",
    config=EmailChannel,
    build=_build,
    timeout_ms=lambda config: int(config.timeout_ms),
    prefix="email",
    check_address=_check_address,
)
