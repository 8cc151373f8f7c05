"""The Teams channel: an Adaptive Card posted to a Teams Workflows webhook (``teams:<name>`` targets).

Microsoft retired Office 365 connectors; a channel now takes messages through a Workflows
flow ("post to a channel when a webhook request is received"), whose URL is the operator's
(``channels.teams.<name>.url``, a secret). A card posted that way cannot submit
(``Action.Submit`` needs a bot), so it carries one ``Action.OpenUrl`` to the link page, whose
``GET`` shows the request and whose form answers it.

A ``TextBlock`` and a ``FactSet`` read markdown, so a request's ``[Approve](https://…)`` would become a
live link beside the real button: everything the card shows is a ``TextRun`` of a ``RichTextBlock``,
which shows its text as written.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import Field, SecretStr, field_validator

from openwop_bridge.notify.channel_types import ChannelType
from openwop_bridge.notify.config import ConfigModel, secret
from openwop_bridge.notify.content import NoticeContent
from openwop_bridge.notify.install import ChannelSetup
from openwop_bridge.notify.links import NoticeLinks
from openwop_bridge.notify.notice import DeliveryOutcome, Notice

__all__ = ["CHANNEL", "TeamsChannelSender", "TeamsTarget", "adaptive_card", "card_message"]


class TeamsTarget(ConfigModel):
    """One Teams channel: the URL of its Workflows "post to a channel when a webhook request is received" flow."""

    url: SecretStr
    link_ttl_ms: int | None = Field(default=None, gt=0)
    timeout_ms: int = Field(default=10_000, gt=0)

    _url_secret = field_validator("url", mode="before")(secret)

    @field_validator("url")
    @classmethod
    def _url(cls, value: SecretStr) -> SecretStr:
        parts = urlsplit(value.get_secret_value())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http(s) URL")
        return value


def _run(text: str, **style: str) -> dict[str, Any]:
    """A ``TextRun``: text shown as written (no markdown)."""
    return {"type": "TextRun", "text": text, **style}


def _paragraph(*runs: dict[str, Any]) -> dict[str, Any]:
    return {"type": "RichTextBlock", "inlines": list(runs)}


def adaptive_card(content: NoticeContent) -> dict[str, Any]:
    """An Adaptive Card 1.4: the title, what is asked, the facts (one line each), and one button to the link."""
    body: list[dict[str, Any]] = [_paragraph(_run(content.subject, size="Medium", weight="Bolder"))]
    if content.asked:
        body.append(_paragraph(_run(content.asked)))
    for label, value in (
        ("Workflow", content.workflow_id),
        ("Kind", content.kind_label),
        ("Answer by", content.deadline),
    ):
        body.append(_paragraph(_run(f"{label}: ", weight="Bolder"), _run(value)))
    return {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
        "actions": [{"type": "Action.OpenUrl", "title": content.call_to_action, "url": content.link}],
    }


def card_message(content: NoticeContent) -> dict[str, Any]:
    """The card in the message envelope a Workflows webhook takes (once, not wrapped twice)."""
    return {
        "type": "message",
        "attachments": [
            {
                "contentType": "application/vnd.microsoft.card.adaptive",
                "contentUrl": None,
                "content": adaptive_card(content),
            }
        ],
    }


class TeamsChannelSender:
    """The ``teams`` channel: posts each notice's card to its target's Workflows URL."""

    name = "teams"

    def __init__(self, targets: dict[str, TeamsTarget], links: NoticeLinks) -> None:
        self._targets = targets
        self._links = links

    async def deliver(self, notice: Notice) -> DeliveryOutcome:
        """One POST of the card; ``2xx`` is delivered, ``429``/``5xx``/transport errors retried, the rest dead."""
        target = self._targets.get(str(notice.payload.get("address")))
        if target is None:
            return DeliveryOutcome.dead("teams_target_unknown")
        record = await self._links.open_interrupt(notice)
        if record is None:
            return DeliveryOutcome("delivered", "interrupt_closed")
        content = self._links.content(record, notice.payload, target.link_ttl_ms)
        try:
            async with httpx.AsyncClient(timeout=target.timeout_ms / 1000, follow_redirects=False) as client:
                response = await client.post(target.url.get_secret_value(), json=card_message(content))
        except httpx.TimeoutException:
            return DeliveryOutcome.retry("teams_timeout")
        except httpx.HTTPError as exc:
            return DeliveryOutcome.retry(f"teams_{type(exc).__name__}")
        status = response.status_code
        if 200 <= status < 300:
            return DeliveryOutcome.delivered()
        if status == 429 or status >= 500:
            after = response.headers.get("Retry-After")
            return DeliveryOutcome.retry(
                f"teams_http_{status}", int(after) * 1000 if after and after.isdigit() else None
            )
        return DeliveryOutcome.dead(f"teams_http_{status}")


def _check_address(targets: dict[str, TeamsTarget], address: str) -> str | None:
    return None if address in targets else f"no channels.teams.{address}"


def _build(setup: ChannelSetup, targets: dict[str, TeamsTarget]) -> TeamsChannelSender | None:
    return TeamsChannelSender(dict(targets), setup.links) if targets else None


#: The ``teams`` channel: ``channels.teams.<name>``, route targets ``teams:NAME``.
CHANNEL = ChannelType(
    name="teams",
    config=dict[str, TeamsTarget],
    build=_build,
    timeout_ms=lambda targets: max(int(t.timeout_ms) for t in targets.values()),
    prefix="teams",
    check_address=_check_address,
)
