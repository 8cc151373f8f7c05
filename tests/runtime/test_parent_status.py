"""A parent that only waits on a child waiting for a person is stored with the child's waiting status.

The stored status is what every surface reads (run listings and their ``status`` filter, the
snapshot, the adapters), so it must say ``waiting-approval`` while the person is the one the
run waits for, through nested children, and go back to what the parent itself does once the
child moves on.
"""

from __future__ import annotations

import asyncio

from openwop_bridge import Engine, RunRecord
from openwop_bridge.core.workflow import load_workflow
from tests.helpers import ADMIN, settle, workflow_doc

ENDED = ("completed", "failed", "cancelled")


def _outer() -> dict[str, object]:
    """``outer-of-parent``: a sub-workflow node starting ``conformance-interrupt-parent-child-cancel``,
    whose own child waits on an approval gate."""
    node = {
        "id": "middle",
        "typeId": "core.subWorkflow",
        "name": "middle",
        "position": {"x": 0, "y": 0},
        "config": {"workflowId": "conformance-interrupt-parent-child-cancel"},
        "inputs": {},
    }
    return workflow_doc("outer-of-parent", [node], [])


async def stored(engine: Engine, run_id: str, wanted: str, timeout_s: float = 5) -> RunRecord:
    """The run as stored, once its status is ``wanted`` (the last read when the time runs out)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        run = await engine.store.load_run(run_id)
        assert run is not None
        if run.status == wanted or asyncio.get_running_loop().time() > deadline:
            return run
        await asyncio.sleep(0.01)


async def only_child(engine: Engine, parent_id: str) -> RunRecord:
    for _ in range(500):
        children = await engine.store.child_runs(parent_id)
        if children:
            return children[0]
        await asyncio.sleep(0.01)
    raise AssertionError(f"run {parent_id} started no child")


async def test_a_parent_waiting_on_a_waiting_child_is_stored_waiting(engine: Engine) -> None:
    parent = await engine.create_run(ADMIN, "conformance-interrupt-parent-child-cancel")
    child = await only_child(engine, parent.run_id)
    assert (await stored(engine, child.run_id, "waiting-approval")).status == "waiting-approval"
    assert (await stored(engine, parent.run_id, "waiting-approval")).status == "waiting-approval"
    listed, _ = await engine.list_runs(ADMIN, status="waiting-approval")
    assert {r.run_id for r in listed} == {parent.run_id, child.run_id}
    running, _ = await engine.list_runs(ADMIN, status="running")
    assert parent.run_id not in {r.run_id for r in running}
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=child.run_id, node_id="child-gate")
    assert (await settle(engine, parent.run_id, statuses=ENDED)).status == "completed"


async def test_the_waiting_status_goes_up_through_nested_children(engine: Engine) -> None:
    engine.add_workflow(load_workflow(_outer()))
    outer = await engine.create_run(ADMIN, "outer-of-parent")
    middle = await only_child(engine, outer.run_id)
    inner = await only_child(engine, middle.run_id)
    for run_id in (inner.run_id, middle.run_id, outer.run_id):
        assert (await stored(engine, run_id, "waiting-approval")).status == "waiting-approval", run_id
    snap = await engine.snapshot(outer.run_id, ADMIN)
    assert snap["status"] == "waiting-approval"
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=inner.run_id, node_id="child-gate")
    assert (await settle(engine, outer.run_id, statuses=ENDED)).status == "completed"


async def test_cancelling_the_waiting_child_leaves_the_parent_no_longer_waiting(engine: Engine) -> None:
    parent = await engine.create_run(ADMIN, "conformance-interrupt-parent-child-cancel")
    child = await only_child(engine, parent.run_id)
    await stored(engine, parent.run_id, "waiting-approval")
    await engine.cancel_run(child.run_id, ADMIN, "not this one")
    done = await settle(engine, parent.run_id, statuses=ENDED)
    assert not done.status.startswith("waiting-")
