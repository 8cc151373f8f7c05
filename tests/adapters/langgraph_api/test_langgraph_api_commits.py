"""Durable commits of ``langgraph_sdk``'s run start: the thread naming the new run commits with the run."""

from __future__ import annotations

from langgraph_sdk import get_client
from langgraph_sdk.schema import Command

from openwop_bridge import Engine
from openwop_bridge.core.auth import DEFAULT_TENANT
from openwop_bridge.langgraph_api import threads
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


async def test_a_run_that_makes_its_thread_commits_the_thread_with_the_run(served: str, engine: Engine) -> None:
    c = get_client(url=served, api_key=TOKENS["admin"])
    before = engine.store.commits
    waited = await c.runs.wait("t-new-with-run", "conformance-approval", input={}, if_not_exists="create")
    assert waited["__interrupt__"]
    # The thread, the run and its steps to the approval: one transaction (no list of the tenant's threads to update).
    assert engine.store.commits - before == 1
    stored = await threads.load(engine, DEFAULT_TENANT, "t-new-with-run")
    assert stored is not None and stored.run_id is not None
    assert stored.metadata == {"graph_id": "conformance-approval", "assistant_id": "conformance-approval"}
    [found] = await c.threads.search(metadata={"graph_id": "conformance-approval"}, limit=10)
    assert found["thread_id"] == "t-new-with-run"


async def test_a_run_on_a_missing_thread_without_if_not_exists_is_404_and_commits_nothing(
    served: str, engine: Engine
) -> None:
    c = get_client(url=served, api_key=TOKENS["admin"])
    before = engine.store.commits
    try:
        await c.runs.wait("t-never-made", "conformance-approval", input={})
    except Exception as exc:  # langgraph_sdk raises httpx.HTTPStatusError
        assert getattr(getattr(exc, "response", None), "status_code", None) == 404
    else:
        raise AssertionError("a run on a missing thread was accepted")
    assert engine.store.commits == before
    assert await threads.load(engine, DEFAULT_TENANT, "t-never-made") is None
