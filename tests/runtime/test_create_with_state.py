"""Adapter state that commits with a new run: it exists exactly when the run does."""

from __future__ import annotations

import pytest

from bridge import Engine
from bridge.core.errors import KeyTakenError
from bridge.core.records import RunRecord
from bridge.store.base import KvWrite
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
