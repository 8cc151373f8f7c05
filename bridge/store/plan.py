"""The run and interrupt write transactions of both stores, written once as plans of statements.

A plan is a generator of :mod:`openwop_bridge.store.steps`: it yields a statement and receives the rows it
returned, so the decisions between statements are made here, once, while each store only runs the
statements on its own connection (synchronously on SQLite's writer thread, awaited on a PostgreSQL
connection). Statements are neutral text that the :class:`~openwop_bridge.store.codec.Dialect` turns into
the database's own. The key-value, idempotency and signing-key plans are in :mod:`openwop_bridge.store.plan_kv`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openwop_bridge.core import statuses
from openwop_bridge.core.errors import (
    BridgeError,
    InterruptNotFoundError,
    KeyTakenError,
    RunNotFoundError,
    StaleOwnerError,
    ValidationError,
)
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import (
    TERMINAL_RUN_STATUSES,
    InterruptDecision,
    InterruptRecord,
    Mutation,
    RunDecision,
    RunRecord,
    cancel_committed,
    has_nul,
)
from openwop_bridge.core.records import replaced as replace
from openwop_bridge.core.statuses import OPEN_INTERRUPT, RunStatus
from openwop_bridge.store import codec, plan_close, plan_status
from openwop_bridge.store.base import AnswerStepResult, Claim, CommitResult, KvWrite, MutationResult, RunCommit
from openwop_bridge.store.codec import INT_COLS, RUN_COLS, TERMINAL_SQL, Dialect
from openwop_bridge.store.plan_kv import kv_put_text, kv_replace_text
from openwop_bridge.store.steps import Ahead, Note, Plan, Planned, Recorded, Rows, Sql

Decided = tuple[MutationResult, BridgeError | None]


def _new_run(run: RunRecord, writes: Sequence[KvWrite]) -> Plan[None]:
    """Check a new run's identifiers and write the adapters' ``writes`` that go with it."""
    if has_nul((run.run_id, run.tenant, run.workflow_id)):
        raise ValidationError("run identifiers and tenants must not contain U+0000")
    for w in writes:
        if w.expected is not None:
            if not (yield from kv_replace_text(w.namespace, w.key, w.expected, w.text, w.now_ms)):
                raise KeyTakenError(f"{w.namespace} {w.key!r} changed meanwhile", details={"key": w.key})
        elif not (yield from kv_put_text(w.namespace, w.key, w.text, w.now_ms, w.only_if_absent)):
            raise KeyTakenError(f"{w.namespace} {w.key!r} is stored already", details={"key": w.key})


def insert_run(
    run: RunRecord, events: Sequence[EventDraft], writes: Sequence[KvWrite] = ()
) -> Plan[list[dict[str, Any]]]:
    """Insert a run and its first events, and the adapters' ``writes`` that go with it."""
    yield from _new_run(run, writes)
    docs, rows = codec.event_rows(run.run_id, 0, events)
    yield Sql(codec.INSERT_RUN, codec.run_params(run, len(rows)))
    if rows:
        yield Sql(codec.INSERT_EVENT, rows, many=True)
        yield Note("events", run.run_id)
        yield Planned(run, docs, (), run.created_at_ms)
    return docs


#: Columns of ``runs`` that hold JSON, written as ``%s::json``.
_JSON_RUN_COLS = frozenset({"state", "control"})


def _run_sets(
    c: RunCommit, start: int, appended: int, closed_as: str | None, released: bool, answered: dict[str, Any]
) -> dict[str, Any]:
    """The columns an executor's commit writes to the run's row, by name (JSON as text), with those an
    answer in the same transaction set (``answered``, see :func:`answer_and_step`) where the step leaves them."""
    sets = dict(answered)
    sets["updated_at"] = c.now_ms
    sets["next_seq"] = start + appended
    if c.state is not None:
        sets["state"] = codec.dumps(c.state)
    if c.status is not None and (c.terminal or not closed_as):
        # A run whose cancel committed stays ``cancelling`` until its executor ends it.
        sets["status"] = c.status
    if c.terminal:
        sets["completed_at"] = c.now_ms
    if c.terminal or released:
        sets.update(owner=None, lease_until=None, needs_work=False)
    return sets


def _run_update(run_id: str, sets: dict[str, Any]) -> Sql:
    """The one ``UPDATE runs`` of an executor's commit (``sets``: see :func:`_run_sets`)."""
    columns = ", ".join(f"{k}=%s::json" if k in _JSON_RUN_COLS else f"{k}=%s" for k in sets)
    return Sql(f"UPDATE runs SET {columns} WHERE run_id=%s", (*sets.values(), run_id))


def _new_interrupts(c: RunCommit, docs: list[dict[str, Any]]) -> Plan[None]:
    """Insert the interrupts the step opened (those it closes are closed already: :func:`plan_close.closing`)."""
    by_event = {d["eventId"]: d["sequence"] for d in docs}
    for intr in c.new_interrupts:
        if intr.requested_seq is None and intr.requested_event_id in by_event:
            intr.requested_seq = by_event[intr.requested_event_id]
    if c.new_interrupts:
        yield Sql(codec.INSERT_INTERRUPT, [codec.interrupt_params(i) for i in c.new_interrupts], many=True)
    deadlines = [i.deadline_ms for i in c.new_interrupts if i.open and i.deadline_ms is not None]
    if deadlines:
        # Every instance's timer hears of it, not only this one's: the deadline fires on time even if this one dies.
        yield Note("deadline", c.run_id, at_ms=min(deadlines))


def _fence(d: Dialect, c: RunCommit, held: RunRecord | None) -> Plan[tuple[str | None, int, int, int, RunStatus, Any]]:
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


def commit(
    d: Dialect, c: RunCommit, held: RunRecord | None = None, answered: dict[str, Any] | None = None
) -> Plan[CommitResult]:
    """An executor's step, fenced by its owner and epoch, under the run's row lock.

    With ``c.create``, the run is inserted as the step leaves it: a new run and its first step are one
    transaction, and its row is written once. ``held`` is the run's row as this transaction left it, when
    it wrote the row already (no need to read it); ``answered`` is what an answer before it in this
    transaction left to write to that row (one ``UPDATE``).
    """
    events = c.events
    if c.create is not None:
        # Not inserted yet: the fence is the new row itself, and its first events come before the step's.
        yield from _new_run(c.create.run, c.create.writes)
        new = c.create.run
        owner, epoch, start, wake, status, control = new.owner, new.epoch, 0, new.wake, new.status, new.control
        events = [*c.create.events, *c.events]
    else:
        owner, epoch, start, wake, status, control = yield from _fence(d, c, held)
    if owner != c.owner or epoch != c.epoch:
        raise StaleOwnerError(f"run {c.run_id} is owned by another executor")
    # Under the run's lock, so a cancel is either committed here or waits for this commit.
    closed_as = cancel_committed(status, control)
    reported = yield from plan_status.own_status(c)
    if reported != c.status:
        c = replace(c, status=reported)
    # What the step closes, or the cancel closes of it, and one ``interrupt.resolved`` for each.
    events = [*events, *(yield from plan_close.closing(d, c, closed_as, control))]
    docs, rows = codec.event_rows(c.run_id, start, events)
    # ``wake`` cannot move while this transaction holds the row, so the release check needs no statement of its own.
    released = c.release_if_wake is not None and not c.terminal and c.release_if_wake == wake
    sets = _run_sets(c, start, len(rows), closed_as, released, answered or {})
    if "status" in sets:
        statuses.check_run(status, sets["status"])
    if c.create is not None:
        yield Sql(codec.INSERT_RUN, codec.run_params(c.create.run, len(rows), sets))
        yield Note("locked", c.run_id)
    if rows:
        yield Sql(codec.INSERT_EVENT, rows, many=True)
    yield from _new_interrupts(c, docs)
    planned = c.create.run if c.create is not None else c.run
    if planned is not None and (docs or c.new_interrupts):
        yield Planned(planned, docs, [i for i in c.new_interrupts if i.open], c.now_ms)
    if c.consume:
        yield Sql("UPDATE interrupts SET consumed=TRUE WHERE interrupt_id=%s", [(i,) for i in c.consume], many=True)
    if c.create is None:
        yield _run_update(c.run_id, sets)
    if docs:
        yield Note("events", c.run_id)
    child_events: dict[str, list[dict[str, Any]]] = {}
    for child in c.children:
        child_events[child.run.run_id] = yield from insert_run(child.run, child.events)
        yield Note("events", child.run.run_id)
    if c.parent_run_id and sets.get("status", status) != status:
        yield from plan_status.to_parents(d, c.parent_run_id)
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


def _update_interrupt(intr: InterruptRecord, m: Mutation, consume: bool) -> Plan[InterruptRecord]:
    """The decided interrupt's new status, state and resolution (and, with ``consume``, its consumption
    by the step that follows in the same transaction).

    ``intr`` is the row as read under the lock, so the row this ``UPDATE`` leaves is known without
    reading it back (JSON values as the database returns them: parsed from the text written).
    """
    if not (m.interrupt_status or m.interrupt_state is not None or m.resolution is not None or consume):
        return intr
    if m.interrupt_status is not None:
        statuses.check_interrupt(intr.status, m.interrupt_status)
    state = None if m.interrupt_state is None else codec.dumps(m.interrupt_state)
    resolution = None if m.resolution is None else codec.dumps(m.resolution)
    answer = codec.answer_text(intr.kind, m.interrupt_status or intr.status, m.resolution)
    consumed = ", consumed=TRUE" if consume else ""
    yield Sql(
        "UPDATE interrupts SET status=COALESCE(%s, status), state=COALESCE(%s::json, state), "
        "resolution=COALESCE(%s::json, resolution), resolved_at=COALESCE(%s, resolved_at), "
        f"answer=COALESCE(%s::json, answer){consumed} WHERE interrupt_id=%s",
        (m.interrupt_status, state, resolution, m.resolved_at_ms, answer, intr.interrupt_id),
    )
    return replace(
        intr,
        consumed=intr.consumed or consume,
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


def _run_after(run: RunRecord, m: Mutation, appended: int, now_ms: int, lease: Claim | None) -> RunRecord:
    """The run's row once ``m`` woke it, set its status and control, moved its event counter and, with
    ``lease``, leased it (``run``: the row as read under the lock)."""
    next_seq = run.next_seq + appended
    if not (m.wake or m.run_status or m.control is not None):
        return replace(run, next_seq=next_seq) if appended else run
    if m.run_status is not None:
        statuses.check_run(run.status, m.run_status)
    after = replace(
        run,
        wake=run.wake + int(m.wake),
        needs_work=run.needs_work or bool(m.wake),
        status=run.status if m.run_status is None else m.run_status,
        control=run.control if m.control is None else codec.loads(codec.dumps(m.control)),
        updated_at_ms=now_ms,
        next_seq=next_seq,
    )
    if lease is None:
        return after
    return replace(after, owner=lease.owner, lease_until_ms=now_ms + lease.lease_ms, epoch=run.epoch + 1)


def _update_run(run: RunRecord, m: Mutation, appended: int, now_ms: int, lease: Claim | None) -> Plan[RunRecord]:
    """Wake the run, set its status and control requests, move its event counter and, with ``lease``, lease it.

    ``run`` is the row as read under the lock: the row the ``UPDATE`` leaves is known without reading it back.
    """
    after = _run_after(run, m, appended, now_ms, lease)
    if not (m.wake or m.run_status or m.control is not None):
        if appended:
            yield Sql("UPDATE runs SET next_seq=%s WHERE run_id=%s", (after.next_seq, run.run_id))
        return after
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
            after.next_seq,
            *(() if lease is None else (lease.owner, after.lease_until_ms)),
            run.run_id,
        ),
    )
    return after


def _answered_columns(after: RunRecord, m: Mutation) -> dict[str, Any]:
    """What an answer's ``UPDATE runs`` writes, as the values ``after`` holds: for the step that follows it
    in the same transaction to write with its own (the row is locked, so these are its values)."""
    columns: dict[str, Any] = {
        "wake": after.wake,
        "needs_work": after.needs_work,
        "status": after.status,
        "owner": after.owner,
        "lease_until": after.lease_until_ms,
        "epoch": after.epoch,
    }
    if m.control is not None:
        columns["control"] = codec.dumps(after.control)
    return columns


def apply(
    d: Dialect,
    run: RunRecord,
    intr: InterruptRecord | None,
    m: Mutation,
    now_ms: int,
    claim: Claim | None,
    *,
    defer_run: bool = False,
    consume: bool = False,
) -> Plan[MutationResult]:
    """Apply a decision's :class:`Mutation`; the run's row is locked already.

    With ``defer_run``, the run's row is left to the step that follows in the same transaction
    (:func:`answer_and_step`): the result's run is the row as it will be, nothing is written to it here;
    with ``consume``, that step consumes the interrupt, which is marked so by the answer's ``UPDATE``.
    """
    after_int = intr if intr is None else (yield from _update_interrupt(intr, m, consume))
    if m.cancel_interrupts:
        statuses.check_interrupt(OPEN_INTERRUPT, m.cancel_interrupts)
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
    lease = claim if claimed else None
    if defer_run:
        after_run = _run_after(run, m, len(rows), now_ms, lease)
    else:
        after_run = yield from _update_run(run, m, len(rows), now_ms, lease)
    if docs:
        yield Planned(after_run, docs, (), now_ms)
    if m.audit:
        yield Sql(codec.INSERT_AUDIT, codec.audit_params(run.tenant, run.run_id, now_ms, m.audit), many=True)
    if m.records:
        yield Recorded(run.tenant, run.run_id, m.records, now_ms)
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
) -> Plan[AnswerStepResult]:
    """An answer ``decided`` on the rows ``seen``, then the step it woke, in one transaction.

    The decision applies only if neither row changed since; otherwise it is taken again under
    the lock and the step, resumed on what no longer holds, is left out. The step is also left
    out unless the answer leased the run to the step's epoch.
    """
    run_seen, intr_seen = seen
    run, rows = yield from _locked(d, _run_lock(d, run_seen.run_id), _interrupt_lock(d, intr_seen.interrupt_id))
    if run is None or not rows:
        raise InterruptNotFoundError("no interrupt at this address")
    intr = d.interrupt(rows[0])
    if run_version(run) != run_version(run_seen) or intr != intr_seen:
        again = decide(intr, run)
        return AnswerStepResult((yield from apply(d, run, intr, again, now_ms, claim)), again.error, None, False)
    return (yield from answer_as_seen(d, run, intr, decided, now_ms, claim, step))


def answer_as_seen(
    d: Dialect,
    run: RunRecord,
    intr: InterruptRecord,
    decided: Mutation,
    now_ms: int,
    claim: Claim,
    step: RunCommit | None,
) -> Plan[AnswerStepResult]:
    """An answer ``decided`` on ``run`` and ``intr``, the rows as they are under the lock (so, as seen),
    then the step it woke (when the answer leases the run to the step's epoch), in the same transaction."""
    # The step goes in only if the answer leases the run to the step's epoch; then the run's row is
    # written once, by the step's UPDATE, with what the answer set.
    joined = step is not None and _claimable(run, decided, claim, now_ms) and run.epoch + 1 == step.epoch
    # Likewise the interrupt's row, when the step consumes the interrupt the answer settles.
    consume = joined and step is not None and intr.interrupt_id in step.consume
    result = yield from apply(d, run, intr, decided, now_ms, claim, defer_run=joined, consume=consume)
    if step is None or not joined or result.run is None:
        return AnswerStepResult(result, decided.error, None, True)
    if consume:
        step = replace(step, consume=[i for i in step.consume if i != intr.interrupt_id])
    # The answer's lease left the run's row locked, and the row it leaves is the one the step is fenced by.
    answered = _answered_columns(result.run, decided)
    return AnswerStepResult(result, decided.error, (yield from commit(d, step, result.run, answered)), True)
