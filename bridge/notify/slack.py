"""The Slack channel: Block Kit messages through the Web API, and what they become once decided.

A notice becomes one ``chat.postMessage`` (a DM when the address is a person's Slack user id,
a post when it is a channel id): the title, what is asked, the deadline, and

- for an approval, buttons whose ``action_id`` begin with ``accept`` and ``reject`` (a click
  comes back to ``POST /notify/slack/interactions`` and votes as the person who clicked; on a delegate's
  copy, :mod:`openwop_bridge.notify.delegated`, in the place of the person they stand in for), and
  a button to the link page for the other answers (edit, refine, ask); on a key-bound gate
  (``"assurance": "key-bound"``) Approve and Reject open the link page too, where the passkey is asked for;
- for every other kind, a button to the link page, where its form is.

The message's ``channel`` and ``ts`` are kept (the engine's adapter state, namespace
``notify.slack``) so that, once the interrupt closes, however and wherever, the message is
rewritten to say so and nobody acts on a stale request.

The Web API is called with ``slack_sdk``'s :class:`~slack_sdk.WebClient` pointed at
``apiBase``, in a worker thread (its asynchronous client needs ``aiohttp``, which the
bridge does not otherwise use).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    MarkdownTextObject,
    SectionBlock,
)

from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.notify.channel_types import ChannelType
from openwop_bridge.notify.config import SLACK_ID, ConfigModel, secret
from openwop_bridge.notify.content import NoticeContent
from openwop_bridge.notify.install import ChannelSetup
from openwop_bridge.notify.links import NoticeLinks
from openwop_bridge.notify.notice import DeliveryOutcome, Notice

__all__ = [
    "CHANNEL",
    "SLACK_STATE",
    "MessageRefs",
    "SlackApi",
    "SlackChannel",
    "SlackChannelSender",
    "button_value",
    "closed_blocks",
    "escape",
    "parse_button_value",
    "request_blocks",
]

#: The adapter-state namespace where posted Slack messages are remembered.
SLACK_STATE = "notify.slack"


class SlackChannel(ConfigModel):
    """Slack through a bot token (``chat:write``) and the app's signing secret."""

    token: SecretStr
    signing_secret: SecretStr
    api_base: str = "https://slack.com/api/"
    link_ttl_ms: int | None = Field(default=None, gt=0)
    timeout_ms: int = Field(default=10_000, gt=0)

    _secrets = field_validator("token", "signing_secret", mode="before")(secret)

    @field_validator("api_base")
    @classmethod
    def _api_base(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http(s) URL such as https://slack.com/api/")
        return value if value.endswith("/") else value + "/"


log = logging.getLogger("openwop_bridge.notify.slack")

#: Slack's own limit on a section's text.
_TEXT_MAX = 2900
#: Slack errors that no retry mends (the rest, and any transport failure, are retried).
_PERMANENT = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "user_not_found",
        "invalid_auth",
        "account_inactive",
        "token_revoked",
        "not_authed",
        "missing_scope",
        "cannot_dm_bot",
        "msg_too_long",
        "invalid_blocks",
    }
)


def escape(text: str) -> str:
    """Slack's three control characters escaped, for every field Slack renders (a message's ``text`` and its
    mrkdwn blocks): what a workflow wrote is shown as written, never as a mention (``<!channel>``) or a link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def request_blocks(content: NoticeContent) -> list[Block]:
    """The Block Kit blocks of a request (see the module docstring)."""
    text = f"*{escape(content.title)}*"
    if content.asked:
        text += f"\n{escape(content.asked)}"
    about = f"{content.kind_label} · workflow {content.workflow_id} · answer by {content.deadline}"
    if content.on_behalf_of:
        about = f"On behalf of {content.on_behalf_of} · {about}"
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=text[:_TEXT_MAX])),
        ContextBlock(elements=[MarkdownTextObject(text=escape(about))]),
    ]
    buttons: list[ButtonElement] = []
    if content.votes and content.key_bound:
        # A click cannot carry a passkey: the buttons open the link page, which asks for it.
        buttons += [
            ButtonElement(text="Approve", action_id="open_link_accept", url=content.link, style="primary"),
            ButtonElement(text="Reject", action_id="open_link_reject", url=content.link, style="danger"),
        ]
    elif content.votes:
        value = button_value(content.interrupt_id, content.on_behalf_of)
        buttons += [
            ButtonElement(text="Approve", action_id="accept", value=value, style="primary"),
            ButtonElement(text="Reject", action_id="reject", value=value, style="danger"),
        ]
    label = "More answers" if content.votes else ("Answer" if content.link_answers else "Open the request")
    buttons.append(ButtonElement(text=label, action_id="open_link", url=content.link))
    blocks.append(ActionsBlock(block_id=f"openwop:{content.interrupt_id}", elements=buttons))
    return blocks


def button_value(interrupt_id: str, on_behalf_of: str | None = None) -> str:
    """An Approve or Reject button's ``value``: the interrupt's id, and on a delegate's copy whose place the
    click votes in (``int_… alice``)."""
    return f"{interrupt_id} {on_behalf_of}" if on_behalf_of else interrupt_id


def parse_button_value(value: str) -> tuple[str, str | None]:
    """``(interrupt id, whose place)`` from :func:`button_value`'s ``value``."""
    interrupt_id, _, on_behalf_of = value.partition(" ")
    return interrupt_id, on_behalf_of or None


def closed_blocks(title: str, outcome: str) -> list[Block]:
    """The blocks a request's message is rewritten to once the interrupt closed: its title and what became of it."""
    return [
        SectionBlock(text=MarkdownTextObject(text=f"*{escape(title)}*"[:_TEXT_MAX])),
        ContextBlock(elements=[MarkdownTextObject(text=escape(outcome)[:_TEXT_MAX])]),
    ]


def closed_summary(record: InterruptRecord) -> str:
    """``Approved by alice`` / ``Rejected by bob`` / ``Expired`` …: what became of a closed interrupt."""
    resolution = record.resolution or {}
    by = resolution.get("resolvedBy") or resolution.get("decidedBy")
    value = resolution.get("resumeValue")
    action = value.get("action") if isinstance(value, dict) else None
    verb = {
        "accept": "Approved",
        "edit-accept": "Approved with edits",
        "reject": "Rejected",
        "refine": "Sent back to refine",
    }.get(str(action), "Answered")
    if record.status == "resolved":
        return f"{verb} by {by}" if by else verb
    return {"expired": "Expired: nobody answered in time", "cancelled": "Withdrawn", "gone": "Withdrawn"}.get(
        record.status, record.status.capitalize()
    )


class SlackApi:
    """``chat.postMessage`` and ``chat.update`` with slack_sdk's client, off the event loop."""

    def __init__(self, config: SlackChannel) -> None:
        self._client = WebClient(
            token=config.token.get_secret_value(), base_url=config.api_base, timeout=max(1, config.timeout_ms // 1000)
        )

    async def post(self, channel: str, text: str, blocks: list[Block]) -> dict[str, Any]:
        """Post a message; returns Slack's answer (``channel``, ``ts``)."""
        response = await asyncio.to_thread(self._client.chat_postMessage, channel=channel, text=text, blocks=blocks)
        return dict(response.data) if isinstance(response.data, dict) else {}

    async def update(self, channel: str, ts: str, text: str, blocks: list[Block]) -> None:
        """Rewrite a posted message."""
        await asyncio.to_thread(self._client.chat_update, channel=channel, ts=ts, text=text, blocks=blocks)


class MessageRefs(Protocol):
    """Where the posted messages of an interrupt are remembered (the engine's adapter state is one)."""

    async def put(self, key: str, value: Any, *, only_if_absent: bool = False) -> bool:
        """Remember a value."""
        ...

    async def scan(
        self, prefix: str, *, limit: int, after: str | None = None, descending: bool = True
    ) -> list[tuple[str, Any]]:
        """The values under a key prefix."""
        ...


def _outcome(exc: Exception) -> DeliveryOutcome:
    if isinstance(exc, SlackApiError):
        error = str(exc.response.get("error", "error")) if exc.response is not None else "error"
        status = getattr(exc.response, "status_code", 0)
        if status == 429:
            retry_after = exc.response.headers.get("Retry-After") if exc.response is not None else None
            after = int(retry_after) * 1000 if retry_after and str(retry_after).isdigit() else None
            return DeliveryOutcome.retry("slack_ratelimited", after)
        reason = f"slack_{error}"[:60]
        return DeliveryOutcome.dead(reason) if error in _PERMANENT else DeliveryOutcome.retry(reason)
    return DeliveryOutcome.retry(f"slack_{type(exc).__name__}")


class SlackChannelSender:
    """The ``slack`` channel (see the module docstring)."""

    name = "slack"

    def __init__(
        self, config: SlackChannel, links: NoticeLinks, refs: MessageRefs, api: SlackApi | None = None
    ) -> None:
        self._config = config
        self._links = links
        self._refs = refs
        self.api = api or SlackApi(config)

    async def deliver(self, notice: Notice) -> DeliveryOutcome:
        """Post a request (or, for a ``closed`` notice, rewrite the interrupt's messages)."""
        if notice.payload.get("purpose") == "closed":
            return await self._close(notice)
        record = await self._links.open_interrupt(notice)
        if record is None:
            return DeliveryOutcome("delivered", "interrupt_closed")
        content = self._links.content(record, notice.payload, self._config.link_ttl_ms)
        try:
            address = str(notice.payload["address"])
            posted = await self.api.post(address, escape(content.subject), request_blocks(content))
        except Exception as exc:
            return _outcome(exc)
        if posted.get("channel") and posted.get("ts"):
            ref = {"channel": posted["channel"], "ts": posted["ts"], "title": content.title}
            await self._refs.put(f"msg:{record.interrupt_id}:{notice.notice_id}", ref)
        return DeliveryOutcome.delivered()

    async def messages(self, interrupt_id: str) -> list[dict[str, Any]]:
        """The messages posted about an interrupt (at most 100)."""
        return [v for _, v in await self._refs.scan(f"msg:{interrupt_id}:", limit=100, descending=False)]

    async def rewrite_closed(self, record: InterruptRecord) -> None:
        """Rewrite every message posted about a closed interrupt to say what became of it."""
        summary = closed_summary(record)
        for ref in await self.messages(record.interrupt_id):
            title = str(ref.get("title", ""))
            text = escape(f"{title}: {summary}")
            await self.api.update(str(ref["channel"]), str(ref["ts"]), text, closed_blocks(title, summary))

    async def _close(self, notice: Notice) -> DeliveryOutcome:
        if notice.interrupt_id is None:
            return DeliveryOutcome.delivered()
        record = await self._links.interrupt(notice.interrupt_id)
        if record is None or record.open:
            return DeliveryOutcome("delivered", "nothing_to_close")
        try:
            await self.rewrite_closed(record)
        except Exception as exc:
            return _outcome(exc)
        return DeliveryOutcome.delivered()


def _check_address(config: SlackChannel, address: str) -> str | None:
    return None if SLACK_ID.match(address) else f"{address!r} is not a Slack channel id (such as C0FINANCE)"


def _build(setup: ChannelSetup, config: SlackChannel) -> SlackChannelSender:
    return SlackChannelSender(config, setup.links, setup.engine.adapter_state(SLACK_STATE))


#: The ``slack`` channel: ``channels.slack``, route targets ``slack:CHANNEL``; its clicks come back through
#: :mod:`openwop_bridge.notify.slack_clicks`.
CHANNEL = ChannelType(
    name="slack",
    config=SlackChannel,
    build=_build,
    timeout_ms=lambda config: int(config.timeout_ms),
    prefix="slack",
    check_address=_check_address,
)
