"""Durable commits of ``langgraph_sdk``'s run start: the thread naming the new run commits with the run."""

from __future__ import annotations

from langgraph_sdk import get_client
from langgraph_sdk.schema import Command

from adapters.langgraph_api import threads
from bridge import Engine
from bridge.core.auth import DEFAULT_TENANT
from tests.conftest import TOKENS
from tests.helpers import settle


async def test_starting_a_run_on_a_thread_is_one_durable_commit(served: str, engine: Engine) -> None:
    c = get_client(url=served, api_key=TOKENS["admin"])
    thread = await c.threads.create()
    before = engine.store.commits
    waited = await c.runs.wait(thread["thread_id"], "conformance-approval", input={})
    assert waited["__interrupt__"]
    # The run, its steps to the approval and the thread naming it: one transaction.
    assert engine.store.commits - before == 1
    stored = await threads.load(engine, DEFAULT_TENANT, thread["thread_id"])
    assert stored is not None and stored.run_id is not None
    assert stored.metadata["assistant_id"] == "conformance-approval"
    await c.runs.wait(thread["thread_id"], "conformance-approval", command=Command(resume={"action": "accept"}))
    assert (await settle(engine, stored.run_id)).status == "completed"
