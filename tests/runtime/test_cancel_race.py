"""Cancelling a run while an answer is being applied: no interrupt stays open on the cancelled run.

The race: gate g1 is answered, the executor runs on and opens gate g2, and the
run's cancel commits between the executor deciding to open g2 and g2's row being
written. The store hook below makes that interleaving happen every time.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from openwop_bridge import Engine, NodeContext, Workflow, approval
from openwop_bridge.core.auth import Subject
from openwop_bridge.core.decisions.answer import answer_decision
from openwop_bridge.core.decisions.common import Answer
from openwop_bridge.core.errors import AnswerAfterCancelError, InterruptAlreadyResolvedError
from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.runtime import joint
from openwop_bridge.store.base import CommitResult, RunCommit
from tests.core import build
from tests.helpers import ADMIN, settle


def two_gates(engine: Engine) -> None:
    wf = Workflow("two-gates")

    @wf.node("g1")
    async def g1(ctx: NodeContext) -> dict[str, Any]:
        return {"answer": await ctx.interrupt(approval("first gate"))}

    @wf.node("g2")
    async def g2(ctx: NodeContext) -> dict[str, Any]:
        return {"answer": await ctx.interrupt(approval("second gate"))}

    wf.edge("g1", "g2")
    wf.register(engine)


async def test_an_interrupt_opened_after_the_cancel_committed_is_closed(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_gates(engine)
    run = await engine.create_run(ADMIN, "two-gates")
    await settle(engine, run.run_id)
    real_commit = engine.store.commit
    cancels: list[dict[str, Any]] = []

    async def cancel_first(commit: RunCommit) -> CommitResult:
        # The cancel commits after the executor decided to open g2 and before g2's row is written.
        if any(i.node_id == "g2" for i in commit.new_interrupts) and not cancels:
            cancels.append(await engine.cancel_run(run.run_id, ADMIN, "changed my mind"))
        return await real_commit(commit)

    monkeypatch.setattr(engine.store, "commit", cancel_first)
    # The race needs g2's step in a transaction of its own, after the answer's: no joint commit.
    monkeypatch.setattr(joint, "BUDGET_S", 0)
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="g1")
    done = await settle(engine, run.run_id, statuses=("completed", "failed", "cancelled"))
    assert cancels == [{"runId": run.run_id, "status": "cancelling"}]
    assert done.status == "cancelled"
    assert await engine.store.run_interrupts(run.run_id, open_only=True) == []
    g2 = await engine.store.interrupt_at(run.run_id, "g2")
    assert g2 is not None and g2.status == "cancelled"
    inbox = await engine.inbox(ADMIN)
    assert [i for i in inbox["items"] if i["runId"] == run.run_id] == []
    # Its link and its run-scoped address both refuse an answer; nothing is resolved.
    token, _ = engine.mint_token(g2)
    with pytest.raises(InterruptAlreadyResolvedError):
        await engine.resolve_token(token, {"action": "accept"})
    with pytest.raises(AnswerAfterCancelError):
        await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="g2")
    after = await engine.store.interrupt_at(run.run_id, "g2")
    assert after is not None and after.status == "cancelled" and after.resolution is None


async def test_resolve_and_cancel_at_the_same_moment_leave_nothing_open(engine: Engine) -> None:
    two_gates(engine)
    for _ in range(10):
        run = await engine.create_run(ADMIN, "two-gates")
        await settle(engine, run.run_id)
        await asyncio.gather(
            engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="g1"),
            engine.cancel_run(run.run_id, ADMIN),
            return_exceptions=True,
        )
        done = await settle(engine, run.run_id, statuses=("completed", "failed", "cancelled"))
        assert done.status == "cancelled"
        assert await engine.store.run_interrupts(run.run_id, open_only=True) == []


def _records(run_status: str, control: dict[str, Any] | None) -> tuple[InterruptRecord, RunRecord]:
    """An open second gate on a run in ``run_status`` (its cancel recorded in ``control``)."""
    intr = build.interrupt("approval", {"title": "second gate", "actions": ["accept", "reject"]})
    return intr, build.run(run_status, control)


@pytest.mark.parametrize(
    ("status", "control"),
    [("cancelling", {"cancel": {"reason": "cancelled"}}), ("cancelled", None), ("waiting-approval", {"cancel": {}})],
)
def test_an_answer_on_a_run_whose_cancel_committed_is_refused(status: str, control: dict[str, Any] | None) -> None:
    intr, run = _records(status, control)
    run_scoped = answer_decision(Answer(principal=ADMIN, value={"action": "accept"}), 2, lambda p: f"{p}_1")
    with pytest.raises(AnswerAfterCancelError):
        run_scoped(intr, run)
    by_link = answer_decision(
        Answer(principal=None, value={"action": "accept"}, surface="token", token_intent="resolve"),
        2,
        lambda p: f"{p}_1",
    )
    with pytest.raises(InterruptAlreadyResolvedError):
        by_link(intr, run)


async def test_a_cancel_by_token_names_its_subject_on_what_it_closed_even_later(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race above, cancelled with a provider's token: the interrupt closed after the cancel committed, and
    the run's ``run.cancelled``, record the canceller's subject beside ``cancelledBy`` / ``resolvedBy``."""
    who = Subject(issuer="https://idp.example.com", subject_id="248289761001", lane="oidc")
    canceller = dataclasses.replace(ADMIN, subject=who)
    two_gates(engine)
    run = await engine.create_run(ADMIN, "two-gates")
    await settle(engine, run.run_id)
    real_commit = engine.store.commit
    cancelled: list[bool] = []

    async def cancel_first(commit: RunCommit) -> CommitResult:
        if any(i.node_id == "g2" for i in commit.new_interrupts) and not cancelled:
            cancelled.append(True)
            await engine.cancel_run(run.run_id, canceller, "changed my mind")
        return await real_commit(commit)

    monkeypatch.setattr(engine.store, "commit", cancel_first)
    monkeypatch.setattr(joint, "BUDGET_S", 0)
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="g1")
    assert (await settle(engine, run.run_id, statuses=("completed", "failed", "cancelled"))).status == "cancelled"
    docs = await engine.store.read_events(run.run_id)
    late = [d["payload"] for d in docs if d["type"] == "interrupt.resolved" and d.get("nodeId") == "g2"]
    assert [(p["resolvedBy"], p["resolvedBySubject"]) for p in late] == [("alice", who.ref())]
    (ended,) = [d["payload"] for d in docs if d["type"] == "run.cancelled"]
    assert (ended["cancelledBy"], ended["cancelledBySubject"]) == ("alice", who.ref())
