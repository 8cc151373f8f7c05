"""Drive a recorded scenario through an engine, and compare logs with ids and times normalised.

A scenario names a workflow (a conformance fixture, or a document it carries),
its inputs and the steps people took: an answer at a node, or a cancel. Driving
it gives the run's event log, its children's logs and its snapshot; the
recorded files keep what the engine produced when they were written, and
:func:`normalise` makes two logs comparable across runs (ids and times differ).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from openwop_bridge import Engine
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.records import RunRecord
from openwop_bridge.core.workflow import load_workflow

PEOPLE = {
    "alice": Principal("alice", roles=frozenset({"admin"})),
    "bob": Principal("bob"),
    "carol": Principal("carol"),
    "dave": Principal("dave"),
}
_ID = re.compile(r"\b([a-z]+)_[0-9a-hjkmnp-tv-z]{26}\b")
_ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
# Integer milliseconds that depend on the wall clock.
_MS_KEYS = frozenset({"ts", "durationMs", "deadlineMs", "expiresAtMs"})


async def _until(check: Any, what: str, timeout: float = 10.0) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = await check()
        if found:
            return found
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


async def _open_at(engine: Engine, run_id: str, node: str, answered: set[str]) -> Any:
    async def check() -> Any:
        await engine.wait_idle()
        for record in await engine.open_interrupts(run_id):
            if record.node_id == node and record.interrupt_id not in answered:
                return record
        return None

    return await _until(check, f"an open interrupt at {node}")


async def _tree(engine: Engine, run_id: str) -> list[RunRecord]:
    """The run and its descendants, parents first, children in their creation order."""
    run = await engine.store.load_run(run_id)
    assert run is not None
    out = [run]
    children = sorted(await engine.store.child_runs(run_id), key=lambda r: (r.created_at_ms, r.child_ordinal or 0))
    for child in children:
        out += await _tree(engine, child.run_id)
    return out


async def drive(engine: Engine, scenario: Mapping[str, Any]) -> str:
    """Run ``scenario`` to its end on ``engine``; returns the root run's id."""
    if "workflow" in scenario:
        engine.add_workflow(load_workflow(scenario["workflow"]))
    run = await engine.create_run(PEOPLE["alice"], scenario["workflowId"], inputs=scenario.get("inputs"))
    answered: set[str] = set()
    for step in scenario.get("steps", []):
        if "answer" in step:
            record = await _open_at(engine, run.run_id, step["answer"], answered)
            result = await engine.resolve(
                PEOPLE[step["as"]], step["value"], run_id=record.run_id, node_id=record.node_id
            )
            if result["status"] != "pending":  # a quorum vote leaves the interrupt open for the next
                answered.add(record.interrupt_id)
        elif "cancel" in step:
            await _open_at(engine, run.run_id, step["cancel"], answered)  # cancel while this node waits
            await engine.cancel_run(run.run_id, PEOPLE[step["as"]], step.get("reason"))
        else:
            raise ValueError(f"unknown step {step!r}")
    await settled(engine, run.run_id)
    return run.run_id


async def settled(engine: Engine, run_id: str) -> list[RunRecord]:
    """Wait until the run and all its descendants ended; return them."""

    async def check() -> list[RunRecord] | None:
        await engine.wait_idle()
        tree = await _tree(engine, run_id)
        return tree if all(r.terminal for r in tree) else None

    result: list[RunRecord] = await _until(check, f"run {run_id} to end")
    return result


async def outcome(engine: Engine, run_id: str) -> dict[str, Any]:
    """What a recording keeps of a finished run: its logs (root first) and its snapshot's result."""
    tree = await settled(engine, run_id)
    snap = await engine.snapshot(run_id, PEOPLE["alice"])
    return {
        "runs": [
            {"workflowId": r.workflow_id, "status": r.status, "events": await engine.store.read_events(r.run_id)}
            for r in tree
        ],
        "snapshot": {name: snap.get(name) for name in ("status", "outputs", "variables", "channels", "error")},
    }


def normalise(value: Any, names: dict[str, str] | None = None) -> Any:
    """``value`` with minted ids renamed by order of appearance (``run#1``) and clock readings blanked."""
    names = {} if names is None else names

    def rename(match: re.Match[str]) -> str:
        return names.setdefault(
            match.group(0), f"{match.group(1)}#{sum(1 for n in names if n.startswith(match.group(1) + '_')) + 1}"
        )

    def walk(item: Any, key: str | None = None) -> Any:
        if isinstance(item, Mapping):
            return {k: walk(v, k) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v) for v in item]
        if isinstance(item, str):
            return "<time>" if _ISO.match(item) else _ID.sub(rename, item)
        if isinstance(item, int) and not isinstance(item, bool) and key in _MS_KEYS:
            return "<ms>"
        return item

    return walk(value)
