"""The values the store contract takes and returns: commits, mutations, claims, records of its own.

They belong to the store layer; decisions take the core's records (:mod:`openwop_bridge.core.records`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from openwop_bridge.core.errors import BridgeError
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.core.statuses import InterruptStatus, RunStatus


@dataclass(slots=True)
class MutationResult:
    """What the store did with a :class:`Mutation`."""

    events: list[dict[str, Any]]
    run: RunRecord | None
    interrupt: InterruptRecord | None
    result: Any
    #: The mutation woke the run and leased it to the :class:`Claim`'s owner in the same transaction.
    claimed: bool = False


@dataclass(frozen=True, slots=True)
class Claim:
    """Lease a run the mutation wakes to ``owner`` in the same transaction, if nobody holds it.

    Saves the separate claim transaction the executor would otherwise start with.
    """

    owner: str
    lease_ms: int


@dataclass(frozen=True, slots=True)
class KvWrite:
    """An adapter's key-value write that goes in the transaction creating a run (see :meth:`Store.create_run`).

    ``text`` is the value's JSON, encoded when the write is made (later changes to
    the caller's objects do not reach it). With ``only_if_absent``, a key already
    stored refuses the whole transaction (:class:`~openwop_bridge.core.errors.KeyTakenError`):
    the run is not created either; with ``expected`` (JSON text), so does a key that
    no longer holds it (a compare-and-set).
    """

    namespace: str
    key: str
    text: str
    now_ms: int
    only_if_absent: bool = False
    expected: str | None = None


@dataclass(slots=True)
class ChildStart:
    """A run created in the same transaction as a commit: a child with its parent's, a new run with its first step.

    ``writes`` go in that transaction too (a new run's, :meth:`Store.create_run`).
    """

    run: RunRecord
    events: list[EventDraft]
    writes: Sequence[KvWrite] = ()


@dataclass(slots=True)
class RunCommit:
    """One durable step of a run's executor."""

    run_id: str
    owner: str
    epoch: int
    now_ms: int
    events: list[EventDraft] = field(default_factory=list)
    state: dict[str, Any] | None = None
    status: RunStatus | None = None
    new_interrupts: list[InterruptRecord] = field(default_factory=list)
    consume: list[str] = field(default_factory=list)
    close_interrupts: dict[str, InterruptStatus] = field(default_factory=dict)  # id → new status
    children: list[ChildStart] = field(default_factory=list)
    wake_run: str | None = None  # e.g. the parent, when this run ends
    parent_run_id: str | None = None  # the run's parent, whose stored status follows a waiting child's
    release_if_wake: int | None = None  # release ownership if wake is still this value
    terminal: bool = False
    create: ChildStart | None = None  # the run itself, inserted by its first step's transaction
    #: The run as its executor holds it (identity, tenant, spec), for the notice planners; None: plan nothing.
    run: RunRecord | None = None


@dataclass(slots=True)
class CommitResult:
    """Committed event documents and whether ownership was released."""

    events: list[dict[str, Any]]
    released: bool
    wake: int
    child_events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AnswerStepResult:
    """What :meth:`Store.answer_and_step` did with an answer and the step it woke, in one transaction."""

    #: The answer's mutation, as applied.
    mutation: MutationResult
    #: The decision's error, not raised: the caller raises it once the transaction committed (its audit stays).
    error: BridgeError | None
    #: The step's commit; None when the step was left out of the transaction.
    step: CommitResult | None
    #: Whether the run and interrupt rows were still those the answer was decided on (else it was decided again).
    as_seen: bool


@dataclass(slots=True)
class IdempotencyRecord:
    """What the store keeps for one ``Idempotency-Key``: the request's digest and, once final, its response.

    ``status`` is None while the first request is still being handled (``owner``
    holds it until ``lease_until_ms``); afterwards the record carries the response
    to replay, until ``expires_at_ms``.
    """

    key_id: str  # a digest of (tenant, principal, endpoint, key): the key itself is not stored
    digest: str
    expires_at_ms: int
    owner: str | None = None
    lease_until_ms: int | None = None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None

    @property
    def pending(self) -> bool:
        """The first request holding this key has not finished yet."""
        return self.status is None


#: The most pairs one :meth:`Store.kv_scan` page holds, whatever the caller asks for.
KV_SCAN_MAX = 500


IDEMPOTENCY_COLS = "key_id, digest, expires_at, owner, lease_until, status, headers, body"
#: Expired ``Idempotency-Key`` records deleted by each new one: more than are added, so they never pile up.
IDEMPOTENCY_PRUNE = 16


def idempotency_from_row(row: Sequence[Any]) -> IdempotencyRecord:
    """An :class:`IdempotencyRecord` from a row of :data:`IDEMPOTENCY_COLS` (headers as JSON text)."""
    return IdempotencyRecord(
        key_id=row[0],
        digest=row[1],
        expires_at_ms=row[2],
        owner=row[3],
        lease_until_ms=row[4],
        status=row[5],
        headers=orjson.loads(row[6]) if row[6] else {},
        body=row[7],
    )


@dataclass(slots=True)
class InboxPage:
    """One page of the pending-interrupts inbox."""

    items: list[InterruptRecord]
    next_cursor: str | None
