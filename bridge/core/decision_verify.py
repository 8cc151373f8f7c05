"""Checking an export of the decision record offline: every hash, link and signature, line by line.

An export is JSON Lines, each line ``{"record", "hash", "kid", "signature"}``
(:mod:`openwop_bridge.core.decision_record`), one chain per tenant, each chain in sequence order from
its first record (tenants' lines may interleave). :func:`verify_lines` reads them one at a time
(memory does not grow with the export) and stops at the first line that does not hold, saying which
record of which tenant broke and how:

- ``edited``: the record's content no longer has its hash (or the hash was changed with it, and the
  signature no longer matches);
- ``missing`` / ``out of order``: the sequence skips or goes back: the record expected there is named;
- ``unlinked``: the record does not name the previous record's hash;
- ``unsigned``: the signature is malformed or made by a key the key set does not hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from openwop_bridge.core.decision_record import GENESIS, canonical, digest
from openwop_bridge.core.record_signature import SignatureError, verify

__all__ = ["Break", "Verdict", "verify_lines"]


@dataclass(frozen=True, slots=True)
class Break:
    """The first place an export does not hold: its line, the tenant and record sequence, and why."""

    line: int
    tenant: str | None
    seq: int | None
    reason: str

    def __str__(self) -> str:
        where = f"record {self.seq}" if self.seq is not None else "a record"
        whose = f" of tenant {self.tenant!r}" if self.tenant is not None else ""
        return f"line {self.line}: {where}{whose}: {self.reason}"


@dataclass(slots=True)
class Verdict:
    """What a check found: records checked per tenant, the keys that signed them, and the first break."""

    records: int = 0
    tenants: dict[str, int] = field(default_factory=dict)
    kids: set[str] = field(default_factory=set)
    broken: Break | None = None

    @property
    def holds(self) -> bool:
        """Whether every line held."""
        return self.broken is None


def _parse(raw: str | bytes) -> tuple[dict[str, Any], str, str, str] | None:
    try:
        line = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(line, dict):
        return None
    record, hashed, kid, signature = line.get("record"), line.get("hash"), line.get("kid"), line.get("signature")
    if not (
        isinstance(record, dict) and isinstance(hashed, str) and isinstance(kid, str) and isinstance(signature, str)
    ):
        return None
    return record, hashed, kid, signature


def _seq(record: Mapping[str, Any]) -> int | None:
    seq = record.get("seq")
    return seq if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 1 else None


def verify_lines(
    lines: Iterable[str | bytes], keys: Mapping[str, Ed25519PublicKey], *, partial: bool = False
) -> Verdict:
    """Check an export's lines (blank lines are skipped) against the public ``keys`` (by ``kid``).

    Each tenant's chain must start at its first record and run without a gap, unless ``partial`` (a receipt, a
    page after a cursor): then every record's hash and signature are checked, the records must come in sequence
    order, and each one right after another (``seq`` one more) must link to it; a gap is no break (a receipt
    holds one interrupt's records, with others' between them). Only a whole export shows that nothing is missing.
    """
    verdict = Verdict()
    heads: dict[str, tuple[int, str]] = {}  # tenant -> (last seq, last hash)
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        parsed = _parse(raw)
        if parsed is None:
            verdict.broken = Break(number, None, None, 'not a record line ({"record", "hash", "kid", "signature"})')
            return verdict
        record, hashed, kid, signature = parsed
        tenant = record.get("tenant")
        tenant = tenant if isinstance(tenant, str) else None
        seq = _seq(record)
        if tenant is None or seq is None:
            verdict.broken = Break(number, tenant, seq, "edited: the record lacks its tenant or sequence number")
            return verdict
        last_seq, last_hash = heads.get(tenant, (0, GENESIS))
        if partial and seq > last_seq + 1:
            last_seq, last_hash = seq - 1, str(record.get("prev"))  # a gap: the record is checked on its own
        if seq != last_seq + 1:
            expected = last_seq + 1
            why = "missing" if seq > expected else "out of order"
            verdict.broken = Break(
                number, tenant, expected, f"{why}: expected record {expected} after {last_seq}, found record {seq}"
            )
            return verdict
        if digest(record) != hashed:
            verdict.broken = Break(number, tenant, seq, "edited: its content does not match its hash")
            return verdict
        try:
            verify(kid, signature, canonical(record), keys)
        except SignatureError as exc:
            verdict.broken = Break(number, tenant, seq, f"unsigned: {exc}")
            return verdict
        if record.get("prev") != last_hash:
            verdict.broken = Break(
                number, tenant, seq, f"unlinked: it does not name the hash of record {last_seq} as its prev"
            )
            return verdict
        heads[tenant] = (seq, hashed)
        verdict.records += 1
        verdict.tenants[tenant] = seq
        verdict.kids.add(kid)
    return verdict
