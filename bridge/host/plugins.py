"""Server plugins: how adapters join ``openwop-bridge serve`` without the engine importing them.

A package declares an entry point in the ``openwop_bridge.plugins`` group whose
target is a function ``install(build: ServerBuild) -> None``. ``serve`` calls
every installed plugin before starting; a plugin adds routes, workflows or
start-up hooks to the build, and claims the command-line options it handles.
A plugin that adds routes documents them with an OpenAPI fragment (``{"paths":
…, "components": {"schemas": …}}``) in ``openapi``, or with a function building
it (called when the document is first asked for); the host merges it into
``GET /v1/openapi.json``. A plugin that serves another protocol advertises it in
``/.well-known/openwop`` with a function in ``discovery``: given the request's
absolute base URL, it returns the top-level members to add (a facet such as ``a2a``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute

from openwop_bridge.core.workflow import WorkflowDefinition
from openwop_bridge.runtime.engine import Engine

if TYPE_CHECKING:
    from openwop_bridge.host.http.openapi import Fragment

log = logging.getLogger("openwop_bridge.host.plugins")

GROUP = "openwop_bridge.plugins"

#: Members a plugin adds to ``/.well-known/openwop``, given the absolute base URL of the request.
DiscoveryFragment = Callable[[str], dict[str, Any]]


@dataclass
class ServerBuild:
    """What plugins may contribute to a server being assembled."""

    engine: Engine
    db: str
    options: dict[str, Any]
    routes: list[BaseRoute] = field(default_factory=list)
    openapi: list[Fragment] = field(default_factory=list)
    discovery: list[DiscoveryFragment] = field(default_factory=list)
    workflows: list[WorkflowDefinition] = field(default_factory=list)
    startup: list[Callable[[], Awaitable[Any]]] = field(default_factory=list)
    shutdown: list[Callable[[], Awaitable[Any]]] = field(default_factory=list)
    claimed: set[str] = field(default_factory=set)
    #: The issuers of the identity file (``--identity-config``) whose bearer tokens the host accepts, in order.
    identity_issuers: tuple[str, ...] = ()

    def claim(self, option: str) -> Any:
        """Take responsibility for a command-line option and return its value."""
        self.claimed.add(option)
        return self.options.get(option)


Installer = Callable[[ServerBuild], None]


def installed() -> list[tuple[str, Installer]]:
    """Every plugin installed in this environment, by name."""
    found = []
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        try:
            found.append((ep.name, ep.load()))
        except ImportError as exc:
            log.info("plugin %s is not usable here (%s)", ep.name, exc)
    return found
