"""Every status change the engine makes is one the table allows (:mod:`openwop_bridge.core.statuses`).

The store checks each change it writes with :func:`~openwop_bridge.core.statuses.check_run` or
:func:`~openwop_bridge.core.statuses.check_interrupt`; here those checks are recorded while runs
are answered, cancelled (alone and through their parent), timed out and ended, and every change
seen must be in the table, the ones these paths are known to make among them.
"""

from __future__ import annotations

from typing import Any

import pytest

from openwop_bridge import Engine
from openwop_bridge.core import statuses
from openwop_bridge.core.workflow import load_workflow
from tests.helpers import ADMIN, settle, workflow_doc
from tests.runtime.test_close_events import ENDED, _gate, _waiting_child

Seen = set[tuple[str, str, str]]


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Seen:
    """The ``(what, old, new)`` changes the store checks from now on."""
    found: Seen = set()
    check_run, check_interrupt = statuses.check_run, statuses.check_interrupt

    def run(old: str, new: str) -> None:
        found.add(("run", old, new))
        check_run(old, new)

    def interrupt(old: str, new: str) -> None:
        found.add(("interrupt", old, new))
        check_interrupt(old, new)

    monkeypatch.setattr(statuses, "check_run", run)
    monkeypatch.setattr(statuses, "check_interrupt", interrupt)
    return found


def _allowed(what: str, old: str, new: str) -> bool:
    table: Any = statuses.RUN_TRANSITIONS if what == "run" else statuses.INTERRUPT_TRANSITIONS
    return old in table and (new == old or new in table[old])


async def test_every_status_change_the_engine_makes_is_in_the_table(engine: Engine, seen: Seen) -> None:
    answered = await engine.create_run(ADMIN, "conformance-approval")
    await settle(engine, answered.run_id)
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=answered.run_id, node_id="gate")
    assert (await settle(engine, answered.run_id, statuses=ENDED)).status == "completed"

    cancelled = await engine.create_run(ADMIN, "conformance-approval")
    await settle(engine, cancelled.run_id)
    await engine.cancel_run(cancelled.run_id, ADMIN)
    await settle(engine, cancelled.run_id, statuses=("cancelled",))

    parent = await engine.create_run(ADMIN, "conformance-interrupt-parent-child-cancel")
    child = await _waiting_child(engine, parent.run_id)
    await engine.cancel_run(parent.run_id, ADMIN, "stop")
    await settle(engine, child.run_id, statuses=("cancelled",))

    engine.add_workflow(load_workflow(workflow_doc("two-gates", [_gate("quick", timeoutMs=150), _gate("slow")], [])))
    timed_out = await engine.create_run(ADMIN, "two-gates")
    assert (await settle(engine, timed_out.run_id, statuses=ENDED)).status == "failed"

    assert [change for change in seen if not _allowed(*change)] == []
    assert {
        ("run", "pending", "waiting-approval"),
        ("run", "waiting-approval", "completed"),
        ("run", "waiting-approval", "cancelling"),
        ("run", "cancelling", "cancelled"),
        ("run", "running", "waiting-approval"),
        ("interrupt", "pending", "resolved"),
        ("interrupt", "pending", "cancelled"),
        ("interrupt", "pending", "gone"),
        ("interrupt", "pending", "expired"),
    } <= seen, sorted(seen)
