"""The verifiable decision record: every decision appends one signed record to its tenant's hash chain.

A decision (a vote, an override, an answer, a conversation turn, a cancel, a timeout, a refusal by
policy, a delegation made or ended) hands the store a :class:`DecisionDraft`; the store turns it into
a record in the decision's own transaction (:mod:`openwop_bridge.store.plan_records`): the next
sequence number of the tenant's chain, the time, and the previous record's hash. A record is a JSON
object (:func:`record_of`); its hash is the SHA-256 of its JCS form (RFC 8785, :func:`canonical`), and
the host signs that same form (:mod:`openwop_bridge.core.record_signature`). An exported line is
``{"record": …, "hash": "sha256:…", "kid": "<the signing key's id>", "signature": "<Ed25519, base64url>"}``.

What a record holds of the decision: its kind (``decision``), the interrupt and run, the action
taken, who decided (``by``, and ``subject`` ``{issuer, subjectId, lane}`` with an ``actor`` when
someone acted in another's place, and the ``delegation`` used), the assurance actually used, and the
hashes of the payload the person was shown (``shownHash``) and of the value given (``valueHash``),
each the :func:`digest` of its JCS form, so an auditor holding the interrupt can recompute them.

Editing a record changes its hash; removing or reordering records breaks the sequence or the
``prev`` link of the next one (:mod:`openwop_bridge.core.decision_verify`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import rfc8785

from openwop_bridge.core.auth import API_KEY_ISSUER, Principal
from openwop_bridge.core.clock import iso_ms

__all__ = [
    "DECISIONS",
    "GENESIS",
    "RECORD_VERSION",
    "DecisionDraft",
    "canonical",
    "digest",
    "principal_subject",
    "record_of",
]

#: The version of a record's shape (``v``).
RECORD_VERSION = 1
#: The ``prev`` of a tenant's first record.
GENESIS = "sha256:" + "0" * 64
#: What a record may say was decided.
DECISIONS = frozenset(
    {
        "vote",
        "override",
        "answer",
        "turn",
        "cancel",
        "timeout",
        "denial",
        "delegation.created",
        "delegation.ended",
    }
)
#: The largest integer JCS writes as it is; JSON numbers are IEEE 754 doubles (RFC 8785 §3.2.2.3).
_EXACT = 2**53 - 1


@dataclass(frozen=True, slots=True)
class DecisionDraft:
    """What a decision tells the store to record; the store adds the chain's sequence, time and link.

    ``shown_hash`` and ``value_hash`` are :func:`digest` values (None when nothing was shown or given);
    ``subject`` is ``{issuer, subjectId, lane}``, with an ``actor`` of the same shape when the person
    acting is not the one whose decision it is.
    """

    record_id: str
    decision: str
    by: str
    subject: Mapping[str, Any] | None = None
    interrupt_id: str | None = None
    node_id: str | None = None
    kind: str | None = None
    action: str | None = None
    assurance: str | None = None
    delegation: str | None = None
    shown_hash: str | None = None
    value_hash: str | None = None
    #: Why, for a cancel (its reason: ``undeliverable`` when the notify policy failed it), a timeout or a denial.
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.decision not in DECISIONS:
            raise ValueError(f"unknown decision {self.decision!r}")


def _exact(value: Any) -> Any:
    """``value`` with integers JCS cannot write exactly turned into the doubles every JSON reader makes them."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if -_EXACT <= value <= _EXACT else float(value)
    if isinstance(value, Mapping):
        return {k: _exact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_exact(v) for v in value]
    return value


def _plain(value: Any) -> bool:
    """Whether ``value`` holds only what JCS and orjson's sorted output write alike: objects with printable
    ASCII keys, arrays, printable ASCII strings, booleans, null and integers JCS writes exactly (no floats)."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, str):
        return value.isascii() and value.isprintable()
    if isinstance(value, int):
        return -_EXACT <= value <= _EXACT
    if isinstance(value, dict):
        return all(isinstance(k, str) and k.isascii() and k.isprintable() and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return False


def canonical(value: Any) -> bytes:
    """The JCS form (RFC 8785) of a JSON value: sorted keys, no spaces, numbers as ECMAScript writes them.

    A value of printable ASCII strings, integers, booleans and null is written by orjson with sorted keys
    (the same bytes, faster); anything else by the JCS implementation. An integer beyond ±(2^53 - 1) is
    written as the double a JSON reader takes it for, as JCS requires.
    """
    if _plain(value):
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    try:
        return rfc8785.dumps(value)
    except rfc8785.IntegerDomainError:
        return rfc8785.dumps(_exact(value))


def digest(value: Any) -> str:
    """``sha256:<hex>`` of the JCS form of ``value``."""
    return "sha256:" + hashlib.sha256(canonical(value)).hexdigest()


def principal_subject(principal: Principal) -> dict[str, str]:
    """``{issuer, subjectId, lane}`` of a principal: its credential's subject, else its API key's (key realm)."""
    if principal.subject is not None:
        return principal.subject.ref()
    return {"issuer": API_KEY_ISSUER, "subjectId": principal.id, "lane": "api-key"}


def record_of(
    draft: DecisionDraft, *, tenant: str, run_id: str | None, seq: int, at_ms: int, prev: str
) -> dict[str, Any]:
    """The record of ``draft`` as number ``seq`` of ``tenant``'s chain, after the record hashed ``prev``."""
    record: dict[str, Any] = {
        "v": RECORD_VERSION,
        "id": draft.record_id,
        "seq": seq,
        "at": iso_ms(at_ms),
        "tenant": tenant,
        "runId": run_id,
        "interruptId": draft.interrupt_id,
        "nodeId": draft.node_id,
        "kind": draft.kind,
        "decision": draft.decision,
        "action": draft.action,
        "by": draft.by,
        "subject": None if draft.subject is None else dict(draft.subject),
        "assurance": draft.assurance,
        "delegation": draft.delegation,
        "shownHash": draft.shown_hash,
        "valueHash": draft.value_hash,
        "reason": draft.reason,
        "prev": prev,
    }
    return record
