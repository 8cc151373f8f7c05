"""The ``Idempotency-Key`` records of an engine: take a key, record the final response, or let it go.

The HTTP host decides which requests and responses count
(:mod:`openwop_bridge.host.http.idempotency`); these records keep that decision in the
store so it survives restarts and is shared by every instance.
"""

from __future__ import annotations

from openwop_bridge.core.clock import Clock
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.store.base import IdempotencyRecord, Store

__all__ = ["IdempotencyLedger", "IdempotencyRecord"]


class IdempotencyLedger:
    """Idempotency-Key records over one store."""

    def __init__(self, store: Store, clock: Clock, config: EngineConfig) -> None:
        self._store = store
        self._clock = clock
        self._config = config

    async def begin(self, key_id: str, digest: str, owner: str, *, lease_ms: int) -> IdempotencyRecord | None:
        """Take a key for a request (None: ``owner`` holds it now), or the record already holding it.

        A new record lives ``EngineConfig.idempotency_ttl_ms``.
        """
        return await self._store.idempotency_begin(
            key_id, digest, owner, self._clock.now_ms(), lease_ms=lease_ms, ttl_ms=self._config.idempotency_ttl_ms
        )

    async def finish(self, key_id: str, owner: str, status: int, headers: dict[str, str], body: str) -> bool:
        """Record the final response; False if ``owner`` no longer holds the key."""
        return await self._store.idempotency_finish(key_id, owner, status, headers, body)

    async def release(self, key_id: str, owner: str) -> None:
        """Forget a pending record (its request failed in a way a retry may fix)."""
        await self._store.idempotency_release(key_id, owner)
