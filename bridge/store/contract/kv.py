"""The adapters' own small state in a store: JSON values by namespace and key."""

from __future__ import annotations

from typing import Any, Protocol

from openwop_bridge.store.steps import Recorded


class KeyValueStore(Protocol):
    """Adapters' key-value state: get, scan, put (plain, capped, compare-and-set, soon), forget."""

    async def kv_get(self, namespace: str, key: str) -> Any:
        """A JSON value stored by an adapter, or None."""

    async def kv_scan(
        self, namespace: str, prefix: str, *, limit: int, after: str | None = None, descending: bool = True
    ) -> list[tuple[str, Any]]:
        """The ``(key, value)`` pairs of ``namespace`` whose key starts with ``prefix``, one keyset page.

        Keys are ordered by their UTF-8 bytes, from the greatest (``descending``) or the
        least; ``after`` (the last key of the previous page) resumes past it. A page holds
        ``limit`` pairs at most, and never more than :data:`KV_SCAN_MAX`: fewer means the
        range is done. One range of the primary key is read, whatever else the namespace holds.
        """

    async def kv_put(self, namespace: str, key: str, value: Any, now_ms: int, *, only_if_absent: bool = False) -> bool:
        """Store a JSON value; with ``only_if_absent`` returns False when the key exists."""

    async def kv_put_capped(
        self,
        namespace: str,
        key: str,
        value: dict[str, Any],
        now_ms: int,
        *,
        field: str,
        cap: int,
        recorded: Recorded | None = None,
    ) -> bool:
        """Store a new JSON object unless ``namespace`` already holds ``cap`` objects with the same top-level
        ``field`` value (or the key exists): False, nothing stored. The count and the insert are one transaction,
        serialized against every other such put of that value, on every instance sharing the database; with
        ``recorded``, so are the decision records it appends when it stores."""

    async def kv_replace(
        self, namespace: str, key: str, expected: Any, value: Any, now_ms: int, *, recorded: Recorded | None = None
    ) -> bool:
        """Compare-and-set: store ``value`` only if the key holds ``expected`` now; False (nothing stored) if not.
        With ``recorded``, the decision records it appends when it stores, in the same transaction."""

    async def kv_forget_if(self, namespace: str, key: str, expected: Any) -> bool:
        """Compare-and-delete: delete the key only if it holds ``expected`` now; False (nothing deleted) if not."""

    async def kv_put_soon(self, namespace: str, key: str, value: Any, now_ms: int) -> None:
        """Store a value derived from committed data, whose loss costs only work.

        It may go with a later transaction instead of a commit of its own (reads
        see it at once); a crash before then loses it. Stores without a group
        commit write it at once.
        """

    async def kv_forget_before(self, namespace: str, before_ms: int) -> int:
        """Delete an adapter's values last written before ``before_ms`` (expiry); returns how many."""
