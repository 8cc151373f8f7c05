"""The decision record's writes: each decision's records appended to its tenant's chain, in its transaction.

A plan yields a :class:`~openwop_bridge.store.steps.Recorded` step for the decisions it commits; a store
that keeps the record runs :func:`with_records` around the plan, which appends them when the plan is
done, still in its transaction: it reads the tenant's last record (one seek at the end of the records' primary
key), numbers and links the new ones after it, and inserts them. Two transactions deciding in one tenant take
their numbers one after the other: SQLite has one writer; PostgreSQL's first takes a transaction-scoped
advisory lock named by the tenant, held until it ends (``lock``). A rolled-back decision leaves no record and
no gap. Every writer takes that lock after the run and interrupt rows it holds, so the order of locks stays
the same everywhere (no deadlock).

The records' reads (export pages, a decision's receipt) are :mod:`openwop_bridge.store.reads`'.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

from openwop_bridge.core.decision_record import GENESIS, canonical, record_of
from openwop_bridge.store.contract.records import Signer
from openwop_bridge.store.steps import Ahead, Plan, Recorded, Rows, Sql

T = TypeVar("T")

_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
_LAST = "SELECT seq, hash FROM decision_records WHERE tenant=%s ORDER BY seq DESC LIMIT 1"
_INSERT = (
    "INSERT INTO decision_records(tenant, seq, record_id, run_id, interrupt_id, at, body, hash, kid, signature) "
    "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)"
)


def with_records(signer: Signer, steps: Plan[T], *, lock: bool = False) -> Plan[T]:
    """``steps``, then the records of their :class:`Recorded` steps appended, signed by ``signer``.

    The records go in once the plan is done, each tenant's chain taken in tenant order (with ``lock``, under its
    advisory lock): that is the last lock a transaction takes, whatever runs it locked before (a batch locks
    several), so none waits for a run while holding a chain another transaction holding that run waits for.
    """
    recorded: dict[str, list[Recorded]] = {}
    try:
        step = next(steps)
        while True:
            if type(step) is Recorded:
                if step.drafts:
                    recorded.setdefault(step.tenant, []).append(step)
                step = steps.send([])
            else:
                rows: Rows = yield step
                step = steps.send(rows)
    except StopIteration as done:
        result: T = done.value
    for tenant in sorted(recorded):
        yield from _append_all(signer, tenant, recorded[tenant], lock)
    return result


def _append_all(signer: Signer, tenant: str, steps: Sequence[Recorded], lock: bool) -> Plan[None]:
    """Append every record of ``steps`` (one tenant's) after the tenant's last one."""
    last = Sql(_LAST, (tenant,))
    if lock:
        held = Sql(_LOCK, (f"decision record {tenant}",))
        yield Ahead(held)
        yield Ahead(last)
        yield held
    rows = yield last
    seq, prev = (int(rows[0][0]), str(rows[0][1])) if rows else (0, GENESIS)
    params = []
    for step in steps:
        for draft in step.drafts:
            seq += 1
            record = record_of(draft, tenant=tenant, run_id=step.run_id, seq=seq, at_ms=step.now_ms, prev=prev)
            body = canonical(record)
            prev = "sha256:" + hashlib.sha256(body).hexdigest()
            row = (tenant, seq, draft.record_id, step.run_id, draft.interrupt_id, step.now_ms, body.decode(), prev)
            params.append((*row, signer.kid, signer.sign(body)))
    yield Sql(_INSERT, params, many=True)
