"""``Idempotency-Key`` records in a store."""

from __future__ import annotations

from typing import Protocol

from openwop_bridge.store.values import IdempotencyRecord


class IdempotencyStore(Protocol):
    """One record per ``Idempotency-Key``: taken, finished with its response, or released."""

    async def idempotency_begin(
        self, key_id: str, digest: str, owner: str, now_ms: int, *, lease_ms: int, ttl_ms: int
    ) -> IdempotencyRecord | None:
        """Take a key for a request, or return the record already holding it.

        None means ``owner`` now holds a new pending record (expiring at
        ``now_ms + ttl_ms``): it handles the request and then calls
        :meth:`idempotency_finish` or :meth:`idempotency_release`. A record past
        its expiry counts as absent; a pending record of the same digest whose
        lease ran out (its owner died) is taken over. Every call also deletes a
        few expired records, so storage stays bounded by the retention window.
        """

    async def idempotency_finish(
        self, key_id: str, owner: str, status: int, headers: dict[str, str], body: str
    ) -> bool:
        """Record the final response of the request ``owner`` handled; False if it no longer holds the key."""

    async def idempotency_release(self, key_id: str, owner: str) -> None:
        """Forget a pending record (its request failed in a way a retry may fix)."""
