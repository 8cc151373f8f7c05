"""An answer and the step it woke in one message to PostgreSQL, guarded by the rows the engine read before.

The plan both stores share (:func:`openwop_bridge.store.plan.answer_and_step`) locks and reads the run's and
the interrupt's rows, compares them with those the engine decided on, and only then writes: two
messages, since the writes wait for the rows. Here the comparison travels to the server instead, as
the first two statements of the transaction, and every statement after them is sent in the same
message as ``BEGIN`` and ``COMMIT``.

Each guard takes its row's lock as the shared plan's reads do (the run's first, then the
interrupt's), and checks that the row still holds what the engine read: every column a transaction
may change, compared under the lock (PostgreSQL re-reads a row that changed while the guard waited
for its lock, and compares what it finds). When a row differs, or is gone, the guard fails with an
error: the server runs nothing more of the message, nothing of the transaction commits, and the
store runs the shared plan instead (:func:`missed`), which decides again on the rows it finds. Of two
answers to one interrupt, the second's guards wait for the first's lock and then find the rows the
first left; exactly one of them applies.

A guard that passes proves what the shared plan's comparison would: the rows under the lock are
those seen, so the decision applies as taken, on those rows (:func:`openwop_bridge.store.plan.answer_as_seen`).
The run's lease is compared too, since whether the answer leases the run to this instance depends
on it. Only runs without a control request are guarded (the answers that carry a step never find
one); the others take the shared plan at once.
"""

from __future__ import annotations

from psycopg import errors

from openwop_bridge.core.records import InterruptRecord, Mutation, RunRecord
from openwop_bridge.store import codec
from openwop_bridge.store.base import AnswerStepResult, Claim, RunCommit
from openwop_bridge.store.codec import Dialect
from openwop_bridge.store.plan import answer_as_seen
from openwop_bridge.store.steps import Note, Plan, Sql

#: What a guard's error says (the text a failed cast to ``int`` quotes), to tell it from any other error.
MISSED = "openwop-bridge: rows changed since read"


def _guard(table: str, where: str) -> str:
    """A statement that locks the one row of ``table`` matching ``where`` and fails unless it found one.

    It starts with ``WITH``, not ``SELECT``, so a batch does not wait for its (empty) rows: the lock is
    taken and the check made by the server while the rest of the message waits behind it. The cast of
    the message to ``int`` is the error; it is made on the row count, so the planner cannot fold it.
    """
    return (
        f"WITH found AS MATERIALIZED (SELECT 1 FROM {table} WHERE {where} FOR UPDATE) "
        f"SELECT (CASE WHEN count(*) = 1 THEN NULL ELSE '{MISSED}' END)::int FROM found"
    )


RUN_GUARD = _guard(
    "runs",
    "run_id=%s AND status=%s AND owner IS NOT DISTINCT FROM %s AND lease_until IS NOT DISTINCT FROM %s "
    "AND epoch=%s AND wake=%s AND needs_work=%s AND next_seq=%s AND updated_at=%s AND control IS NULL",
)
INTERRUPT_GUARD = _guard(
    "interrupts",
    "interrupt_id=%s AND run_id=%s AND status=%s AND consumed=%s AND resolved_at IS NOT DISTINCT FROM %s "
    "AND resolution::jsonb IS NOT DISTINCT FROM %s::jsonb AND COALESCE(state::jsonb, '{}') = %s::jsonb",
)


def guardable(seen: tuple[RunRecord, InterruptRecord]) -> bool:
    """Whether the guards can state the rows ``seen`` (a run with a control request cannot be)."""
    run, intr = seen
    return run.control is None and run.run_id == intr.run_id


def guards(run: RunRecord, intr: InterruptRecord) -> tuple[Sql, Sql]:
    """The two guards: the run's row, then the interrupt's, each locked and compared with what was read."""
    run_args = (
        run.run_id,
        run.status,
        run.owner,
        run.lease_until_ms,
        run.epoch,
        run.wake,
        run.needs_work,
        run.next_seq,
        run.updated_at_ms,
    )
    resolution = None if intr.resolution is None else codec.dumps(intr.resolution)
    intr_args = (
        intr.interrupt_id,
        intr.run_id,
        intr.status,
        intr.consumed,
        intr.resolved_at_ms,
        resolution,
        codec.dumps(intr.state or {}),
    )
    return Sql(RUN_GUARD, run_args), Sql(INTERRUPT_GUARD, intr_args)


def answer_guarded(
    d: Dialect,
    seen: tuple[RunRecord, InterruptRecord],
    decided: Mutation,
    now_ms: int,
    claim: Claim,
    step: RunCommit | None,
) -> Plan[AnswerStepResult]:
    """The guards, then the answer ``decided`` on the rows ``seen`` and the step it woke.

    The transaction's row locks are noted here, before the server granted them: the store runs this
    plan with its lock notes held back until the message was answered (see :class:`~openwop_bridge.store.pg_tx.Tx`).
    """
    run, intr = seen
    run_guard, intr_guard = guards(run, intr)
    yield run_guard
    yield intr_guard
    yield Note("locked", run.run_id)
    return (yield from answer_as_seen(d, run, intr, decided, now_ms, claim, step))


def missed(exc: BaseException) -> bool:
    """Whether ``exc`` is a guard's: the rows changed since they were read (the transaction rolled back)."""
    return isinstance(exc, errors.InvalidTextRepresentation) and MISSED in (exc.diag.message_primary or "")
