"""The decision record in a store: each tenant's chain of signed records, read a page at a time."""

from __future__ import annotations

from typing import NamedTuple, Protocol

import orjson


class Signer(Protocol):
    """What signs a record's JCS form (:class:`~openwop_bridge.core.record_signature.RecordKey`)."""

    @property
    def kid(self) -> str:
        """The signing key's id."""

    def sign(self, payload: bytes) -> str:
        """The signature over ``payload``, base64url."""


class StoredRecord(NamedTuple):
    """One record as stored: its tenant and sequence number, its JCS text, hash, signing key and signature."""

    tenant: str
    seq: int
    body: str
    hash: str
    kid: str
    signature: str

    def line(self) -> bytes:
        """The record's export line, ``{"record", "hash", "kid", "signature"}`` (no newline), the record as stored."""
        return b"".join(
            (
                b'{"record":',
                self.body.encode("utf-8"),
                b',"hash":',
                orjson.dumps(self.hash),
                b',"kid":',
                orjson.dumps(self.kid),
                b',"signature":',
                orjson.dumps(self.signature),
                b"}",
            )
        )


class DecisionRecordStore(Protocol):
    """The decision record: appended by the decisions' own transactions (:mod:`openwop_bridge.store.plan_records`)."""

    #: Who signs the records; while None, decisions append none.
    decision_signer: Signer | None

    async def decision_records(
        self, tenant: str | None, limit: int, *, after: tuple[str, int] | None = None
    ) -> list[StoredRecord]:
        """Up to ``limit`` records of ``tenant`` (every tenant's when None) in ``(tenant, seq)`` order, after
        ``after`` when given: one range of the records' primary key."""

    async def interrupt_decision_records(self, interrupt_id: str, limit: int) -> list[StoredRecord]:
        """The first ``limit`` records of decisions on one interrupt, in sequence order."""
