"""An activation's command history: what a node emitted, known again when it runs again.

A node that suspends runs again from its top when it resumes. Each event it
emits (and each :meth:`~openwop_bridge.runtime.context.NodeContext.step` result) is a
command with a place in the activation's history; on re-execution a command
already at that place is recognised — and checked to be of the same type — and
not emitted twice. Events emitted with a key (:meth:`Commands.emit_once`) are
recognised by that key wherever they come.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from openwop_bridge.core.errors import ReplayDivergedError
from openwop_bridge.core.events import EventDraft
from openwop_bridge.runtime.activation import Activation

#: Command numbers of :meth:`Commands.emit_once` events start here, after every positional one.
ONCE_BASE = 1_000_000


class Stamps(Protocol):
    """Where an event's id and time come from."""

    def clock_now_ms(self) -> int:
        """The current time, in milliseconds."""

    def new_id(self, prefix: str) -> str:
        """A new id with ``prefix``."""


class Commands:
    """The commands of one activation of ``node_id`` in ``visit``; see the module docstring."""

    def __init__(
        self,
        host: Stamps,
        activation: Activation,
        node_id: str,
        visit: int,
        history: Sequence[dict[str, Any]],
        once_history: Sequence[dict[str, Any]],
    ) -> None:
        self._host = host
        self.activation = activation
        self.node_id = node_id
        self.visit = visit
        self._history = list(history)
        self._once_seen = {(d["type"], d.get("payload", {}).get("_once")) for d in once_history}
        self._once_count = len(once_history)
        #: The place of the next command.
        self.position = 0

    @property
    def replaying(self) -> bool:
        """True while the next command is one the history already holds."""
        return self.position < len(self._history)

    def draft(
        self, type_: str, payload: Any, *, node_id: str | None = None, causation: str | None = None, cmd: bool = False
    ) -> EventDraft:
        """Add an event to the activation (``cmd``: at the next command's place)."""
        draft = EventDraft(
            event_id=self._host.new_id("evt"),
            type=type_,
            payload=payload,
            timestamp_ms=self._host.clock_now_ms(),
            node_id=node_id or self.node_id,
            causation_id=causation,
            activation=(self.node_id, self.visit, self.position) if cmd else None,
        )
        self.activation.drafts.append(draft)
        return draft

    def recorded(self, type_: str) -> dict[str, Any] | None:
        """The recorded command at this place, checked against ``type_`` and passed (or None if new)."""
        index = self.position
        if index < len(self._history):
            recorded = self._history[index]
            if recorded["type"] != type_:
                raise ReplayDivergedError(
                    f"node {self.node_id!r} emitted {type_!r} where its history has {recorded['type']!r}",
                    details={"nodeId": self.node_id, "command": index, "expected": recorded["type"]},
                )
            self.position += 1
            return recorded
        return None

    def record(self, type_: str, payload: Any) -> None:
        """Emit a new command at the next place."""
        self.draft(type_, payload, cmd=True)
        self.position += 1
        self.activation.emitted = self.position

    def emit(self, type_: str, payload: Any) -> None:
        """Emit a command unless the history already holds it at this place."""
        if self.recorded(type_) is None:
            self.record(type_, payload)

    def emit_once(self, type_: str, payload: dict[str, Any], key: str) -> bool:
        """Emit an event identified by ``key`` unless this activation already did; True when emitted now."""
        if (type_, key) in self._once_seen:
            return False
        self._once_seen.add((type_, key))
        draft = EventDraft(
            event_id=self._host.new_id("evt"),
            type=type_,
            payload={**payload, "_once": key},
            timestamp_ms=self._host.clock_now_ms(),
            node_id=self.node_id,
            activation=(self.node_id, self.visit, ONCE_BASE + self._once_count),
        )
        self._once_count += 1
        self.activation.drafts.append(draft)
        self.activation.once = self._once_count
        return True
