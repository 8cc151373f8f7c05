"""The write transactions of both stores, written once as plans of statements.

A plan is a generator: it yields a :class:`Sql` statement (or a :class:`Note`)
and receives the rows the statement returned, so the decisions between
statements are made here, once, while each store only runs the statements on
its own connection (synchronously on SQLite's writer thread, awaited on a
PostgreSQL connection). Statements are neutral text that the
:class:`~bridge.store.codec.Dialect` turns into the database's own.

:class:`Note` steps run nothing: they tell the store what the transaction did
(a run's row is locked, a run gained events, a run was woken), which
PostgreSQL turns into its return order and its notices to other instances.
:class:`Ahead` steps announce statements to come, which PostgreSQL sends at once
in its pipeline; SQLite, which runs one statement at a time in process, skips both.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from bridge.core.errors import (
    BridgeError,
    InterruptNotFoundError,
    KeyTakenError,
    RunNotFoundError,
    StaleOwnerError,
    ValidationError,
)
from bridge.core.events import EventDraft
from bridge.core.records import (
    TERMINAL_RUN_STATUSES,
    InterruptDecision,
    InterruptRecord,
    Mutation,
    RunDecision,
    RunRecord,
    cancel_committed,
    has_nul,
)
from bridge.store import codec
from bridge.store.base import Claim, CommitResult, KvWrite, MutationResult, RunCommit
from bridge.store.codec import INT_COLS, RUN_COLS, TERMINAL_SQL, Dialect

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Sql:
    """One statement in neutral text; with ``many``, ``args`` is a list of parameter tuples."""

    text: str
    args: Sequence[Any] = ()
    many: bool = False


@dataclass(frozen=True, slots=True)
class Ahead:
    """A statement the plan yields next (or soon after): a store may send it now without waiting for it.

    The plan then yields ``sql`` itself and gets its rows as usual; a store that runs one statement at
    a time ignores this step.
    """

    sql: Sql


@dataclass(frozen=True, slots=True)
class Note:
    """What the transaction did to a run, for stores that tell other instances."""

    what: Literal["locked", "events", "wake"]
    run_id: str
    owner: str | None = None


Rows = list[tuple[Any, ...]]
Plan = Generator[Sql | Note | Ahead, Rows, T]
Decided = tuple[MutationResult, BridgeError | None]


def insert_run(
    run: RunRecord, events: Sequence[EventDraft], writes: Sequence[KvWrite] = ()
) -> Plan[list[dict[str, Any]]]:
    """Insert a run and its first events, and the adapters' ``writes`` that go with it."""
    if has_nul((run.run_id, run.tenant, run.workflow_id)):
        raise ValidationError("run identifiers and tenants must not contain U+0000")
    for w in writes:
        if w.expected is not None:
            if not (yield from _kv_replace_text(w.namespace, w.key, w.expected, w.text, w.now_ms)):
                raise KeyTakenError(f"{w.namespace} {w.key!r} changed meanwhile", details={"key": w.key})
        elif not (yield from _kv_put_text(w.namespace, w.key, w.text, w.now_ms, w.only_if_absent)):
            raise KeyTakenError(f"{w.namespace} {w.key!r} is stored already", details={"key": w.key})
    docs, rows = codec.event_rows(run.run_id, 0, events)
    yield Sql(codec.INSERT_RUN, codec.run_params(run, len(rows)))
    if rows:
        yield Sql(codec.INSERT_EVENT, rows, many=True)
        yield Note("events", run.run_id)
    return docs


def _run_updates(c: RunCommit, start: int, appended: int, closed_as: str | None, released: bool) -> Sql:
    """The one ``UPDATE runs`` of an executor's commit."""
    sets = ["updated_at=%s", "next_seq=%s"]
    args: list[Any] = [c.now_ms, start + appended]
    if c.state is not None:
        sets.append("state=%s::json")
        args.append(codec.dumps(c.state))
    if c.status is not None and (c.terminal or not closed_as):
        # A run whose cancel committed stays ``cancelling`` until its executor ends it.
        sets.append("status=%s")
        args.append(c.status)
    if c.terminal:
        sets += ["completed_at=%s", "owner=NULL", "lease_until=NULL", "needs_work=FALSE"]
        args.append(c.now_ms)
    if released:
        sets += ["owner=NULL", "lease_until=NULL", "needs_work=FALSE"]
    return Sql(f"UPDATE runs SET {', '.join(sets)} WHERE run_id=%s", (*args, c.run_id))


def _new_interrupts(c: RunCommit, docs: list[dict[str, Any]], closed_as: str | None) -> Plan[None]:
    """Insert the interrupts the step opened (closed at once if the run's cancel committed first)."""
    by_event = {d["eventId"]: d["sequence"] for d in docs}
    for intr in c.new_interrupts:
        if intr.requested_seq is None and intr.requested_event_id in by_event:
            intr.requested_seq = by_event[intr.requested_event_id]
        if closed_as and intr.open:
            # The run's cancel committed first: nobody may answer this interrupt.
            intr.status, intr.resolved_at_ms = closed_as, c.now_ms
    if c.new_interrupts:
        yield Sql(codec.INSERT_INTERRUPT, [codec.interrupt_params(i) for i in c.new_interrupts], many=True)
    if closed_as:
        yield Sql(
            "UPDATE interrupts SET status=%s, resolved_at=%s WHERE run_id=%s AND status='pending'",
            (closed_as, c.now_ms, c.run_id),
        )


def _fence(d: Dialect, c: RunCommit, held: RunRecord | None) -> Plan[tuple[str | None, int, int, int, str, Any]]:
    """The run row a commit is fenced by, locked: ``held`` when this transaction wrote it already."""
    if held is not None:
        # Inserted or updated by this same transaction: its row is locked and its values are these.
        yield Note("locked", c.run_id)
        return held.owner, held.epoch, held.next_seq, held.wake, held.status, held.control or None
    found = yield Sql(
        f"SELECT owner, epoch, next_seq, wake, status, control FROM runs WHERE run_id=%s{d.lock}", (c.run_id,)
    )
    if not found:
        raise RunNotFoundError(f"run {c.run_id} does not exist")
    yield Note("locked", c.run_id)
    owner, epoch, start, wake, status, control = found[0]
    return owner, epoch, start, wake, status, d.json_in(control)


def commit(d: Dialect, c: RunCommit, held: RunRecord | None = None) -> Plan[CommitResult]:
    """An executor's step, fenced by its owner and epoch, under the run's row lock.

    With ``c.create``, the run is inserted first: a new run and its first step are one transaction.
    ``held`` is the run's row as this transaction left it, when it wrote the row already (no need to read it).
    """
    created: list[dict[str, Any]] = []
    step_events: Sequence[EventDraft] = c.events
    if c.create is not None:
        # The new run's first events and the step's are numbered on and inserted together.
        created = yield from insert_run(c.create.run, [*c.create.events, *c.events], c.create.writes)
        held = replace(c.create.run, next_seq=len(created))
        step_events = ()
    owner, epoch, start, wake, status, control = yield from _fence(d, c, held)
    if owner != c.owner or epoch != c.epoch:
        raise StaleOwnerError(f"run {c.run_id} is owned by another executor")
    # Under the run's lock, so a cancel is either committed here or waits for this commit.
    closed_as = cancel_committed(status, control)
    step_docs, rows = codec.event_rows(c.run_id, start, step_events)
    if rows:
        yield Sql(codec.INSERT_EVENT, rows, many=True)
    docs = created + step_docs
    yield from _new_interrupts(c, docs, closed_as)
    if c.consume:
        yield Sql("UPDATE interrupts SET consumed=TRUE WHERE interrupt_id=%s", [(i,) for i in c.consume], many=True)
    for iid, new_status in c.close_interrupts.items():
        yield Sql(
            "UPDATE interrupts SET status=%s, resolved_at=%s WHERE interrupt_id=%s AND status='pending'",
            (new_status, c.now_ms, iid),
        )
    # ``wake`` cannot move while this transaction holds the row, so the release check needs no statement of its own.
    released = c.release_if_wake is not None and not c.terminal and c.release_if_wake == wake
    yield _run_updates(c, start, len(rows), closed_as, released)
    if docs:
        yield Note("events", c.run_id)
    child_events: dict[str, list[dict[str, Any]]] = {}
    for child in c.children:
        child_events[child.run.run_id] = yield from insert_run(child.run, child.events)
        yield Note("events", child.run.run_id)
    if c.wake_run:
        woken = yield Sql(
            f"UPDATE runs SET wake=wake+1, needs_work=TRUE WHERE run_id=%s AND status NOT IN {TERMINAL_SQL} "
            "RETURNING owner",
            (c.wake_run,),
        )
        if woken:
            yield Note("locked", c.wake_run)
            yield Note("wake", c.wake_run, woken[0][0])
    return CommitResult(docs, released, wake, child_events)


def _update_interrupt(intr: InterruptRecord, m: Mutation) -> Plan[InterruptRecord]:
    """The decided interrupt's new status, state and resolution.

    ``intr`` is the row as read under the lock, so the row this ``UPDATE`` leaves is known without
    reading it back (JSON values as the database returns them: parsed from the text written).
    """
    if not (m.interrupt_status or m.interrupt_state is not None or m.resolution is not None):
        return intr
    state = None if m.interrupt_state is None else codec.dumps(m.interrupt_state)
    resolution = None if m.resolution is None else codec.dumps(m.resolution)
    yield Sql(
        "UPDATE interrupts SET status=COALESCE(%s, status), state=COALESCE(%s::json, state), "
        "resolution=COALESCE(%s::json, resolution), resolved_at=COALESCE(%s, resolved_at) WHERE interrupt_id=%s",
        (m.interrupt_status, state, resolution, m.resolved_at_ms, intr.interrupt_id),
    )
    return replace(
        intr,
        status=intr.status if m.interrupt_status is None else m.interrupt_status,
        state=intr.state if state is None else codec.loads(state) or {},
        resolution=intr.resolution if resolution is None else codec.loads(resolution),
        resolved_at_ms=intr.resolved_at_ms if m.resolved_at_ms is None else m.resolved_at_ms,
    )


def _claimable(run: RunRecord, m: Mutation, claim: Claim | None, now_ms: int) -> bool:
    """Whether the mutation leases the run it wakes to ``claim``: the run's row is locked and read, so its
    status after ``m`` and its lease decide it here, and the lease goes in the same ``UPDATE``."""
    status = run.status if m.run_status is None else m.run_status
    if not m.wake or claim is None or status in TERMINAL_RUN_STATUSES:
        return False
    return run.owner is None or (run.lease_until_ms is not None and run.lease_until_ms < now_ms)


def _update_run(run: RunRecord, m: Mutation, appended: int, now_ms: int, lease: Claim | None) -> Plan[RunRecord]:
    """Wake the run, set its status and control requests, move its event counter and, with ``lease``, lease it.

    ``run`` is the row as read under the lock: the row the ``UPDATE`` leaves is known without reading it back.
    """
    next_seq = run.next_seq + appended
    if not (m.wake or m.run_status or m.control is not None):
        if not appended:
            return run
        yield Sql("UPDATE runs SET next_seq=%s WHERE run_id=%s", (next_seq, run.run_id))
        return replace(run, next_seq=next_seq)
    control = None if m.control is None else codec.dumps(m.control)
    leased = ", owner=%s, lease_until=%s, epoch=epoch+1" if lease is not None else ""
    yield Sql(
        "UPDATE runs SET wake=wake+%s, needs_work=(needs_work OR %s), status=COALESCE(%s, status), "
        f"control=COALESCE(%s::json, control), updated_at=%s, next_seq=%s{leased} WHERE run_id=%s",
        (
            int(m.wake),
            m.wake,
            m.run_status,
            control,
            now_ms,
            next_seq,
            *(() if lease is None else (lease.owner, now_ms + lease.lease_ms)),
            run.run_id,
        ),
    )
    after = replace(
        run,
        wake=run.wake + int(m.wake),
        needs_work=run.needs_work or bool(m.wake),
        status=run.status if m.run_status is None else m.run_status,
        control=run.control if control is None else codec.loads(control),
        updated_at_ms=now_ms,
        next_seq=next_seq,
    )
    if lease is None:
        return after
    return replace(after, owner=lease.owner, lease_until_ms=now_ms + lease.lease_ms, epoch=run.epoch + 1)


def apply(
    d: Dialect, run: RunRecord, intr: InterruptRecord | None, m: Mutation, now_ms: int, claim: Claim | None
) -> Plan[MutationResult]:
    """Apply a decision's :class:`Mutation`; the run's row is locked already."""
    after_int = intr if intr is None else (yield from _update_interrupt(intr, m))
    if m.cancel_interrupts:
        cancelled = yield Sql(
            "UPDATE interrupts SET status=%s, resolved_at=%s WHERE run_id=%s AND status='pending' "
            f"RETURNING {INT_COLS}",
            (m.cancel_interrupts, now_ms, run.run_id),
        )
        for row in cancelled:
            if intr is not None and row[0] == intr.interrupt_id:
                after_int = d.interrupt(row)
    docs, rows = codec.event_rows(run.run_id, run.next_seq, m.events)
    if rows:
        yield Sql(codec.INSERT_EVENT, rows, many=True)
        yield Note("events", run.run_id)
    claimed = _claimable(run, m, claim, now_ms)
    after_run = yield from _update_run(run, m, len(rows), now_ms, claim if claimed else None)
    if m.audit:
        yield Sql(codec.INSERT_AUDIT, codec.audit_params(run.tenant, run.run_id, now_ms, m.audit), many=True)
    if m.wake and not claimed:
        yield Note("wake", run.run_id, after_run.owner)
    return MutationResult(docs, after_run, after_int, m.result, claimed)


def _locked(d: Dialect, run: Sql, interrupts: Sql) -> Plan[tuple[RunRecord | None, Rows]]:
    """The run's row, locked, then the rows of its interrupts ``interrupts`` selects, locked after it:
    every writer of a run takes the run's row first, then its interrupts.

    Both statements are announced first (:class:`Ahead`), so a store that pipelines them sends them
    together; the server still runs the second only once the first holds the run's lock.
    """
    yield Ahead(run)
    yield Ahead(interrupts)
    found = yield run
    if not found:
        return None, []
    yield Note("locked", found[0][0])
    return d.run(found[0]), (yield interrupts)


def _run_lock(d: Dialect, run_id: str | None) -> Sql:
    return Sql(f"SELECT {RUN_COLS} FROM runs WHERE run_id=%s{d.lock}", (run_id,))


def _interrupt_lock(d: Dialect, interrupt_id: str) -> Sql:
    return Sql(f"SELECT {INT_COLS} FROM interrupts WHERE interrupt_id=%s{d.lock}", (interrupt_id,))


def mutate_interrupt(
    d: Dialect,
    decide: InterruptDecision,
    now_ms: int,
    claim: Claim | None,
    interrupt_id: str | None,
    run_id: str | None,
    node_id: str | None,
) -> Plan[Decided]:
    """Decide on one interrupt (by id or by run-scoped address) and apply the decision."""
    if has_nul((interrupt_id, run_id, node_id)):
        raise InterruptNotFoundError("no interrupt at this address")
    if interrupt_id is not None:
        by_id = Sql(
            f"SELECT {RUN_COLS} FROM runs WHERE run_id=(SELECT run_id FROM interrupts WHERE interrupt_id=%s){d.lock}",
            (interrupt_id,),
        )
        run, rows = yield from _locked(d, by_id, _interrupt_lock(d, interrupt_id))
    else:
        at = Sql(
            f"SELECT {INT_COLS} FROM interrupts WHERE run_id=%s AND node_id=%s "
            f"ORDER BY requested_at DESC, ordinal DESC LIMIT 1{d.lock}",
            (run_id, node_id),
        )
        run, rows = yield from _locked(d, _run_lock(d, run_id), at)
    if run is None or not rows:
        raise InterruptNotFoundError("no interrupt at this address")
    intr = d.interrupt(rows[0])
    m = decide(intr, run)
    return (yield from apply(d, run, intr, m, now_ms, claim)), m.error


def mutate_run(d: Dialect, run_id: str, decide: RunDecision, now_ms: int, claim: Claim | None) -> Plan[Decided]:
    """Decide on a run and its open interrupts and apply the decision."""
    if has_nul((run_id,)):
        raise RunNotFoundError(f"run {run_id} does not exist")
    pending = Sql(
        f"SELECT {INT_COLS} FROM interrupts WHERE run_id=%s AND status='pending' ORDER BY requested_at{d.lock}",
        (run_id,),
    )
    run, rows = yield from _locked(d, _run_lock(d, run_id), pending)
    if run is None:
        raise RunNotFoundError(f"run {run_id} does not exist")
    m = decide(run, [d.interrupt(r) for r in rows])
    return (yield from apply(d, run, None, m, now_ms, claim)), m.error


def kv_put(namespace: str, key: str, value: Any, now_ms: int, only_if_absent: bool) -> Plan[bool]:
    """Store an adapter's JSON value; with ``only_if_absent``, False when the key exists."""
    return (yield from _kv_put_text(namespace, key, codec.dumps(value), now_ms, only_if_absent))


def _kv_put_text(namespace: str, key: str, text: str, now_ms: int, only_if_absent: bool) -> Plan[bool]:
    """:func:`kv_put` of a value already encoded."""
    if has_nul((namespace, key)):
        raise ValidationError("a stored key must not contain U+0000")
    on_conflict = (
        "DO NOTHING"
        if only_if_absent
        else "(namespace, key) DO UPDATE SET value=excluded.value, updated_at=excluded.updated_at"
    )
    rows = yield Sql(
        f"INSERT INTO kv(namespace, key, value, updated_at) VALUES(%s,%s,%s::json,%s) ON CONFLICT {on_conflict} "
        "RETURNING 1",
        (namespace, key, text, now_ms),
    )
    return bool(rows) or not only_if_absent


def kv_replace(namespace: str, key: str, expected: Any, value: Any, now_ms: int) -> Plan[bool]:
    """Compare-and-set an adapter's value: replace it only while it is still ``expected`` (compared as stored text)."""
    return (yield from _kv_replace_text(namespace, key, codec.dumps(expected), codec.dumps(value), now_ms))


def _kv_replace_text(namespace: str, key: str, expected: str, text: str, now_ms: int) -> Plan[bool]:
    """:func:`kv_replace` of values already encoded."""
    rows = yield Sql(
        "UPDATE kv SET value=%s::json, updated_at=%s WHERE namespace=%s AND key=%s AND CAST(value AS TEXT)=%s "
        "RETURNING 1",
        (text, now_ms, namespace, key, expected),
    )
    return bool(rows)


def kv_forget_if(namespace: str, key: str, expected: Any) -> Plan[bool]:
    """Compare-and-delete an adapter's value: delete it only while it is still ``expected`` (as stored text)."""
    rows = yield Sql(
        "DELETE FROM kv WHERE namespace=%s AND key=%s AND CAST(value AS TEXT)=%s RETURNING 1",
        (namespace, key, codec.dumps(expected)),
    )
    return bool(rows)


def kv_forget_before(namespace: str, before_ms: int) -> Plan[int]:
    """Delete a namespace's values last written before ``before_ms``; returns how many."""
    rows = yield Sql("DELETE FROM kv WHERE namespace=%s AND updated_at<%s RETURNING 1", (namespace, before_ms))
    return len(rows)


def idempotency_finish(key_id: str, owner: str, status: int, headers: dict[str, str], body: str) -> Plan[bool]:
    """Record the final response of the request ``owner`` handled; False if it no longer holds the key."""
    rows = yield Sql(
        "UPDATE idempotency SET status=%s, headers=%s, body=%s, owner=NULL, lease_until=NULL "
        "WHERE key_id=%s AND owner=%s AND status IS NULL RETURNING key_id",
        (status, codec.dumps(headers), body, key_id, owner),
    )
    return bool(rows)


def idempotency_release(key_id: str, owner: str) -> Plan[None]:
    """Forget a pending record."""
    yield Sql("DELETE FROM idempotency WHERE key_id=%s AND owner=%s AND status IS NULL", (key_id, owner))


def retire_signing_key(kid: str, now_ms: int) -> Plan[None]:
    """Stop a key from verifying."""
    yield Sql("UPDATE signing_keys SET retired_at=%s, active=FALSE WHERE kid=%s", (now_ms, kid))


def run_version(run: RunRecord) -> tuple[Any, ...]:
    """What changes whenever a transaction touches a run's row (its lease renewals aside)."""
    return (run.status, run.owner, run.epoch, run.wake, run.needs_work, run.next_seq, run.updated_at_ms, run.control)


def answer_and_step(
    d: Dialect,
    seen: tuple[RunRecord, InterruptRecord],
    decided: Mutation,
    decide: InterruptDecision,
    now_ms: int,
    claim: Claim,
    step: RunCommit | None,
) -> Plan[tuple[Decided, CommitResult | None, bool]]:
    """An answer ``decided`` on the rows ``seen``, then the step it woke, in one transaction.

    The decision applies only if neither row changed since; otherwise it is taken again under
    the lock and the step, resumed on what no longer holds, is left out. The step is also left
    out unless the answer leased the run to the step's epoch. The last value says whether the rows
    were still those seen.
    """
    run_seen, intr_seen = seen
    run, rows = yield from _locked(d, _run_lock(d, run_seen.run_id), _interrupt_lock(d, intr_seen.interrupt_id))
    if run is None or not rows:
        raise InterruptNotFoundError("no interrupt at this address")
    intr = d.interrupt(rows[0])
    if run_version(run) != run_version(run_seen) or intr != intr_seen:
        again = decide(intr, run)
        return ((yield from apply(d, run, intr, again, now_ms, claim)), again.error), None, False
    result = yield from apply(d, run, intr, decided, now_ms, claim)
    if step is None or not result.claimed or result.run is None or result.run.epoch != step.epoch:
        return (result, decided.error), None, True
    # The answer's lease left the run's row locked, and its RETURNING is the row the step is fenced by.
    return (result, decided.error), (yield from commit(d, step, result.run)), True
