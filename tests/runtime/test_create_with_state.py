"""Adapter state that commits with a new run: it exists exactly when the run does."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_bridge import Engine
from openwop_bridge.core.errors import KeyTakenError
from openwop_bridge.core.records import RunRecord
from openwop_bridge.host import ThreadRecord, Threads
from openwop_bridge.store.base import KvWrite
from tests.helpers import ADMIN, settle
from tests.runtime.test_commits import one_gate


async def test_adapter_state_commits_in_the_new_runs_own_transaction(engine: Engine) -> None:
    one_gate(engine)
    state = engine.adapter_state("test.bound")
    before = engine.store.commits

    def bound(run: RunRecord) -> list[KvWrite]:
        return [state.write("thread-1", {"runId": run.run_id}, only_if_absent=True)]

    run = await engine.create_run(ADMIN, "one-gate", with_state=bound)
    assert engine.store.commits - before == 1  # the run, its steps to the gate and the value
    assert await state.get("thread-1") == {"runId": run.run_id}
    assert (await settle(engine, run.run_id)).status == "waiting-approval"


async def test_a_taken_key_refuses_the_run_and_nothing_is_written(engine: Engine) -> None:
    one_gate(engine)
    state = engine.adapter_state("test.bound")
    await state.put("thread-1", {"runId": "run_elsewhere"})
    made: list[str] = []

    def bound(run: RunRecord) -> list[KvWrite]:
        made.append(run.run_id)
        return [state.write("thread-1", {"runId": run.run_id}, only_if_absent=True)]

    with pytest.raises(KeyTakenError):
        await engine.create_run(ADMIN, "one-gate", with_state=bound)
    [run_id] = made
    assert await engine.run_record(run_id) is None
    assert await state.get("thread-1") == {"runId": "run_elsewhere"}
    runs, _ = await engine.list_runs(ADMIN)
    assert run_id not in [r.run_id for r in runs]


class Bound(ThreadRecord):
    """A thread record of the smallest kind."""

    def __init__(self, thread_id: str, tenant: str, runs: list[str] | None = None) -> None:
        self.thread_id, self.tenant, self.runs = thread_id, tenant, list(runs or [])

    def as_json(self) -> dict[str, Any]:
        return {"threadId": self.thread_id, "tenant": self.tenant, "runs": self.runs}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Bound:
        return cls(raw["threadId"], raw["tenant"], raw["runs"])


async def test_a_thread_names_exactly_the_runs_started_on_it(engine: Engine) -> None:
    one_gate(engine)
    threads = Threads(engine, "test.thread", Bound.from_json)
    first = await threads.start_run(ADMIN, "one-gate", Bound("t", ADMIN.tenant), create=True)
    assert first is not None
    # A second request creating the same thread loses: no run of its own, the thread unchanged.
    assert await threads.start_run(ADMIN, "one-gate", Bound("t", ADMIN.tenant), create=True) is None
    runs, _ = await engine.list_runs(ADMIN)
    assert [r.run_id for r in runs] == [first.run_id]
    stored = await threads.load(ADMIN.tenant, "t")
    assert stored is not None and stored.runs == [first.run_id]
    # The next run on the stored thread is written with it; the thread object gains it too.
    second = await threads.start_run(ADMIN, "one-gate", stored)
    assert second is not None and stored.run_id == second.run_id
    reloaded = await threads.load(ADMIN.tenant, "t")
    assert reloaded is not None and reloaded.runs == [first.run_id, second.run_id]
    # Another tenant has no such thread.
    assert await threads.load("other", "t") is None


async def test_a_run_started_on_a_thread_that_changed_meanwhile_is_refused(engine: Engine) -> None:
    one_gate(engine)
    threads = Threads(engine, "test.thread", Bound.from_json)
    first = await threads.start_run(ADMIN, "one-gate", Bound("t", ADMIN.tenant), create=True)
    assert first is not None
    # Two requests read the thread, then both start a run on it: the second must not drop the first's.
    one, other = await threads.load(ADMIN.tenant, "t"), await threads.load(ADMIN.tenant, "t")
    assert one is not None and other is not None
    second = await threads.start_run(ADMIN, "one-gate", one)
    assert second is not None
    with pytest.raises(KeyTakenError):
        await threads.start_run(ADMIN, "one-gate", other)
    stored = await threads.load(ADMIN.tenant, "t")
    assert stored is not None and stored.runs == [first.run_id, second.run_id]
    runs, _ = await engine.list_runs(ADMIN)
    assert sorted(r.run_id for r in runs) == sorted([first.run_id, second.run_id])
    # A thread saved since it was read is current again for the next run.
    await threads.save(one)
    third = await threads.start_run(ADMIN, "one-gate", one)
    assert third is not None and one.runs == [first.run_id, second.run_id, third.run_id]
