"""The registry of interrupt kinds: name → :class:`~openwop_bridge.core.kinds.base.Kind`."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from openwop_bridge.core.errors import ValidationError
from openwop_bridge.core.kinds.approval import APPROVAL
from openwop_bridge.core.kinds.base import Kind
from openwop_bridge.core.kinds.clarification import CLARIFICATION
from openwop_bridge.core.kinds.conversation import CONVERSATION_CLOSE, CONVERSATION_EXCHANGE, CONVERSATION_START
from openwop_bridge.core.kinds.custom import CUSTOM
from openwop_bridge.core.kinds.external_event import EXTERNAL_EVENT
from openwop_bridge.core.kinds.low_confidence import LOW_CONFIDENCE
from openwop_bridge.core.statuses import RunStatus

REGISTRY: Mapping[str, Kind] = MappingProxyType(
    {
        k.name: k
        for k in (
            APPROVAL,
            CLARIFICATION,
            EXTERNAL_EVENT,
            CUSTOM,
            CONVERSATION_START,
            CONVERSATION_EXCHANGE,
            CONVERSATION_CLOSE,
            LOW_CONFIDENCE,
        )
    }
)

#: The eight kind names, in the order the specification lists them.
KINDS: tuple[str, ...] = tuple(REGISTRY)

CONVERSATION_KINDS = frozenset(name for name, k in REGISTRY.items() if k.in_conversation)

#: Run status while an interrupt of this kind is the one the run waits on.
WAITING_STATUS: Mapping[str, RunStatus] = MappingProxyType({name: k.waiting_status for name, k in REGISTRY.items()})


def kind_of(name: object) -> Kind:
    """The kind object named ``name``; :class:`ValidationError` for an unknown kind."""
    kind = REGISTRY.get(name) if isinstance(name, str) else None
    if kind is None:
        raise ValidationError(f"interrupt kind must be one of {', '.join(KINDS)}; got {name!r}")
    return kind


def coerce_short_answer(kind: str, data: Mapping[str, Any], value: Any) -> Any:
    """The answer a surface's short form ``value`` stands for on an interrupt of ``kind`` whose ``data`` is given
    (:meth:`Kind.coerce_short_answer`); ``value`` itself for no short form, or a kind this bridge does not know."""
    found = REGISTRY.get(kind)
    return value if found is None else found.coerce_short_answer(data, value)


def waiting_status(kind: str) -> RunStatus:
    """The run status while waiting on an interrupt of this kind."""
    found = REGISTRY.get(kind)
    return found.waiting_status if found is not None else "waiting-input"
