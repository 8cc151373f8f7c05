"""A store that is briefly unreachable fails no run and loses no answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from openwop_bridge import Engine
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.host.app import create_app
from openwop_bridge.runtime import joint
from openwop_bridge.runtime.config import EngineConfig
from tests.conftest import KEYS, auth
from tests.helpers import ADMIN, event_types, settle


def _outage(engine: Engine, method: str, times: int) -> list[int]:
    """Make ``engine.store.<method>`` raise the store's transient error ``times`` times."""
    store: Any = engine.store
    real = getattr(store, method)
    error: Callable[[str], BaseException] = store.transient_errors[0]
    raised: list[int] = []

    async def flaky(*args: Any, **kwargs: Any) -> Any:
        if len(raised) < times:
            raised.append(1)
            raise error("the database is unreachable (test)")
        return await real(*args, **kwargs)

    setattr(store, method, flaky)
    return raised


async def test_an_outage_during_a_commit_leaves_the_run_to_recovery(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The step commits on its own, after the answer (not within the answer's transaction).
    monkeypatch.setattr(joint, "BUDGET_S", 0)
    engine: Engine = make_engine(EngineConfig(lease_ms=600))
    async with engine:
        run = await engine.create_run(ADMIN, "conformance-approval")
        await settle(engine, run.run_id)
        raised = _outage(engine, "commit", times=1)
        await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="gate")
        # The executor meets the outage, stops without failing the run; once its lease
        # runs out unrenewed, the heartbeat's recovery finishes the run.
        done = await settle(engine, run.run_id, statuses=("completed", "failed"), timeout=10)
        assert raised == [1]
        assert done.status == "completed"
        types = await event_types(engine, run.run_id)
        assert "run.failed" not in types and types.count("interrupt.resolved") == 1


async def test_an_outage_during_a_request_is_a_503_and_the_answer_can_be_retried(make_engine: Any) -> None:
    engine: Engine = make_engine()
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False)
    async with engine, httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        run = await engine.create_run(ADMIN, "conformance-approval")
        await settle(engine, run.run_id)
        # The transaction that applies the answer with the step it wakes.
        _outage(engine, "answer_and_step", times=1)
        url = f"/v1/runs/{run.run_id}/interrupts/gate"
        r = await client.post(url, json={"resumeValue": {"action": "accept"}}, headers=auth("admin"))
        assert r.status_code == 503 and r.headers["retry-after"] == "1", r.text
        assert r.json()["error"] == "store_unavailable"
        assert (await engine.store.interrupt_at(run.run_id, "gate")).open  # type: ignore[union-attr]
        r = await client.post(url, json={"resumeValue": {"action": "accept"}}, headers=auth("admin"))
        assert r.status_code == 200, r.text
        assert (await settle(engine, run.run_id)).status == "completed"


async def test_an_outage_after_the_step_was_left_out_of_the_answer_is_the_outage(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The step misses the answer's transaction and waits for the answer to commit; the answer fails.
    monkeypatch.setattr(joint, "BUDGET_S", 0)
    engine: Engine = make_engine()
    async with engine:
        run = await engine.create_run(ADMIN, "conformance-approval")
        await settle(engine, run.run_id)
        store: Any = engine.store
        real = store.answer_and_step
        error: Callable[[str], BaseException] = store.transient_errors[0]

        async def late_outage(*args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(0.3)  # the resumed executor is waiting for the answer by now
            raise error("the database is unreachable (test)")

        store.answer_and_step = late_outage
        with pytest.raises(store.transient_errors):
            await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="gate")
        store.answer_and_step = real
        assert (await engine.store.interrupt_at(run.run_id, "gate")).open  # type: ignore[union-attr]
        await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="gate")
        assert (await settle(engine, run.run_id)).status == "completed"
