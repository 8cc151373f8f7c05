"""The OpenWOP reference Python SDK (``openwop-client``) against the host on real uvicorn.

Everything goes through the SDK's typed methods, never raw HTTP: a client nobody
here wrote must be able to drive the whole v1 surface and parse every answer into
its own types. The SDK is synchronous (urllib), so each call runs in a thread
while the server keeps the test's event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar, get_args

import pytest
from openwop_client import (
    CancelRunRequest,
    CancelRunResponse,
    Capabilities,
    CreateRunRequest,
    CreateRunResponse,
    ForkRunRequest,
    ForkRunResponse,
    InterruptByTokenInspection,
    OpenwopClient,
    PollEventsResponse,
    ResolveInterruptRequest,
    ResolveInterruptResponse,
    RunEventDoc,
    RunSnapshot,
    RunStatus,
    WopError,
)

from openwop_bridge import Engine
from tests.conftest import TOKENS
from tests.helpers import settle

T = TypeVar("T")
RUN_STATUSES = set(get_args(RunStatus))


class Sdk:
    """An SDK client per key, each call run in a worker thread."""

    def __init__(self, url: str, engine: Engine) -> None:
        self.url = url
        self.engine = engine

    def client(self, who: str = "admin") -> OpenwopClient:
        return OpenwopClient(base_url=self.url, api_key=TOKENS.get(who, who), timeout=10)

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(functools.partial(fn, *args, **kwargs))

    async def error(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> WopError:
        with pytest.raises(WopError) as caught:
            await self.call(fn, *args, **kwargs)
        err = caught.value
        assert err.envelope is not None, err.raw_text
        assert err.envelope.message
        return err

    async def waiting_run(self, workflow_id: str = "conformance-approval") -> str:
        created = await self.call(self.client().runs_create, CreateRunRequest(workflowId=workflow_id))
        await settle(self.engine, created.runId)
        return created.runId

    async def token(self, run_id: str, node_id: str) -> str:
        """A signed link as delivered to an approver (by mail, chat, …), outside the REST surface."""
        record = await self.engine.store.interrupt_at(run_id, node_id)
        assert record is not None
        token, _ = self.engine.mint_token(record)
        return token


@pytest.fixture
async def sdk(live: tuple[str, Any], engine: Engine) -> AsyncIterator[Sdk]:
    url, _ = live
    yield Sdk(url, engine)


def typed(value: Any, cls: type) -> None:
    """The SDK built one of its own dataclasses; run documents carry a run status from its vocabulary."""
    assert isinstance(value, cls)
    assert dataclasses.is_dataclass(value)
    if cls in (CreateRunResponse, RunSnapshot, ForkRunResponse):
        assert value.status in RUN_STATUSES, value.status


async def test_discovery_parses_into_capabilities(sdk: Sdk) -> None:
    caps = await sdk.call(sdk.client().discovery_capabilities)
    typed(caps, Capabilities)
    assert caps.protocolVersion.startswith("1.")
    assert caps.limits.clarificationRounds >= 1 and caps.limits.envelopesPerTurn >= 1
    doc = await sdk.call(sdk.client().discovery_openapi)
    assert doc["openapi"].startswith("3.") and "/v1/runs" in doc["paths"]


async def test_create_get_poll_and_stream_a_completed_run(sdk: Sdk) -> None:
    c = sdk.client()
    created = await sdk.call(c.runs_create, CreateRunRequest(workflowId="conformance-noop", tags=["sdk"]))
    typed(created, CreateRunResponse)
    assert created.eventsUrl.endswith(f"/v1/runs/{created.runId}/events")
    await settle(sdk.engine, created.runId)

    snap = await sdk.call(c.runs_get, created.runId)
    typed(snap, RunSnapshot)
    assert (snap.runId, snap.workflowId, snap.status) == (created.runId, "conformance-noop", "completed")
    assert snap.startedAt and snap.completedAt and snap.tags == ["sdk"]

    polled = await sdk.call(c.runs_poll_events, created.runId)
    typed(polled, PollEventsResponse)
    assert polled.isComplete
    assert polled.events and all(isinstance(e, RunEventDoc) for e in polled.events)
    assert [e.sequence for e in polled.events] == sorted({e.sequence for e in polled.events})
    assert polled.events[0].type == "run.started" and polled.events[-1].type == "run.completed"

    # The SSE stream closes by itself after the terminal event and carries the same log.
    streamed = await sdk.call(lambda: list(c.runs_events(created.runId, timeout_seconds=10)))
    assert [(e.sequence, e.type) for e in streamed] == [(e.sequence, e.type) for e in polled.events]
    # Resuming after an event id yields only what follows it.
    resumed = await sdk.call(
        lambda: list(c.runs_events(created.runId, last_event_id=str(polled.events[0].sequence), timeout_seconds=10))
    )
    assert [e.sequence for e in resumed] == [e.sequence for e in polled.events[1:]]
    after = await sdk.call(c.runs_poll_events, created.runId, last_sequence=polled.events[-2].sequence)
    assert [e.sequence for e in after.events] == [polled.events[-1].sequence]


async def test_create_with_an_idempotency_key_succeeds(sdk: Sdk) -> None:
    created = await sdk.call(
        sdk.client().runs_create, CreateRunRequest(workflowId="conformance-noop"), idempotency_key="sdk-create-1"
    )
    typed(created, CreateRunResponse)
    assert (await settle(sdk.engine, created.runId)).status == "completed"


async def test_resolve_by_run_completes_the_approval(sdk: Sdk) -> None:
    c = sdk.client()
    run_id = await sdk.waiting_run()
    waiting = await sdk.call(c.runs_get, run_id)
    typed(waiting, RunSnapshot)
    assert waiting.status == "waiting-approval" and waiting.currentNodeId == "gate"

    resolved = await sdk.call(
        c.interrupts_resolve_by_run, run_id, "gate", ResolveInterruptRequest(resumeValue={"action": "accept"})
    )
    typed(resolved, ResolveInterruptResponse)
    # ``status`` is the interrupt's (resolved, or pending while a quorum or an ask keeps it open).
    assert (resolved.runId, resolved.nodeId, resolved.status) == (run_id, "gate", "resolved")
    assert (await settle(sdk.engine, run_id)).status == "completed"

    again = await sdk.error(
        c.interrupts_resolve_by_run, run_id, "gate", ResolveInterruptRequest(resumeValue={"action": "accept"})
    )
    assert (again.status, again.envelope and again.envelope.error) == (409, "interrupt_already_resolved")


async def test_inspect_and_resolve_by_token(sdk: Sdk) -> None:
    c = sdk.client()
    run_id = await sdk.waiting_run()
    token = await sdk.token(run_id, "gate")

    seen = await sdk.call(c.interrupts_inspect_by_token, token)
    typed(seen, InterruptByTokenInspection)
    assert seen.kind == "approval" and seen.key
    assert seen.data["title"] == "Conformance approval"

    answered = await sdk.call(c.interrupts_resolve_by_token, token, ResolveInterruptRequest({"action": "accept"}))
    assert (answered["runId"], answered["nodeId"]) == (run_id, "gate")
    assert (await settle(sdk.engine, run_id)).status == "completed"

    used = await sdk.error(c.interrupts_resolve_by_token, token, ResolveInterruptRequest({"action": "accept"}))
    assert (used.status, used.envelope and used.envelope.error) == (409, "interrupt_already_resolved")
    inspected = await sdk.error(c.interrupts_inspect_by_token, token)
    assert inspected.status == 409


async def test_inspect_carries_the_interrupt_payload_fields(sdk: Sdk) -> None:
    run_id = await sdk.waiting_run("conformance-clarification")
    seen = await sdk.call(sdk.client().interrupts_inspect_by_token, await sdk.token(run_id, "ask"))
    typed(seen, InterruptByTokenInspection)
    record = await sdk.engine.store.interrupt_at(run_id, "ask")
    assert record is not None
    assert (seen.kind, seen.key, seen.data) == ("clarification", record.key, record.payload["data"])
    assert seen.data["questions"][0]["id"] == "q1"
    assert seen.resumeSchema == record.payload.get("resumeSchema")

    timed = await sdk.waiting_run("conformance-approval-timeout")
    seen = await sdk.call(sdk.client().interrupts_inspect_by_token, await sdk.token(timed, "gate"))
    assert seen.kind == "approval" and seen.timeoutMs == 1500


async def test_cancel_and_fork(sdk: Sdk) -> None:
    c = sdk.client()
    run_id = await sdk.waiting_run()
    cancelled = await sdk.call(c.runs_cancel, run_id, CancelRunRequest(reason="changed my mind"))
    typed(cancelled, CancelRunResponse)
    assert cancelled.runId == run_id and cancelled.status in ("cancelled", "cancelling")
    assert (await settle(sdk.engine, run_id)).status == "cancelled"
    # Cancelling a terminal run is idempotent; with no body too.
    assert (await sdk.call(c.runs_cancel, run_id)).status == "cancelled"
    gone = await sdk.error(c.interrupts_resolve_by_run, run_id, "gate", ResolveInterruptRequest({"action": "accept"}))
    assert (gone.status, gone.envelope and gone.envelope.error) == (422, "interrupt_cancelled")

    source = await sdk.call(c.runs_create, CreateRunRequest(workflowId="conformance-noop"))
    await settle(sdk.engine, source.runId)
    forked = await sdk.call(c.runs_fork, source.runId, ForkRunRequest(fromSeq=0, mode="replay"))
    typed(forked, ForkRunResponse)
    assert forked.sourceRunId == source.runId and forked.mode == "replay" and forked.runId != source.runId
    assert forked.eventsUrl.endswith(f"/v1/runs/{forked.runId}/events")
    assert (await settle(sdk.engine, forked.runId)).status == "completed"


async def test_every_error_path_raises_wop_error_with_its_envelope(sdk: Sdk) -> None:
    c = sdk.client()
    run_id = await sdk.waiting_run()

    unauthenticated = await sdk.error(sdk.client("not-a-key").runs_get, run_id)
    assert unauthenticated.status == 401 and unauthenticated.envelope and unauthenticated.envelope.error

    forbidden = await sdk.error(sdk.client("reader").runs_create, CreateRunRequest(workflowId="conformance-noop"))
    assert (forbidden.status, forbidden.envelope and forbidden.envelope.error) == (403, "forbidden")

    missing_run = await sdk.error(c.runs_get, "run_does_not_exist")
    assert missing_run.status == 404
    missing_wf = await sdk.error(c.runs_create, CreateRunRequest(workflowId="no-such-workflow"))
    assert missing_wf.status == 404
    unknown_token = await sdk.error(c.interrupts_inspect_by_token, "not-a-token")
    assert unknown_token.status == 404
    unknown_post = await sdk.error(c.interrupts_resolve_by_token, "not-a-token", ResolveInterruptRequest(None))
    assert unknown_post.status == 404
    other_tenant = await sdk.error(sdk.client("other").runs_get, run_id)
    assert other_tenant.status == 404

    bad_answer = await sdk.error(
        c.interrupts_resolve_by_run, run_id, "gate", ResolveInterruptRequest({"action": "maybe"})
    )
    assert (bad_answer.status, bad_answer.envelope and bad_answer.envelope.error) == (400, "validation_error")
    bad_fork = await sdk.error(c.runs_fork, run_id, ForkRunRequest(fromSeq=0, mode="branch"))
    assert bad_fork.status == 400
    mid_fork = await sdk.error(c.runs_fork, run_id, ForkRunRequest(fromSeq=3, mode="replay"))
    assert (mid_fork.status, mid_fork.envelope and mid_fork.envelope.details) == (
        400,
        {"problems": ["fromSeq: Input should be 0"]},
    )

    # The failed answers left the question open: it still resolves.
    token = await sdk.token(run_id, "gate")
    await sdk.call(c.interrupts_resolve_by_run, run_id, "gate", ResolveInterruptRequest({"action": "accept"}))
    await settle(sdk.engine, run_id)
    conflict = await sdk.error(c.interrupts_resolve_by_token, token, ResolveInterruptRequest({"action": "accept"}))
    assert conflict.status == 409

    expired_run = await sdk.waiting_run()
    record = await sdk.engine.store.interrupt_at(expired_run, "gate")
    assert record is not None
    expired, _ = sdk.engine.mint_token(record, ttl_ms=1)
    await asyncio.sleep(0.05)
    gone = await sdk.error(c.interrupts_inspect_by_token, expired)
    assert gone.status == 410


async def test_a_parent_waiting_on_its_child_reports_the_childs_waiting_status(sdk: Sdk) -> None:
    c = sdk.client()
    created = await sdk.call(c.runs_create, CreateRunRequest(workflowId="conformance-interrupt-parent-child-cancel"))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while (snap := await sdk.call(c.runs_get, created.runId)).status != "waiting-approval":
        assert loop.time() < deadline, f"parent stayed {snap.status}"
        await asyncio.sleep(0.05)
    typed(snap, RunSnapshot)
    cancelled = await sdk.call(c.runs_cancel, created.runId, CancelRunRequest(reason="conformance-test-cascade"))
    assert cancelled.status in ("cancelled", "cancelling")
    assert (await settle(sdk.engine, created.runId)).status == "cancelled"


async def test_a_long_poll_waits_the_seconds_the_sdk_asks_for(sdk: Sdk) -> None:
    """``timeout`` is in seconds (the SDK's ``timeout_seconds``, as OpenWOP v2 states it): a poll that
    asks for 10 s gets the answer's events when they are committed half a second later."""
    c = sdk.client()
    run_id = await sdk.waiting_run()
    last = (await sdk.call(c.runs_poll_events, run_id)).events[-1].sequence
    polling = asyncio.create_task(sdk.call(c.runs_poll_events, run_id, last_sequence=last, timeout_seconds=10))
    await asyncio.sleep(0.5)
    assert not polling.done()
    await sdk.call(
        c.interrupts_resolve_by_run, run_id, "gate", ResolveInterruptRequest(resumeValue={"action": "accept"})
    )
    polled = await asyncio.wait_for(polling, 10)
    assert polled.events and polled.events[0].sequence == last + 1
