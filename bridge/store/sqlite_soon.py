"""Values that go with the next commit: adapters' derived state, written without a commit of its own.

A value derived from committed data (the AG-UI messages projection: a fold of
a run's events and the sequence it reaches) costs only work when it is lost, so
it need not wait for a durable commit. :class:`SoonValues` holds such values
until the store's next transaction, which writes them first, each in one
statement (which SQLite undoes alone when it fails, no savepoint needed): a
value that fails to write is dropped and the transaction it rides on goes on.
Reads see a held value at once. A crash loses what was held, which is the
point: nothing acknowledged depends on it.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from openwop_bridge.core.errors import ValidationError
from openwop_bridge.core.records import has_nul
from openwop_bridge.store import plan_kv
from openwop_bridge.store.codec import dumps, loads
from openwop_bridge.store.sqlite_writer import run_plan

T = TypeVar("T")
log = logging.getLogger("openwop_bridge.store")


class SoonValues:
    """Key-value writes held for the next transaction, last write per key wins."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], tuple[str, int]] = {}

    def __bool__(self) -> bool:
        return bool(self._held)

    def put(self, namespace: str, key: str, value: Any, now_ms: int) -> None:
        """Hold a value (encoded now, so later changes to the caller's objects do not reach it)."""
        if has_nul((namespace, key)):
            raise ValidationError("a stored key must not contain U+0000")
        self._held[namespace, key] = (dumps(value), now_ms)

    def get(self, namespace: str, key: str) -> tuple[bool, Any]:
        """``(True, value)`` when a value is held for the key, else ``(False, None)``."""
        held = self._held.get((namespace, key))
        return (False, None) if held is None else (True, loads(held[0]))

    def under(self, namespace: str, prefix: str) -> dict[str, Any]:
        """The values held for the keys of ``namespace`` that start with ``prefix``."""
        return {k: loads(text) for (ns, k), (text, _) in self._held.items() if ns == namespace and k.startswith(prefix)}

    def riding(self, fn: Callable[[sqlite3.Connection], T]) -> Callable[[sqlite3.Connection], T]:
        """``fn`` preceded by the held writes, which leave this holder."""
        held, self._held = self._held, {}

        def with_held(conn: sqlite3.Connection) -> T:
            for (namespace, key), (text, now_ms) in held.items():
                try:  # one statement: SQLite undoes a failed one alone, no savepoint needed
                    run_plan(conn, plan_kv.kv_put_text(namespace, key, text, now_ms, False))
                except sqlite3.Error:
                    if not conn.in_transaction:  # the error ended the transaction: ``fn`` cannot go on
                        raise
                    log.exception("derived adapter state was not written; it will be derived again")
            return fn(conn)

        return with_held
