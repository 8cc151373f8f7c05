"""Small helpers shared by the tests."""

from __future__ import annotations

import asyncio
from typing import Any

from bridge import Engine
from bridge.core.auth import Principal

ADMIN = Principal("alice", roles=frozenset({"admin"}))
WAITING = ("waiting-approval", "waiting-input", "waiting-external")
TERMINAL = ("completed", "failed", "cancelled")


async def settle(
    engine: Engine, run_id: str, *, statuses: tuple[str, ...] = WAITING + TERMINAL, timeout: float = 10.0
) -> Any:
    """Wait until a run reaches one of ``statuses`` with nothing left to do; return the run record.

    "Nothing left to do": no executor of this engine drives it, and the store no longer flags
    work for it (an answer that just committed wakes the run before any executor has picked it
    up, so the run still shows the status it had while it waited).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        run = await engine.store.load_run(run_id)
        if run is not None and run.status in statuses and not run.needs_work and run_id not in engine._executors:
            return run
        if loop.time() > deadline:
            raise AssertionError(f"run {run_id} is {run.status if run else 'missing'}, wanted one of {statuses}")
        await asyncio.sleep(0.005)


async def event_types(engine: Engine, run_id: str) -> list[str]:
    """The types of a run's committed events, in order."""
    return [e["type"] for e in await engine.store.read_events(run_id)]


async def events(engine: Engine, run_id: str, type_: str | None = None) -> list[dict[str, Any]]:
    """A run's committed events (optionally of one type)."""
    docs = await engine.store.read_events(run_id)
    return [d for d in docs if type_ is None or d["type"] == type_]
