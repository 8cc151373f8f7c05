"""The store contract: what the engine needs from a database, and nothing more.

Two kinds of writes exist, and both are one short transaction:

- :meth:`Store.commit` — the run's executor (the one owner holding the run's
  lease, fenced by ``epoch``) appends events and replaces the run's state.
- :meth:`Store.mutate_interrupt` / :meth:`Store.mutate_run` — anyone (an HTTP
  request, a timer, a parent cancelling its children) applies a *pure* decision
  function to the current rows inside the transaction. The function returns a
  :class:`Mutation`; the store applies it and bumps the run's ``wake`` counter so
  the executor, wherever it lives, notices.

No correctness rests on process-local locks: the ``pending`` status guard, the
``epoch`` fence and the ``wake`` counter are all checked inside the database.
"""

from __future__ import annotations

from typing import Protocol

from openwop_bridge.store.contract import (
    AnalyticsStore,
    DecisionRecordStore,
    IdempotencyStore,
    InterruptStore,
    KeyValueStore,
    OutboxStore,
    RunLogStore,
    RunStore,
    SigningKeyStore,
    StoreLifecycle,
)
from openwop_bridge.store.values import (
    IDEMPOTENCY_COLS,
    IDEMPOTENCY_PRUNE,
    KV_SCAN_MAX,
    AnswerStepResult,
    ChildStart,
    Claim,
    CommitResult,
    IdempotencyRecord,
    InboxPage,
    KvWrite,
    MutationResult,
    RunCommit,
    idempotency_from_row,
)

__all__ = [
    "IDEMPOTENCY_COLS",
    "IDEMPOTENCY_PRUNE",
    "KV_SCAN_MAX",
    "AnalyticsStore",
    "AnswerStepResult",
    "ChildStart",
    "Claim",
    "CommitResult",
    "IdempotencyRecord",
    "IdempotencyStore",
    "InboxPage",
    "InterruptStore",
    "KeyValueStore",
    "KvWrite",
    "MutationResult",
    "OutboxStore",
    "RunCommit",
    "RunLogStore",
    "RunStore",
    "SigningKeyStore",
    "Store",
    "StoreLifecycle",
    "idempotency_from_row",
]


class Store(
    StoreLifecycle,
    SigningKeyStore,
    RunStore,
    RunLogStore,
    InterruptStore,
    KeyValueStore,
    IdempotencyStore,
    OutboxStore,
    AnalyticsStore,
    DecisionRecordStore,
    Protocol,
):
    """Persistence for runs, events, interrupts and signing keys.

    Besides the queries, a store declares what it can do:

    - ``single_instance``: True when one server owns the database (SQLite's
      lock file sees to it); the engine then resets stale leases at start-up
      (:meth:`reset_owners`). A store shared by several instances
      (PostgreSQL) says False.
    - :meth:`listen`: how a shared store tells this instance about work
      committed elsewhere; a single-instance store has nothing to tell.
    - ``transient_errors``: exception types meaning the database is
      unreachable for now (a lost connection, a pool timeout). An executor that
      meets one stops without failing its run, and the run is picked up again
      once its lease runs out; an HTTP request that meets one gets a 503.

    The methods are declared by concern in :mod:`openwop_bridge.store.contract`: its lifecycle
    (:class:`~openwop_bridge.store.contract.lifecycle.StoreLifecycle`), signing keys, runs, their logs
    (events and audit), interrupts, adapters' key-value state, ``Idempotency-Key`` records, the outbox and
    the reads of reports, and the decision record.
    """
