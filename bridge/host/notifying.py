"""Serving the notify file: its channels installed on the engine (:mod:`openwop_bridge.notify.install`), and the
routes they take callbacks on (a Slack button's click)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from starlette.routing import BaseRoute

from openwop_bridge.notify.config import NotifyConfig
from openwop_bridge.notify.install import NotifySetup, install
from openwop_bridge.runtime.engine import Engine

__all__ = ["NotifyServing", "NotifySetup", "install_notify"]


@dataclass
class NotifyServing(NotifySetup):
    """What :func:`install_notify` added, with the routes and OpenAPI fragments to serve."""

    routes: list[BaseRoute] = field(default_factory=list)
    openapi: list[dict[str, Any]] = field(default_factory=list)


def install_notify(engine: Engine, config: NotifyConfig, public_url: str | None = None) -> NotifyServing:
    """Register the notify file's planner and channels on ``engine``; the routes to serve come back."""
    setup = install(engine, config, engine.config.notify_retry, public_url)
    served = NotifyServing(setup.planner, setup.channels, setup.undeliverable)
    slack = setup.channels.get("slack")
    if slack is not None:
        from openwop_bridge.host import slack_interactions  # Slack's libraries load only when it is configured
        from openwop_bridge.notify.slack import SlackChannelSender
        from openwop_bridge.notify.slack_clicks import SlackClicks

        assert isinstance(slack, SlackChannelSender)
        served.routes.append(slack_interactions.route(SlackClicks(engine, config, slack)))
        served.openapi.append(slack_interactions.openapi_fragment())
    return served
