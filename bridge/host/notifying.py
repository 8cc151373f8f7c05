"""Joining the notify file to an engine: its planner, its channels, and the Slack interactions route."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from starlette.routing import BaseRoute

from openwop_bridge.core.notices import RetryPolicy
from openwop_bridge.host.digests import Digests
from openwop_bridge.host.undeliverable import UndeliverablePolicy
from openwop_bridge.notify.config import NotifyConfig
from openwop_bridge.notify.email import EmailChannelSender
from openwop_bridge.notify.links import NoticeLinks
from openwop_bridge.notify.planner import PeoplePlanner
from openwop_bridge.notify.slack import SlackChannelSender
from openwop_bridge.notify.teams import TeamsChannelSender
from openwop_bridge.runtime.engine import Engine

__all__ = ["SLACK_STATE", "NotifySetup", "install_notify"]

#: The adapter-state namespace where posted Slack messages are remembered.
SLACK_STATE = "notify.slack"


@dataclass
class NotifySetup:
    """What :func:`install_notify` added: the channels, and the routes and OpenAPI fragments to serve."""

    email: EmailChannelSender | None = None
    slack: SlackChannelSender | None = None
    teams: TeamsChannelSender | None = None
    undeliverable: UndeliverablePolicy | None = None
    routes: list[BaseRoute] = field(default_factory=list)
    openapi: list[dict[str, Any]] = field(default_factory=list)


def install_notify(engine: Engine, config: NotifyConfig, public_url: str | None = None) -> NotifySetup:
    """Register the notify file's planner and channels on ``engine``; the routes to serve come back."""
    from openwop_bridge.host import slack_interactions

    links = NoticeLinks(engine, config.link_base(public_url))
    planner = PeoplePlanner(config)
    retry = engine.config.notify_retry

    def bounded(timeout_ms: int) -> RetryPolicy:
        # The worker bounds each attempt; give the channel its own timeout and a little to spare.
        return replace(retry, timeout_ms=timeout_ms + 2_000)

    setup = NotifySetup()
    channels = config.channels
    if channels.email is not None:
        setup.email = EmailChannelSender(channels.email, links, Digests(engine, config, planner))
        engine.notify.add_channel(setup.email, bounded(channels.email.timeout_ms))
    if channels.slack is not None:
        setup.slack = SlackChannelSender(channels.slack, links, engine.adapter_state(SLACK_STATE))
        engine.notify.add_channel(setup.slack, bounded(channels.slack.timeout_ms))
        setup.routes.append(slack_interactions.SlackInteractions(engine, config, setup.slack).route())
        setup.openapi.append(slack_interactions.openapi_fragment())
    if channels.teams:
        setup.teams = TeamsChannelSender(dict(channels.teams), links)
        engine.notify.add_channel(setup.teams, bounded(max(t.timeout_ms for t in channels.teams.values())))
    engine.notify.add_planner(planner)
    setup.undeliverable = UndeliverablePolicy(engine, planner)
    engine.notify.add_channel(setup.undeliverable)
    return setup
