"""Durable commits per AG-UI cycle: the messages projection rides on commits that happen anyway."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from openwop_bridge import Engine
from openwop_bridge.agui import agui_routes, messages
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.host.app import create_app
from tests.adapters.agui.test_agui import Agui, interrupts
from tests.conftest import KEYS
from tests.server import uvicorn_server


@pytest.fixture
async def agui(engine: Engine) -> AsyncIterator[Agui]:
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False, extra_routes=agui_routes(engine))
    async with uvicorn_server(app) as url, httpx.AsyncClient(base_url=url, timeout=15) as client:
        yield Agui(client)


async def cycle(agui: Agui, thread: str) -> str:
    """Start a thread to its approval, resume it to success; returns the run id."""
    first = await agui.run("conformance-approval", thread)
    [it] = interrupts(first)
    resume = [{"interruptId": it["id"], "status": "resolved", "payload": {"action": "accept"}}]
    done = await agui.run("conformance-approval", thread, resume=resume)
    assert done[-1]["outcome"] == {"type": "success"}
    snapshot = next(e for e in done if e["type"] == "STATE_SNAPSHOT")["snapshot"]
    run_id: str = snapshot["openwop"]["runId"]
    return run_id


async def test_an_agui_cycle_makes_two_durable_commits(agui: Agui, engine: Engine) -> None:
    await cycle(agui, "th-warm")
    before = engine.store.commits
    run_id = await cycle(agui, "th-count")
    # The run with its suspension and the thread's binding, then the answer with the step it wakes:
    # the messages projection of each request goes with a later commit instead of one of its own.
    assert engine.store.commits - before == 2
    saved = await engine.adapter_state(messages.NAMESPACE).get(run_id)
    assert saved is not None and saved["runId"] == run_id and saved["cursor"] >= 0
