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

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from openwop_bridge.core.errors import BridgeError
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.notices import (
    Audience,
    DeadLetter,
    InterruptNotices,
    Notice,
    NoticeDraft,
    NoticePlanner,
    OutboxLimits,
)
from openwop_bridge.core.records import (
    InterruptDecision,
    InterruptRecord,
    Mutation,
    RunDecision,
    RunRecord,
)
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


class Store(Protocol):
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
    """

    #: One server owns the database; stale leases are reset at start-up.
    single_instance: bool
    #: Exceptions meaning "the database is unreachable for now".
    transient_errors: tuple[type[BaseException], ...]
    #: Where the data lives: a ``postgresql://`` URL or a SQLite file path (``:memory:`` for none), so
    #: that an adapter can keep its own state beside it (LangGraph checkpoints).
    location: str

    @property
    def commits(self) -> int:
        """Durable transactions committed so far (several writes may share one): a cheap counter."""

    def reserve(self) -> None:
        """Claim what only one server may hold before serving (SQLite: its lock file), so a busy
        database is refused in one line before anything starts; a no-op for shared stores.

        Raises :class:`RuntimeError` saying which server holds it.
        """

    async def exists(self) -> bool:
        """Whether the database already holds an openwop-bridge schema; creates nothing."""

    async def open(self) -> None:
        """Connect and migrate."""

    async def close(self) -> None:
        """Release connections and threads."""

    async def listen(
        self,
        instance_id: str,
        on_wake: Callable[[str], None],
        on_events: Callable[[str], None],
        on_deadline: Callable[[int | None], None] | None = None,
    ) -> None:
        """Hear what other instances commit, from now on.

        The store calls ``on_wake(run_id)`` when another instance committed an
        input that woke a run this instance owns (an answer, a cancel, a child
        ending, a new run), ``on_events(run_id)`` when another instance
        committed events of a run, and ``on_deadline(at_ms)`` when another instance
        wrote an interrupt's deadline (None: look at every deadline again). Notifications are sent from inside the
        committing transaction, so they are delivered only for committed work.
        Notices this instance sends carry ``instance_id`` so that it skips its
        own. A single-instance store returns at once and never calls either.
        """

    # --- meta and keys -------------------------------------------------------
    async def signing_keys(self) -> list[tuple[str, str, bool]]:
        """``(kid, secret, active)`` for every key that still verifies."""

    async def add_signing_key(self, kid: str, secret: str, now_ms: int, *, activate: bool) -> None:
        """Store a signing key; when ``activate``, it becomes the only active one."""

    async def retire_signing_key(self, kid: str, now_ms: int) -> None:
        """Stop a key from verifying."""

    # --- runs ---------------------------------------------------------------
    async def create_run(
        self, run: RunRecord, events: Sequence[EventDraft], writes: Sequence[KvWrite] = ()
    ) -> list[dict[str, Any]]:
        """Insert a run and its first events, with adapters' ``writes`` in the same transaction.

        A write ``only_if_absent`` whose key is stored already raises
        :class:`~openwop_bridge.core.errors.KeyTakenError` and nothing is written.
        """

    async def load_run(self, run_id: str) -> RunRecord | None:
        """One run, or None."""

    async def claim_run(self, run_id: str, owner: str, now_ms: int, lease_ms: int) -> RunRecord | None:
        """Take ownership when free (or the lease expired); bumps ``epoch``. None if taken."""

    async def renew_leases(self, owner: str, run_ids: Sequence[str], now_ms: int, lease_ms: int) -> int:
        """Extend this owner's leases on ``run_ids`` (the runs it is executing); returns how many.

        A run the owner holds but no longer executes is left to expire, so
        recovery (here or on another instance) picks it up again.
        """

    async def commit(self, commit: RunCommit) -> CommitResult:
        """Apply an executor step; raises :class:`~openwop_bridge.core.errors.StaleOwnerError` when fenced."""

    def commit_soon(self, commit: RunCommit) -> asyncio.Future[CommitResult]:
        """:meth:`commit`, started now: the future settles once the step is durable (or failed), whether or
        not anyone still awaits it."""

    async def answer_and_step(
        self,
        seen: tuple[RunRecord, InterruptRecord],
        decided: Mutation,
        decide: InterruptDecision,
        now_ms: int,
        claim: Claim,
        step: RunCommit | None,
    ) -> AnswerStepResult:
        """Apply an answer ``decided`` on the rows ``seen`` and the step it woke, in one transaction.

        If either row changed since, ``decide`` runs again under the lock and ``step`` is left out;
        ``step`` is also left out unless the answer leased the run to its epoch.
        """

    async def mutate_run(
        self, run_id: str, decide: RunDecision, now_ms: int, *, claim: Claim | None = None
    ) -> MutationResult:
        """Apply a decision to a run and its open interrupts in one transaction."""

    async def runs_needing_work(self, now_ms: int, limit: int = 500) -> list[str]:
        """Runs that have work and no live owner (recovery, reclaim)."""

    async def child_runs(self, parent_run_id: str) -> list[RunRecord]:
        """Children of a run, oldest first."""

    async def find_child(self, parent_run_id: str, node_id: str, visit: int, ordinal: int) -> str | None:
        """The child a node activation started at ``ordinal``, if it exists."""

    async def release_owned(self, owner: str) -> list[str]:
        """Give up every lease ``owner`` holds, on a graceful stop: its runs are left needing work and unowned,
        and a shared store tells every other instance, so one of them claims each at once. Returns their ids."""

    async def reset_owners(self) -> int:
        """Forget every lease (single-instance stores, at start-up after a crash)."""

    async def list_runs(
        self, tenant: str, *, workflow_id: str | None, status: str | None, limit: int, cursor: str | None
    ) -> tuple[list[RunRecord], str | None]:
        """Runs of a tenant, newest first."""

    # --- events -------------------------------------------------------------
    async def read_events(self, run_id: str, after_seq: int = -1, limit: int = 1000) -> list[dict[str, Any]]:
        """Event documents with ``sequence > after_seq``, in order."""

    async def event_sizes(self, run_id: str, after_seq: int, limit: int) -> list[int]:
        """The stored sizes (bytes) of the first ``limit`` event documents with ``sequence > after_seq``, in order."""

    async def read_event_page(
        self, run_id: str, after_seq: int, limit: int, max_bytes: int
    ) -> tuple[list[dict[str, Any]], bool]:
        """Up to ``limit`` event documents with ``sequence > after_seq`` whose stored sizes fit in ``max_bytes``
        (at least one, however large), in order, and whether the store may hold more after them (False:
        these were the last when read). No document beyond the page is held."""

    async def activation_events(self, run_id: str, node_id: str, visit: int) -> list[dict[str, Any]]:
        """Node-issued events of one activation, in command order."""

    async def events_of_types(self, run_id: str, types: Sequence[str]) -> list[dict[str, Any]]:
        """Event documents of the given types, in order."""

    # --- interrupts ---------------------------------------------------------
    async def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        """One interrupt, or None."""

    async def interrupt_at(self, run_id: str, node_id: str) -> InterruptRecord | None:
        """The latest interrupt at a run-scoped address (``nodeId``)."""

    async def run_and_interrupt_at(self, run_id: str, node_id: str) -> tuple[RunRecord | None, InterruptRecord | None]:
        """A run and the latest interrupt at one of its addresses, read together (one snapshot, one round trip)."""

    async def interrupt_by_key(self, run_id: str, key: str) -> InterruptRecord | None:
        """The interrupt of a run with this key."""

    async def interrupt_at_slot(self, run_id: str, exec_node: str, visit: int, ordinal: int) -> InterruptRecord | None:
        """The interrupt a node raised at a given place in one of its activations."""

    async def node_interrupts(self, run_id: str, exec_node: str) -> list[InterruptRecord]:
        """Every interrupt a workflow node raised in a run."""

    async def exchange_answers(self, run_id: str, exec_node: str, conversation_id: str) -> list[tuple[str, Any]]:
        """``(key, resumeValue)`` of each answered (not closing) exchange of a node's conversation, in turn order
        (the rows' ``answer`` column: see :func:`~openwop_bridge.core.decisions.exchange.kept_answer`)."""

    async def run_interrupts(self, run_id: str, *, open_only: bool) -> list[InterruptRecord]:
        """Interrupts of a run, oldest first."""

    async def unconsumed(self, run_id: str) -> list[InterruptRecord]:
        """Settled interrupts whose node has not yet seen the answer."""

    async def mutate_interrupt(
        self,
        decide: InterruptDecision,
        now_ms: int,
        *,
        interrupt_id: str | None = None,
        run_id: str | None = None,
        node_id: str | None = None,
        claim: Claim | None = None,
    ) -> MutationResult:
        """Apply a decision to one interrupt (by id or by run-scoped address)."""

    async def inbox(self, tenant: str, *, kind: str | None, status: str, limit: int, cursor: str | None) -> InboxPage:
        """Interrupts of a tenant by status (and kind), oldest first, cursor-paginated."""

    async def waiting_on(
        self, tenant: str, audience: Audience, *, limit: int, after: tuple[int, str] | None = None
    ) -> list[InterruptRecord]:
        """The open interrupts of a listed kind in ``tenant`` that may wait on ``audience``'s person (see
        :class:`~openwop_bridge.core.notices.Audience`), oldest first, after ``(requested_at, interrupt_id)``: found by
        who the person is, however many other interrupts wait in the tenant."""

    async def inbox_count(self, tenant: str, *, kind: str | None, status: str) -> int:
        """How many interrupts :meth:`inbox` lists over all its pages (counted in the inbox's index)."""

    async def next_deadline(self) -> int | None:
        """Earliest deadline among open interrupts."""

    async def pending_by_kind(self) -> list[tuple[str, int, int]]:
        """``(kind, open interrupts, earliest requested_at)`` for each kind with open interrupts, every tenant."""

    async def due_interrupts(self, now_ms: int, limit: int = 200) -> list[str]:
        """Open interrupts whose deadline has passed."""

    # --- adapters' own small state ------------------------------------------
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
        self, namespace: str, key: str, value: dict[str, Any], now_ms: int, *, field: str, cap: int
    ) -> bool:
        """Store a new JSON object unless ``namespace`` already holds ``cap`` objects with the same top-level
        ``field`` value (or the key exists): False, nothing stored. The count and the insert are one transaction,
        serialized against every other such put of that value, on every instance sharing the database."""

    async def kv_replace(self, namespace: str, key: str, expected: Any, value: Any, now_ms: int) -> bool:
        """Compare-and-set: store ``value`` only if the key holds ``expected`` now; False (nothing stored) if not."""

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

    async def audit(self, run_id: str) -> list[dict[str, Any]]:
        """Audit entries of a run, oldest first."""

    async def audit_page(self, run_id: str, after_id: int, limit: int) -> list[tuple[int, dict[str, Any]]]:
        """Up to ``limit`` audit entries of a run after the one numbered ``after_id``, oldest first, numbered."""

    # --- Idempotency-Key records ----------------------------------------------
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

    # --- the outbox (see :mod:`openwop_bridge.store.plan_outbox`) ------------------------------
    #: Planners asked, in every transaction that commits run events or opens interrupts, for the notices it owes.
    notice_planners: tuple[NoticePlanner, ...]
    #: Caps on queued notices, checked as notices are written.
    outbox_limits: OutboxLimits
    #: How many notices the planners have written through this store (a cheap counter; may count a few of
    #: transactions that failed afterwards).
    notices_written: int
    #: The channels of those notices, each with its count (None until the first is written).
    notices_written_by_channel: Counter[str] | None
    #: When set and true, no planner would plan anything now: transactions skip planning altogether.
    notices_idle: Callable[[], bool] | None

    async def outbox_add(self, tenant: str, run_id: str, drafts: Sequence[NoticeDraft], now_ms: int) -> list[str]:
        """Write notices of a run now, in a transaction of their own (reminders, escalations); their ids.

        A draft's ``not_before_ms`` in the future makes it a durable delayed notice.
        """

    async def outbox_claim(
        self,
        owner: str,
        now_ms: int,
        lease_ms: int,
        limit: int,
        channels: Sequence[str] = ("webhook",),
        busy: Sequence[str] = (),
        *,
        busy_tenants: Sequence[str] = (),
    ) -> list[Notice]:
        """Lease up to ``limit`` due notices of ``channels`` to ``owner`` for ``lease_ms`` (each attempt numbered),
        oldest first, none addressed to the recipients ``busy`` nor of the tenants ``busy_tenants``.

        Several instances may claim at once: each notice goes to one of them; a lease that runs out
        makes the notice due again for every instance.
        """

    async def outbox_settle(
        self,
        notice_id: str,
        owner: str,
        attempt: int,
        status: str,
        next_attempt_ms: int,
        error: str | None,
        now_ms: int,
    ) -> bool:
        """Record attempt ``attempt``'s outcome (``delivered``, ``dead``, or ``queued`` for ``next_attempt_ms``);
        False when ``owner`` no longer holds that attempt."""

    async def outbox_release(self, notice_ids: Sequence[str], owner: str, next_attempt_ms: int) -> int:
        """Give back claimed notices not attempted (their attempt uncounted), due again at ``next_attempt_ms``."""

    async def outbox_next_due(self, channels: Sequence[str] | None = None) -> int | None:
        """When the earliest queued notice is due (or its lease runs out); of ``channels`` only, if named."""

    async def outbox_of_interrupts(self, interrupt_ids: Sequence[str], per_interrupt: int = 100) -> InterruptNotices:
        """The people-channel notices of the interrupts named (at most ``per_interrupt`` times as many as there
        are interrupts, oldest first), and which of them are undeliverable (every first notice died)."""

    async def outbox_queued(self) -> int:
        """How many notices are queued (waiting or being attempted), every tenant."""

    async def outbox_prune(self, now_ms: int) -> int:
        """Delete delivered notices and dead letters past their retention (a batch); returns how many."""

    async def outbox_redrive(
        self,
        channel: str,
        recipient: str,
        tenant: str,
        notice_ids: Sequence[str] | None,
        now_ms: int,
        *,
        cap: int,
        limit: int = 100,
    ) -> list[str]:
        """Queue a destination's dead letters within ``tenant`` again, due now, with their ids and payloads and
        their attempts counted afresh: those named (or, with None, its oldest ``limit``) that are still kept and
        kept their payload, as many as its queue (``cap``) and the tenant's have room for; the ids queued."""

    async def outbox_dead_letters(
        self, channel: str, recipient: str, tenant: str, *, limit: int, after: str | None = None
    ) -> list[DeadLetter]:
        """One page of a destination's dead letters within ``tenant``, newest first, older than the id ``after``;
        each with the ``eventId`` and ``eventType`` its payload names (nothing else of it)."""

    async def outbox_states(self, notice_ids: Sequence[str]) -> dict[str, tuple[str, int, str | None]]:
        """``notice_id → (status, attempts made, last error)`` for the notices named."""
