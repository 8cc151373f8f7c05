"""The status a run is stored with when it waits on child runs (:func:`openwop_bridge.core.run_state.reported_status`).

A parent that only waits on a child waiting for a person is stored with the child's waiting
status, so every reader (run listings and their ``status`` filter, snapshots, the adapters) sees
the same thing. Two writes keep it so: a run's own commit reads its children's statuses when it
waits on them, and a child's commit that changes its status recomputes its parent's, and so on up
(each parent's row locked after the child's, the order a child's ``wake`` of its parent takes too).
"""

from __future__ import annotations

from openwop_bridge.core import run_state, statuses
from openwop_bridge.core.statuses import RunStatus
from openwop_bridge.store.base import RunCommit
from openwop_bridge.store.codec import Dialect
from openwop_bridge.store.steps import Note, Plan, Sql

#: How many ancestors a child's status change may reach.
MAX_DEPTH = 32

_CHILDREN = "SELECT run_id, status FROM runs WHERE parent_run_id=%s"


def own_status(c: RunCommit) -> Plan[RunStatus | None]:
    """The status ``c`` stores: what its executor computed, or a waiting child's status when the run only
    waits on children."""
    if c.status != "running" or c.terminal or c.state is None or not run_state.child_waits(c.state):
        return c.status
    rows = yield Sql(_CHILDREN, (c.run_id,))
    return run_state.reported_status(c.state, c.status, {str(r[0]): r[1] for r in rows})


def to_parents(d: Dialect, parent_id: str | None) -> Plan[None]:
    """A child of ``parent_id`` changed its stored status: recompute the parent's, and its parent's while
    they change. A parent that is not live (pending, paused, cancelling, ended) keeps its status."""
    for _ in range(MAX_DEPTH):
        if parent_id is None:
            return
        rows = yield Sql(f"SELECT status, state, parent_run_id FROM runs WHERE run_id=%s{d.lock}", (parent_id,))
        if not rows:
            return
        yield Note("locked", parent_id)
        status, raw_state, grandparent = rows[0]
        if status != "running" and not str(status).startswith("waiting-"):
            return
        state = d.json_in(raw_state)
        children = yield Sql(_CHILDREN, (parent_id,))
        own = run_state.run_status(state, busy=False)
        new = run_state.reported_status(state, own, {str(r[0]): r[1] for r in children})
        if new == status:
            return
        statuses.check_run(status, new)
        yield Sql("UPDATE runs SET status=%s WHERE run_id=%s", (new, parent_id))
        parent_id = grandparent
