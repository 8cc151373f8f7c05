"""Joining the notify file to an engine: its planner, a delivery for each channel it configures, and the
channel of the bridge's own ``onUndeliverable`` notices.

Each channel the file configures is built by its :class:`~openwop_bridge.notify.channel_types.ChannelType`
from a :class:`ChannelSetup` and its section, and added to ``engine.notify`` with its own attempt timeout.
Each notice is addressed when it is attempted, to whoever stands in for its person
(:mod:`openwop_bridge.notify.delegated`). The host serves what it adds (the Slack interactions route:
:mod:`openwop_bridge.host.notifying`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from openwop_bridge.core.notices import RetryPolicy
from openwop_bridge.notify.config import NotifyConfig
from openwop_bridge.notify.delegated import DelegatedNotices
from openwop_bridge.notify.links import NoticeLinks
from openwop_bridge.notify.notice import Channel
from openwop_bridge.notify.planner import PeoplePlanner
from openwop_bridge.notify.ports import NotifyEngine
from openwop_bridge.notify.undeliverable import UndeliverablePolicy

__all__ = ["ChannelSetup", "NotifySetup", "install"]

#: What an attempt may take beyond its channel's own timeout before the worker ends it.
SPARE_MS = 2_000


@dataclass(frozen=True, slots=True)
class ChannelSetup:
    """What building a channel's delivery may use: the engine (as the narrow view notify holds of it), the whole
    notify file, the links notices carry, the planner (a digest plans the next one), and who stands in for
    whom (a digest's requests are split by who reads them)."""

    engine: NotifyEngine
    config: NotifyConfig
    links: NoticeLinks
    planner: PeoplePlanner
    delegated: DelegatedNotices


@dataclass
class NotifySetup:
    """What :func:`install` added: the planner, a delivery per configured channel, and the undeliverable policy."""

    planner: PeoplePlanner
    channels: dict[str, Channel] = field(default_factory=dict)
    undeliverable: UndeliverablePolicy | None = None


def install(
    engine: NotifyEngine, config: NotifyConfig, retry: RetryPolicy, public_url: str | None = None
) -> NotifySetup:
    """Register the notify file's planner and channels on ``engine.notify`` (``retry``: the channels' retries)."""
    setup = NotifySetup(PeoplePlanner(config))
    links = NoticeLinks(engine, config.link_base(public_url))
    built = ChannelSetup(engine, config, links, setup.planner, DelegatedNotices(engine, config, links))
    for name, section in config.channels.configured().items():
        kind = config.channels.types[name]
        channel = kind.build(built, section)
        if channel is None:
            continue
        setup.channels[name] = channel
        # The worker bounds each attempt; give the channel its own timeout and a little to spare.
        engine.notify.add_channel(channel, replace(retry, timeout_ms=kind.timeout_ms(section) + SPARE_MS))
    engine.notify.add_planner(setup.planner)
    engine.notify.readdress_with(built.delegated.redirect)
    setup.undeliverable = UndeliverablePolicy(engine, setup.planner)
    engine.notify.add_channel(setup.undeliverable)
    return setup
