"""Who is told about an interrupt, and on which channel: pure, on the notify file and the interrupt alone.

The people told are, in this order and each once:

1. every principal in an approval's ``approversList`` who is in ``people``;
2. the people holding its ``requiredRole`` (their ``roles`` in the notify file);
3. the targets of every route that matches the interrupt's workflow, kind and tenant:
   a person, ``role:NAME`` (everyone holding it), or a shared address on a channel, named by its
   target prefix (``email:ADDRESS``, ``slack:CHANNEL``, ``teams:NAME``, or another channel's).

A person of another tenant is never told. A person gets one :class:`Recipient` per channel
they have an address on (e-mail, Slack); a shared address is one recipient. A person's
notices carry links minted for them (their answer is their vote); a shared address holds
no identity, so its notices carry a link that shows the request without answering it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from openwop_bridge.core.notices import Audience
from openwop_bridge.notify.config import NotifyConfig, Person, Route

__all__ = ["PERSON_CHANNELS", "Recipient", "audience_of", "matching_routes", "recipients_for", "targets_to_recipients"]

#: The channels a person's own addresses are on (``people.<id>.slack``, ``.email``), in the order their notices are
#: planned (and tried, with ``fallbackAfterMs``). Shared addresses are on any channel, by target prefix.
PERSON_CHANNELS = ("slack", "email")


@dataclass(frozen=True, slots=True)
class Recipient:
    """One destination for one interrupt's notice.

    ``person`` is the principal id the notice's link is minted for (None for a shared
    address); ``address`` is where the channel sends it (an e-mail address, a Slack user
    or channel id, a Teams target name); ``key`` names the recipient in events and in
    the outbox (the person id, or ``channel:address`` for a shared address).
    """

    channel: str
    address: str
    person: str | None = None

    @property
    def key(self) -> str:
        """The recipient's name in events (never an address for a person)."""
        return self.person if self.person is not None else f"{self.channel}:{self.address}"


def matching_routes(config: NotifyConfig, workflow_id: str, kind: str, tenant: str) -> list[Route]:
    """The routes whose ``match`` takes an interrupt of this workflow, kind and tenant, in file order."""
    return [r for r in config.routes if r.match.matches(workflow_id, kind, tenant)]


def _person_recipients(pid: str, person: Person) -> list[Recipient]:
    addresses = {"slack": person.slack, "email": person.email}
    out = []
    for channel in PERSON_CHANNELS:
        address = addresses[channel]
        if address:
            out.append(Recipient(channel, address, pid))
    return out


class _Collector:
    """Recipients in order, each person and each shared address once, nobody of another tenant."""

    def __init__(self, config: NotifyConfig, tenant: str) -> None:
        self._config = config
        self._tenant = tenant
        self._people: set[str] = set()
        self._shared: set[tuple[str, str]] = set()
        self.found: list[Recipient] = []

    def person(self, pid: str) -> None:
        person = self._config.people.get(pid)
        if person is None or pid in self._people or person.tenant != self._tenant:
            return
        self._people.add(pid)
        self.found += _person_recipients(pid, person)

    def role(self, role: str) -> None:
        for pid, person in self._config.people.items():
            if role in person.roles:
                self.person(pid)

    def shared(self, channel: str, address: str) -> None:
        if (channel, address) not in self._shared:
            self._shared.add((channel, address))
            self.found.append(Recipient(channel, address))

    def target(self, target: str) -> None:
        prefix, sep, rest = target.partition(":")
        if not sep:
            self.person(target)
        elif prefix == "role":
            self.role(rest)
        else:
            found = self._config.channels.by_prefix(prefix)
            if found is not None:
                self.shared(found[0].name, rest)


def targets_to_recipients(config: NotifyConfig, targets: Iterable[str], tenant: str) -> list[Recipient]:
    """The recipients route targets name (``escalateTo``, say) for an interrupt of ``tenant``."""
    collector = _Collector(config, tenant)
    for target in targets:
        collector.target(target)
    return collector.found


def recipients_for(
    config: NotifyConfig, *, workflow_id: str, kind: str, tenant: str, data: Mapping[str, Any]
) -> list[Recipient]:
    """Everyone to tell about a newly opened interrupt (see the module docstring)."""
    collector = _Collector(config, tenant)
    for pid in data.get("approversList") or ():
        collector.person(str(pid))
    role = data.get("requiredRole")
    if role:
        collector.role(str(role))
    for route in matching_routes(config, workflow_id, kind, tenant):
        for target in route.notify:
            collector.target(target)
    return collector.found


def audience_of(config: NotifyConfig, pid: str, tenant: str) -> Audience | None:
    """Person ``pid`` as the interrupts of ``tenant`` that may be waiting on them are found (the store's
    ``waiting_on``): by name in ``approversList``, by their roles, and by the routes whose targets reach them
    (the person, or a role they hold). None when they are nobody of that tenant."""
    person = config.people.get(pid)
    if person is None or person.tenant != tenant:
        return None
    reaching = {pid, *(f"role:{role}" for role in person.roles)}
    matches = [
        (route.match.workflow_id, route.match.kind)
        for route in config.routes
        if route.match.tenant in (None, tenant) and reaching.intersection(route.notify)
    ]
    return Audience(pid, frozenset(person.roles), tuple(dict.fromkeys(matches)))
