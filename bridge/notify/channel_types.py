"""The channels notices go out on: an open set, each channel declared once, in its own module.

A channel module declares one :class:`ChannelType`: its ``name`` (the key of its section under ``channels``
in the notify file, and the outbox's name for its notices), the type of that section (a pydantic model),
the ``prefix`` of the route targets that name one of its shared addresses (``pager:ops``) and how such an
address is checked, and how its delivery (a :class:`~openwop_bridge.notify.notice.Channel`) is built from
its section. It registers itself under the entry point group :data:`GROUP`, named by the channel, its value
the :class:`ChannelType`, as the bridge's own e-mail, Slack and Teams channels do in ``pyproject.toml``::

    [project.entry-points."openwop_bridge.channels"]
    pager = "my_package.pager:CHANNEL"

:func:`register_channel` registers one in the running process (an embedding application, a test). A type is
loaded by name when a notify file names it, so a channel's libraries load only when it is used.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from openwop_bridge.notify.notice import Channel

__all__ = ["GROUP", "ChannelType", "channel_names", "channel_type", "register_channel", "unregister_channel"]

#: The entry point group channels register under.
GROUP = "openwop_bridge.channels"
#: What a channel's name may be: a key of the notify file's ``channels`` and a target prefix.
NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
#: Names a channel may not take: route targets use ``role:``, the bridge's own policy notices ``undeliverable``, the v2
#: webhook surface ``webhook``; the rest name what the notify file's ``channels`` model offers itself.
RESERVED = frozenset({"role", "undeliverable", "webhook", "get", "types", "configured", "by_prefix"})


@dataclass(frozen=True, slots=True)
class ChannelType:
    """One channel, as its module declares it (see the module docstring).

    ``config`` is the type of ``channels.<name>`` (a pydantic model, or a mapping of named ones); ``build`` makes
    the delivery from a :class:`~openwop_bridge.notify.install.ChannelSetup` and that section, or None when the
    section delivers nothing (no targets). ``timeout_ms`` is how long one attempt may take under that section (the
    worker bounds it a little longer). ``prefix``: route targets ``<prefix>:ADDRESS`` are shared addresses on this
    channel (None: it has none), and ``check_address`` says why one cannot be used under the section, or None.
    """

    name: str
    config: Any
    build: Callable[[Any, Any], Channel | None]
    timeout_ms: Callable[[Any], int]
    prefix: str | None = None
    check_address: Callable[[Any, str], str | None] | None = None

    def __post_init__(self) -> None:
        if not NAME.match(self.name) or self.name in RESERVED:
            raise ValueError(f"a channel's name must match {NAME.pattern} and not be one of {sorted(RESERVED)}")
        if self.prefix is not None and (not NAME.match(self.prefix) or self.prefix == "role"):
            raise ValueError(f"a channel's target prefix must match {NAME.pattern} and not be 'role'")


#: Channels registered in this process (:func:`register_channel`), before those of entry points.
_registered: dict[str, ChannelType] = {}
#: Entry points' channels, once loaded.
_loaded: dict[str, ChannelType] = {}


def register_channel(kind: ChannelType) -> None:
    """Offer ``kind`` to notify files read from now on in this process, as its entry point would."""
    _registered[kind.name] = kind


def unregister_channel(name: str) -> None:
    """Forget the channel named ``name``: one :func:`register_channel` registered, or one loaded from an entry point
    (loaded again when next named, if its entry point is still installed)."""
    _registered.pop(name, None)
    _loaded.pop(name, None)


def channel_names() -> list[str]:
    """Every channel's name, registered here or by an entry point, without loading any."""
    return sorted({*_registered, *(ep.name for ep in entry_points(group=GROUP))})


def channel_type(name: str) -> ChannelType | None:
    """The channel named ``name`` (loading its module on first use), or None when none is registered."""
    found = _registered.get(name) or _loaded.get(name)
    if found is not None:
        return found
    for ep in entry_points(group=GROUP, name=name):
        kind = ep.load()
        if not isinstance(kind, ChannelType) or kind.name != name:
            raise TypeError(f"the entry point {ep.value!r} of {GROUP} is no ChannelType named {name!r}")
        _loaded[name] = kind
        return kind
    return None
