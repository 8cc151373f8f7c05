"""The AG-UI messages of an OpenWOP run, kept as a projection beside the run.

``MESSAGES_SNAPSHOT`` shows every message of the thread. Rather than re-read the
run's whole event log on every request, the adapter keeps the messages folded so
far and the sequence number they reach in its key-value state (``agui.messages``,
keyed by run id). A request folds the events it streams, reads from the store
only the events past the saved cursor that it did not stream, and saves the
fold again, so its cost follows what is new, not the length of the thread. The
fold is saved as derived state, with the store's next commit rather than one of
its own, so saving it costs the request no durable commit.

The projection is derived from committed events alone: a lost or stale one (two
requests saving in turn) is only read further from its own cursor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ag_ui.core import Message

from openwop_bridge import Engine
from openwop_bridge.agui.translate import MessageFold

NAMESPACE = "agui.messages"
#: Events read per page when catching up.
PAGE = 1000


class MessagesProjection:
    """A run's messages folded up to ``cursor`` (the last sequence number folded)."""

    def __init__(self, run_id: str, cursor: int = -1, fold: MessageFold | None = None) -> None:
        self.run_id = run_id
        self.cursor = cursor
        self.fold = fold or MessageFold()
        self._saved = cursor

    @classmethod
    async def load(cls, engine: Engine, run_id: str) -> MessagesProjection:
        """The saved projection of a run, or an empty one."""
        raw = await engine.adapter_state(NAMESPACE).get(run_id)
        if not isinstance(raw, Mapping) or raw.get("runId") != run_id or not isinstance(raw.get("cursor"), int):
            return cls(run_id)
        return cls(run_id, raw["cursor"], MessageFold.from_json(raw))

    def feed(self, doc: Mapping[str, Any]) -> None:
        """Fold an event the request streams, when it is the next one (others are read in :meth:`catch_up`)."""
        if doc["sequence"] == self.cursor + 1:
            self.fold.feed(doc)
            self.cursor = doc["sequence"]

    async def catch_up(self, engine: Engine, last_seq: int | None = None) -> None:
        """Fold the run's committed events past the cursor (none to read when it reaches ``last_seq`` already)."""
        while last_seq is None or self.cursor < last_seq:
            docs = await engine.run_events(self.run_id, self.cursor, PAGE)
            for doc in docs:
                if doc["sequence"] > self.cursor:
                    self.fold.feed(doc)
                    self.cursor = doc["sequence"]
            if len(docs) < PAGE:
                return

    async def save(self, engine: Engine) -> None:
        """Store the projection when it moved since it was loaded."""
        if self.cursor != self._saved:
            await engine.adapter_state(NAMESPACE).put_derived(
                self.run_id, {"runId": self.run_id, "cursor": self.cursor, **self.fold.as_json()}
            )
            self._saved = self.cursor

    @property
    def messages(self) -> list[Message]:
        """The messages folded so far, in order, each id once."""
        return self.fold.messages
