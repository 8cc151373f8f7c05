"""Where a person's notices go while they are away: to the delegate standing in for them.

While a delegation of person *alice* stands (:mod:`openwop_bridge.core.delegations`) and covers the
interrupt's workflow, each of alice's notices (first notices, reminders, escalations, digests) goes to
the delegate instead, on the same channel, saying ``on behalf of alice``; its link (and a Slack message's
buttons) answers in alice's place through the delegation, as a delegated vote through the API does. When
alice has several delegations standing that cover it, the newest counts. A delegation limited to some
workflows redirects only those workflows' notices. Once it ends or runs out, alice's notices go to her again.

Each notice goes to exactly one of them: to the delegate when the delegate is a person of the notify file of
the same tenant with an address on the notice's channel, else to alice as if there were no delegation
(never dropped). A shared address, a webhook and the bridge's own notices are never redirected.

The redirect is made **when a notice is delivered**, not when it is planned. Planning is pure and runs
inside the transaction that opens the interrupt, while most of a person's notices are due later
(reminders, escalations, digests, fallbacks): what counts is who stands in when the notice goes out, so
a delegation made or ended after the interrupt opened applies to what is still queued, with nothing in
the outbox rewritten. The outbox row keeps its person (the slot), so the per-person rules stay as they are:
one notice per person and channel (a delegate who is also an approver of the gate gets their own notice and,
apart, the one in the place of the person they stand in for, as that person would have), a reminder is
dropped once the slot has voted (whoever voted in it), and the delivery state is the person's. The
delegations are read through the engine (``standing_delegations``: read from the store at most every
couple of seconds per person). The attempt sees the notice addressed to the delegate: ``recipient`` is the
delegate, its payload keeps ``person`` (whose slot) and adds ``delegate`` and ``delegationId``, and the
``notification.sent`` event (which webhooks carry) names the delegate with ``onBehalfOf``.

A digest lists several requests, perhaps of several workflows: its requests are split by who reads them,
the delegate receiving the ones their delegation covers, the person the rest (:meth:`DelegatedNotices.digest_copies`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from openwop_bridge.core.delegations import Delegation
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.notify.config import NotifyConfig
from openwop_bridge.notify.links import NoticeLinks
from openwop_bridge.notify.notice import Notice
from openwop_bridge.notify.ports import NotifyEngine
from openwop_bridge.notify.recipients import PERSON_CHANNELS

__all__ = ["DelegatedNotices", "DigestCopy"]

#: The purposes of a person's notices that are not about one interrupt (a digest is split instead).
_NOT_REDIRECTED = frozenset({"digest", "closed"})


@dataclass(frozen=True, slots=True)
class DigestCopy:
    """One mail of a person's digest: to the person (``delegate`` None) or to one delegate standing in."""

    address: str
    records: list[InterruptRecord]
    delegate: str | None = None
    delegation_id: str | None = None


class DelegatedNotices:
    """Finds who stands in for a person and addresses their notices to them (see the module docstring)."""

    def __init__(self, engine: NotifyEngine, config: NotifyConfig, links: NoticeLinks) -> None:
        self._engine = engine
        self._config = config
        self._links = links

    def _address(self, delegate: str, tenant: str, channel: str) -> str | None:
        person = self._config.people.get(delegate)
        if person is None or person.tenant != tenant:
            return None
        return {"slack": person.slack, "email": person.email}.get(channel)

    async def stand_in(self, tenant: str, person: str, workflow_id: str) -> Delegation | None:
        """The delegation standing in for ``person`` on runs of ``workflow_id`` now (the newest), or None."""
        for delegation in await self._engine.standing_delegations(tenant, person):
            if delegation.covers(workflow_id):
                return delegation
        return None

    async def redirect(self, notice: Notice) -> Notice:
        """``notice`` addressed to the delegate standing in for its person, or as it is."""
        payload = notice.payload
        person = payload.get("person")
        if (
            not person
            or notice.interrupt_id is None
            or notice.channel not in PERSON_CHANNELS
            or payload.get("delegate")
            or payload.get("purpose") in _NOT_REDIRECTED
        ):
            return notice
        standing = await self._engine.standing_delegations(notice.tenant, str(person))
        if not standing:
            return notice
        chosen = standing[0]
        if any(d.workflows for d in standing):  # only then is the interrupt's workflow needed
            record = await self._links.interrupt(notice.interrupt_id)
            if record is None:
                return notice
            found = next((d for d in standing if d.covers(record.workflow_id)), None)
            if found is None:
                return notice
            chosen = found
        address = self._address(chosen.delegate, notice.tenant, notice.channel)
        if address is None:
            return notice
        redirected = {**payload, "address": address, "delegate": chosen.delegate, "delegationId": chosen.delegation_id}
        return replace(notice, recipient=chosen.delegate, payload=redirected)

    async def digest_copies(
        self, tenant: str, person: str, address: str, records: list[InterruptRecord]
    ) -> list[DigestCopy]:
        """The mails ``person``'s digest of ``records`` becomes: theirs (if any request stays with them), then one
        per delegate standing in for some of them, each request in exactly one."""
        own: list[InterruptRecord] = []
        copies: dict[str, DigestCopy] = {}
        for record in records:
            delegation = await self.stand_in(tenant, person, record.workflow_id)
            to = None if delegation is None else self._address(delegation.delegate, tenant, "email")
            if delegation is None or to is None:
                own.append(record)
                continue
            copy = copies.setdefault(
                delegation.delegate, DigestCopy(to, [], delegation.delegate, delegation.delegation_id)
            )
            copy.records.append(record)
        out = [DigestCopy(address, own)] if own else []
        return out + list(copies.values())
