"""The decision record's keys and reads over one engine (:mod:`openwop_bridge.core.decision_record`).

**Keys.** The records are signed with Ed25519 keys made from the link-signing keys (one 32-byte seed
each, :meth:`~openwop_bridge.runtime.links.LinkService.derived_keys` for :data:`KEY_PURPOSE`): they are
kept and rotated with them (``openwop-bridge keys rotate``), every instance sharing the database signs
with the same key, and the active link key's record key signs. Each record key's public half is written
to the store (namespace :data:`PUBLIC_KEYS`) the first time an instance uses it and is never removed, so
the key set (``GET /v1/audit/keys``) keeps verifying old records after a rotation, and after the link key
it came from is retired.

**Reads.** A tenant's records are read a page of :data:`PAGE` at a time in sequence order (one range of
the store's primary key), so an export of any size holds one page in memory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.errors import ValidationError
from openwop_bridge.core.record_signature import RecordKey
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.runtime.kernel import Kernel
from openwop_bridge.store.contract.records import DecisionRecordStore, StoredRecord
from openwop_bridge.store.cursor import decode_cursor, encode_cursor

__all__ = [
    "AUDIT_SCOPE",
    "KEY_PURPOSE",
    "PAGE",
    "PUBLIC_KEYS",
    "DecisionRecords",
    "StoredRecord",
    "after_cursor",
    "cursor_after",
]

#: The scope reading the record needs.
AUDIT_SCOPE = "audit:read"
#: The purpose the record keys are derived for.
KEY_PURPOSE = "decision-record"
#: The key-value namespace of the record keys' public halves (key: ``kid``, value: the JWK).
PUBLIC_KEYS = "decision-keys"
#: Records read per statement.
PAGE = 1_000
#: The most records one decision's receipt lists (its votes, its turns, what closed it).
RECEIPT_MAX = 1_000


_MAX_SEQ = 2**62


def cursor_after(row: StoredRecord) -> str:
    """The opaque cursor of the records after ``row``."""
    return encode_cursor(row.tenant, row.seq)


def after_cursor(cursor: str) -> tuple[str, int]:
    """``(tenant, seq)`` of a cursor :func:`cursor_after` made; anything else is ``400 validation_error``."""
    parts = decode_cursor(cursor)
    if (
        len(parts) != 2
        or not isinstance(parts[0], str)
        or not isinstance(parts[1], int)
        or isinstance(parts[1], bool)
        or not 0 <= parts[1] <= _MAX_SEQ
    ):
        raise ValidationError("malformed cursor")
    return parts[0], parts[1]


class DecisionRecords:
    """Signing keys of the record, and its pages, stream and receipts (see the module docstring)."""

    def __init__(self, kernel: Kernel, *, enabled: bool = True) -> None:
        self._k = kernel
        self._enabled = enabled
        self._published: set[str] = set()
        self.active_kid: str | None = None

    @property
    def enabled(self) -> bool:
        """Whether decisions append records (an engine made with ``decision_record=False`` keeps none)."""
        return self._enabled

    async def use_keys(self, seeds: list[bytes]) -> None:
        """Sign with the key of the first seed (the active link key's) and publish every key's public half."""
        if not seeds:
            return
        keys = [RecordKey.from_seed(seed) for seed in seeds]
        for key in keys:
            if key.kid not in self._published:
                await self._k.store.kv_put(
                    PUBLIC_KEYS, key.kid, key.public_jwk(), self._k.clock.now_ms(), only_if_absent=True
                )
                self._published.add(key.kid)
        self.active_kid = keys[0].kid
        if self._enabled:
            self._k.store.decision_signer = keys[0]

    async def public_keys(self) -> dict[str, Any]:
        """The JWK set of every key that ever signed a record here, oldest id first."""
        keys: list[dict[str, Any]] = []
        after: str | None = None
        while True:
            page = await self._k.store.kv_scan(PUBLIC_KEYS, "", limit=500, after=after, descending=False)
            keys += [value for _, value in page if isinstance(value, dict)]
            if len(page) < 500:
                return {"keys": keys}
            after = page[-1][0]

    @staticmethod
    def _tenant(principal: Principal) -> str | None:
        principal.require(AUDIT_SCOPE)
        return None if principal.tenant == "*" else principal.tenant

    async def page(self, principal: Principal, limit: int, after: tuple[str, int] | None = None) -> list[StoredRecord]:
        """A page of the records the caller may read (scope ``audit:read``; its tenant's, every tenant's for
        ``*``) in ``(tenant, seq)`` order after ``after``."""
        if not 1 <= limit <= PAGE:
            raise ValidationError(f"limit must be between 1 and {PAGE}")
        return await self._k.store.decision_records(self._tenant(principal), limit, after=after)

    async def stream(self, principal: Principal, after: tuple[str, int] | None = None) -> AsyncIterator[bytes]:
        """Every record the caller may read after ``after``, as export lines (each ending in a newline), read a
        page at a time."""
        tenant = self._tenant(principal)
        async for line in export_lines(self._k.store, tenant, after):
            yield line

    async def receipt(self, record: InterruptRecord) -> list[StoredRecord]:
        """The records of the decisions on one interrupt (found and checked visible by the caller), oldest first."""
        return await self._k.store.interrupt_decision_records(record.interrupt_id, RECEIPT_MAX)


async def export_lines(
    store: DecisionRecordStore, tenant: str | None, after: tuple[str, int] | None = None
) -> AsyncIterator[bytes]:
    """Every stored record of ``tenant`` (every tenant's when None) after ``after``, as export lines, read a page
    of :data:`PAGE` at a time (for ``GET /v1/audit/decisions`` and ``openwop-bridge audit export``)."""
    while True:
        rows = await store.decision_records(tenant, PAGE, after=after)
        for row in rows:
            yield row.line() + b"\n"
        if len(rows) < PAGE:
            return
        after = (rows[-1].tenant, rows[-1].seq)
