"""The web pages people answer interrupts in, served by the host itself.

``web_routes()`` adds the operator inbox at ``/ui/`` (a static page that talks
to the OpenWOP endpoints with the API key the person pastes in, or with the
session of a sign-in through the identity provider), its assets
under ``/ui/static/`` and two small endpoints under ``/ui/api/``.
``link_page`` renders ``GET /v1/interrupts/{token}`` for browsers: the one
interrupt a signed link points at, or a page saying why the link is no longer
usable. ``front_routes`` adds ``GET /`` (a landing page, or a JSON index for
clients) and the interactive API page at ``/docs/``. Everything is served from
the package and its dependencies; nothing comes from a CDN.
"""

from __future__ import annotations

from openwop_bridge.host.web.front import front_routes
from openwop_bridge.host.web.link import link_page
from openwop_bridge.host.web.pages import web_routes

__all__ = ["front_routes", "link_page", "web_routes"]
