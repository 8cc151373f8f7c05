"""Records for the decision tests, built by hand: a run, an interrupt, principals and ids.

Nothing here touches a store or an engine; a test builds the rows a decision
would read, calls the decision, and looks at the :class:`Mutation` it returns.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.records import InterruptRecord, Mutation, RunRecord

NOW = 1_700_000_000_000
TENANT = "default"


def principal(pid: str, *roles: str, scopes: tuple[str, ...] = ("*",), tenant: str = TENANT) -> Principal:
    """A caller of this tenant holding ``roles`` and ``scopes``."""
    return Principal(pid, tenant=tenant, scopes=frozenset(scopes), roles=frozenset(roles))


def ids() -> Callable[[str], str]:
    """A deterministic id source: ``evt-1``, ``evt-2`` …"""
    counter = itertools.count(1)
    return lambda prefix: f"{prefix}-{next(counter)}"


def run(status: str = "waiting-approval", control: dict[str, Any] | None = None, **extra: Any) -> RunRecord:
    """A run row of tenant ``default``."""
    return RunRecord(
        run_id="run-1",
        tenant=TENANT,
        workflow_id="wf",
        status=status,
        created_at_ms=NOW - 10_000,
        updated_at_ms=NOW - 5_000,
        spec={},
        state={},
        control=control,
        **extra,
    )


def interrupt(kind: str, data: dict[str, Any], *, status: str = "pending", **extra: Any) -> InterruptRecord:
    """An interrupt row of ``run-1`` at node ``gate`` carrying ``data`` (and ``resumeSchema`` etc. in ``extra``)."""
    payload: dict[str, Any] = {"kind": kind, "key": "k", "data": data}
    for name in ("resumeSchema", "timeoutMs"):
        if name in extra:
            payload[name] = extra.pop(name)
    return InterruptRecord(
        interrupt_id="int-1",
        run_id="run-1",
        tenant=TENANT,
        workflow_id="wf",
        node_id="gate",
        exec_node="gate",
        visit=0,
        ordinal=0,
        key="k",
        kind=kind,
        status=status,
        payload=payload,
        requested_at_ms=NOW - 1_000,
        **extra,
    )


def approval_data(*actions: str, **data: Any) -> dict[str, Any]:
    """``ApprovalData`` allowing ``actions`` (accept and reject by default)."""
    return {
        "artifactId": "a1",
        "artifactType": "doc",
        "title": "Ship it?",
        "actions": list(actions or ("accept", "reject")),
        **data,
    }


def applied(record: InterruptRecord, mutation: Mutation) -> InterruptRecord:
    """The interrupt row as a store would leave it after ``mutation`` (the fields a decision reads)."""
    return replace(
        record,
        status=mutation.interrupt_status or record.status,
        state=mutation.interrupt_state if mutation.interrupt_state is not None else record.state,
        resolution=mutation.resolution if mutation.resolution is not None else record.resolution,
        resolved_at_ms=mutation.resolved_at_ms or record.resolved_at_ms,
    )


def types(mutation: Mutation) -> list[str]:
    """The types of the events a mutation appends, in order."""
    return [e.type for e in mutation.events]


def event(mutation: Mutation, type_: str) -> dict[str, Any]:
    """The payload of the one event of ``type_`` the mutation appends."""
    found = [e.payload for e in mutation.events if e.type == type_]
    assert len(found) == 1, f"{type_}: {types(mutation)}"
    payload: dict[str, Any] = found[0]
    return payload
