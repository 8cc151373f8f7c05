"""The decision record's writes: each decision's records appended to its tenant's chain, in its transaction.

A plan yields a :class:`~openwop_bridge.store.steps.Recorded` step for the decisions it commits; a store
that keeps the record runs :func:`with_records` around the plan, which appends them when the plan is
done, still in its transaction. The chain's head (its last sequence number and hash) is one row per tenant,
``decision_heads``: the upsert that reads it also locks it until the transaction ends, so two
transactions deciding in one tenant take their numbers one after the other, and a rolled-back decision
leaves no record and no gap. Every writer takes the head after the run and interrupt rows it holds, so
the order of locks stays the same everywhere (no deadlock).

The records' reads (export pages, a decision's receipt) are :mod:`openwop_bridge.store.reads`'.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

from openwop_bridge.core.decision_record import GENESIS, canonical, record_of
from openwop_bridge.store.contract.records import Signer
from openwop_bridge.store.steps import Plan, Recorded, Rows, Sql

T = TypeVar("T")

_HEAD = (
    "INSERT INTO decision_heads(tenant, seq, hash) VALUES (%s, 0, %s) "
    "ON CONFLICT (tenant) DO UPDATE SET seq = decision_heads.seq RETURNING seq, hash"
)
_INSERT = (
    "INSERT INTO decision_records(tenant, seq, record_id, run_id, interrupt_id, at, body, hash, signature) "
    "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)"
)


def with_records(signer: Signer, steps: Plan[T]) -> Plan[T]:
    """``steps``, then the records of their :class:`Recorded` steps appended, signed by ``signer``.

    The records go in once the plan is done, each tenant's head taken in tenant order: the head is the last
    lock a transaction takes, whatever runs it locked before (a batch locks several), so none waits for a run
    while holding a head another transaction holding that run waits for.
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
        yield from _append_all(signer, tenant, recorded[tenant])
    return result


def _append_all(signer: Signer, tenant: str, steps: Sequence[Recorded]) -> Plan[None]:
    """Append every record of ``steps`` (one tenant's) under one hold of its head."""
    rows = yield Sql(_HEAD, (tenant, GENESIS))
    seq, prev = int(rows[0][0]), str(rows[0][1])
    params = []
    for step in steps:
        for draft in step.drafts:
            seq += 1
            record = record_of(draft, tenant=tenant, run_id=step.run_id, seq=seq, at_ms=step.now_ms, prev=prev)
            body = canonical(record)
            prev = "sha256:" + hashlib.sha256(body).hexdigest()
            row = (tenant, seq, draft.record_id, step.run_id, draft.interrupt_id, step.now_ms, body.decode(), prev)
            params.append((*row, signer.sign(body)))
    yield Sql(_INSERT, params, many=True)
    yield Sql("UPDATE decision_heads SET seq=%s, hash=%s WHERE tenant=%s", (seq, prev, tenant))
