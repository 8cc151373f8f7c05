"""A click on a Slack message's Approve or Reject button (``POST /notify/slack/interactions``; the route is
:mod:`openwop_bridge.host.slack_interactions`).

Slack posts ``application/x-www-form-urlencoded`` with one field, ``payload``, holding the
interaction's JSON. The request is taken only when its ``X-Slack-Signature`` is the ``v0``
HMAC-SHA256 of ``v0:{X-Slack-Request-Timestamp}:{raw body}`` under the app's signing secret
(compared in constant time, by ``slack_sdk``'s :class:`~slack_sdk.signature.SignatureVerifier`)
and its timestamp lies within five minutes: otherwise ``401`` and nothing is decided.

The Slack user who clicked is mapped to a person of the notify file (``people.*.slack``); an
unknown user is ``403``. The click then answers as that person, through the engine's one
resolve path: their roles and tenant, the gate's ``approversList`` and quorum, one winner,
and the audit (``decidedBy`` is their principal id, recorded beside the click's subject: the Slack user,
issuer ``urn:openwop-bridge:slack``, lane ``api-key``). A gate that does not allow them is
``403`` and decides nothing; a replayed click decides nothing twice (a second vote by the
same person changes nothing, and a closed gate answers ``409``). A button of a delegate's copy names whose
place it votes in (:func:`~openwop_bridge.notify.slack.button_value`): the click is then the delegate's vote
naming that person, counted only through a delegation standing now, exactly as through the API.

Once the click is counted (and acknowledged), the message is rewritten: to who decided what when the gate
closed, or with a line naming the vote while a quorum is still open.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any
from urllib.parse import parse_qs

from slack_sdk.models.blocks import Block, ContextBlock, MarkdownTextObject
from slack_sdk.signature import SignatureVerifier

from openwop_bridge.core.auth import SLACK_ISSUER, Principal, Subject
from openwop_bridge.core.errors import ForbiddenError, UnauthenticatedError, ValidationError
from openwop_bridge.notify.config import NotifyConfig, Person
from openwop_bridge.notify.ports import NotifyEngine
from openwop_bridge.notify.slack import SlackChannelSender, escape, parse_button_value

__all__ = ["MAX_BODY", "SlackClicks"]

log = logging.getLogger("openwop_bridge.host.slack")  # its name as before the move: log filters name it

#: Slack's interaction payloads are small; anything larger is refused before it is read.
MAX_BODY = 64 * 1024
#: The most digits a request's timestamp may have (seconds since 1970: ten until the year 2286).
_TIMESTAMP_DIGITS = 12
#: The answers a button gives, by the start of its ``action_id``.
_ACTIONS = (("accept", "accept"), ("reject", "reject"))


def _form_payload(body: bytes) -> dict[str, Any]:
    try:
        fields = parse_qs(body.decode("utf-8"), strict_parsing=True, max_num_fields=8)
        payload = json.loads(fields["payload"][0])
    except (UnicodeDecodeError, ValueError, KeyError, IndexError):
        raise ValidationError("expected a form field 'payload' holding the interaction's JSON") from None
    if not isinstance(payload, dict):
        raise ValidationError("the interaction payload must be a JSON object")
    return payload


class SlackClicks:
    """Takes Slack's button clicks (see the module docstring)."""

    def __init__(self, engine: NotifyEngine, config: NotifyConfig, sender: SlackChannelSender) -> None:
        slack = config.channels.slack
        assert slack is not None
        self._engine = engine
        self._verifier = SignatureVerifier(slack.signing_secret.get_secret_value())
        self._people: dict[str, tuple[str, Person]] = {
            p.slack: (pid, p) for pid, p in config.people.items() if p.slack is not None
        }
        self._sender = sender
        self._rewriting: set[asyncio.Task[None]] = set()

    async def click(self, body: bytes, timestamp: str | None, signature: str | None) -> None:
        """Verify, map the user, resolve, and rewrite the message after; a refusal raises its
        :class:`~openwop_bridge.core.errors.BridgeError`, and returning is Slack's acknowledgement."""
        if not self._signed(body, timestamp, signature):
            raise UnauthenticatedError("the Slack signature is missing, wrong or more than five minutes old")
        payload = _form_payload(body)
        if payload.get("type") != "block_actions":
            return
        user = payload.get("user")
        found = self._people.get(str(user.get("id", ""))) if isinstance(user, dict) else None
        if found is None:
            raise ForbiddenError("this Slack user is not a person of the notify file")
        pid, person = found
        actions = payload.get("actions")
        action = actions[0] if isinstance(actions, list) and actions and isinstance(actions[0], dict) else {}
        answer = next((a for prefix, a in _ACTIONS if str(action.get("action_id", "")).startswith(prefix)), None)
        if answer is None:  # a link button: Slack reports its click too, and wants it acknowledged
            return
        interrupt_id, on_behalf = parse_button_value(str(action.get("value", "")))
        # The click's subject is the Slack user, vouched for by the Slack app's signing secret (identity.md).
        principal = Principal(
            id=pid,
            tenant=person.tenant,
            scopes=frozenset({"approvals:respond"}),
            roles=frozenset(person.roles),
            subject=Subject(issuer=SLACK_ISSUER, subject_id=str(person.slack), lane="api-key"),
        )
        # A delegate's copy votes in the place of the person it was for, through the delegation (which must stand).
        value = {"action": answer, "voter": on_behalf} if on_behalf else {"action": answer}
        result = await self._engine.resolve(principal, value, interrupt_id=interrupt_id)
        # Slack wants its answer within three seconds: the message is rewritten after it, not before.
        voted = f"{pid} voted {answer}" + (f" on behalf of {on_behalf}" if on_behalf else "")
        task = asyncio.create_task(self._rewrite(payload, interrupt_id, voted, result))
        self._rewriting.add(task)
        task.add_done_callback(self._rewriting.discard)

    def _signed(self, body: bytes, timestamp: str | None, signature: str | None) -> bool:
        """Whether the request is Slack's: a timestamp of digits, an ASCII signature, a UTF-8 body, and the MAC
        over them within five minutes. A malformed header is a missing signature, never an error."""
        if not timestamp or not signature or not signature.isascii():
            return False
        if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= _TIMESTAMP_DIGITS):
            return False
        try:
            return self._verifier.is_valid(body, timestamp, signature)
        except (ValueError, TypeError):  # a body that is no UTF-8
            return False

    async def _rewrite(self, payload: dict[str, Any], interrupt_id: str, voted: str, result: Any) -> None:
        """Show the decision on the message (every message of the gate once it closed)."""
        try:
            record = await self._engine.interrupt_record(interrupt_id)
            if record is not None and not record.open:
                await self._sender.rewrite_closed(record)
                return
            channel = (payload.get("container") or {}).get("channel_id") or (payload.get("channel") or {}).get("id")
            message = payload.get("message") or {}
            ts = (payload.get("container") or {}).get("message_ts") or message.get("ts")
            if not channel or not ts:
                return
            line = ContextBlock(elements=[MarkdownTextObject(text=escape(f"{voted}{_tally(result)}"))])
            blocks: list[Block | dict[str, Any]] = [*message.get("blocks", [])[:45], line]
            await self._sender.api.update(str(channel), str(ts), str(message.get("text", "")), blocks)  # type: ignore[arg-type]
        except Exception:
            log.warning("could not update the Slack message of interrupt %s", interrupt_id, exc_info=True)


def _tally(result: Any) -> str:
    """`` (1 of 2)``: the approvals an open quorum has of those it needs (and its rejections, if any)."""
    votes = result.get("votes") if isinstance(result, dict) else None
    if not isinstance(votes, dict) or "required" not in votes:
        return ""
    rejects = votes.get("reject") or 0
    return f" ({votes.get('accept', 0)} of {votes['required']}{f', {rejects} rejected' if rejects else ''})"
