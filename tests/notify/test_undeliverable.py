"""``onUndeliverable``: once every first notice of an interrupt died, fail closed, escalate, or keep waiting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge.core.notices import POLICY_CHANNEL
from openwop_bridge.notify.worker import Settled
from tests.helpers import events, settle
from tests.notify.host import NotifyHost, gate, notify_host

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store


def _refuse_everyone(host: NotifyHost) -> None:
    """SMTP 550 for alice and bob, and Slack refusing their DMs: every notice to them dies at once."""
    host.smtp.rcpt_replies.update(dict.fromkeys(("alice@example.com", "bob@example.com"), "550 5.1.1 No such user"))
    host.slack.unknown_channels.update({"U0ALICE", "U0BOB"})


def _route(policy: str, **more: Any) -> list[dict[str, Any]]:
    return [{"match": {"workflowId": "expense"}, "notify": ["alice", "bob"], "onUndeliverable": policy, **more}]


async def _all_dead(host: NotifyHost, settled: list[Settled], n: int = 4, *, applied: bool = True) -> None:
    """Wait for ``n`` dead notices, and (``applied``) for the policy notice their last one wrote to be applied."""
    await host.until(lambda: sum(1 for s in settled if s.status == "dead") == n, f"{n} dead notices")
    if applied:
        await host.until(lambda: any(s.notice.channel == POLICY_CHANNEL for s in settled), "the policy applied")


async def test_fail_cancels_the_interrupt_and_the_approval_fails_closed(tmp_path: Path) -> None:
    async with notify_host(tmp_path, routes=_route("fail"), workflows=[gate("expense")], with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        _refuse_everyone(host)
        run_id, record = await host.start_gate()
        await _all_dead(host, settled)
        closed = await host.engine.interrupt_record(record.interrupt_id)
        assert closed is not None and not closed.open
        assert closed.resolution is not None
        value = closed.resolution["resumeValue"]
        assert (value["action"], value["reason"]) == ("reject", "undeliverable"), "never accepted"
        # The decision record keeps the policy's decision: a cancel by the host, for that reason.
        (row,) = await host.engine.store.decision_records(None, 10)
        recorded = json.loads(row.body)
        assert (recorded["decision"], recorded["by"], recorded["reason"], recorded["runId"]) == (
            "cancel",
            "system",
            "undeliverable",
            run_id,
        )
        failed = await events(host.engine, run_id, "notification.failed")
        assert len(failed) == 4 and {e["payload"]["reason"] for e in failed} == {
            "smtp_550_recipient",
            "slack_channel_not_found",
        }


async def test_fail_on_a_gate_the_host_may_not_decide_cancels_the_run(tmp_path: Path) -> None:
    wf = gate("expense", approversList=["alice", "bob"])
    async with notify_host(tmp_path, routes=_route("fail"), workflows=[wf], with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        _refuse_everyone(host)
        run_id, record = await host.start_gate()
        await _all_dead(host, settled)
        run = await settle(host.engine, run_id)
        assert run.status == "cancelled"
        closed = await host.engine.interrupt_record(record.interrupt_id)
        assert closed is not None and not closed.open and closed.status != "resolved"


async def test_escalate_tells_escalate_to_at_once(tmp_path: Path) -> None:
    routes = _route("escalate", escalateTo=["carol"])
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        _refuse_everyone(host)
        _, record = await host.start_gate()
        await _all_dead(host, settled)
        await host.until(lambda: len(host.smtp.mails) == 1, "the escalation mail")
        ((rcpts, message),) = host.smtp.mails
        assert rcpts == ["carol@example.com"] and str(message["Subject"]).startswith("Escalated: [Approval]")
        current = await host.engine.interrupt_record(record.interrupt_id)
        assert current is not None and current.open


async def test_wait_keeps_waiting_and_one_delivered_notice_is_enough(tmp_path: Path) -> None:
    async with notify_host(tmp_path, routes=_route("wait"), workflows=[gate("expense")], with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        _refuse_everyone(host)
        _, record = await host.start_gate()
        await _all_dead(host, settled, applied=False)
        current = await host.engine.interrupt_record(record.interrupt_id)
        assert current is not None and current.open
    async with notify_host(
        tmp_path / "b", routes=_route("fail"), workflows=[gate("expense")], with_teams=False
    ) as host:
        settled = []
        host.engine.notify.on_settled(settled.append)
        _refuse_everyone(host)
        host.smtp.rcpt_replies.pop("alice@example.com")  # alice's mail gets through
        _, record = await host.start_gate()
        await _all_dead(host, settled, n=3, applied=False)
        await host.until(lambda: len(settled) == 4, "every notice settled")
        current = await host.engine.interrupt_record(record.interrupt_id)
        assert current is not None and current.open, "someone was told: nothing fails"


async def test_fail_on_a_question_fails_its_run(tmp_path: Path) -> None:
    from openwop_bridge import Workflow

    wf = Workflow("expense")
    question = {"id": "cc", "question": "Which cost centre?", "schema": {"type": "string"}}
    wf.node("ask", type_id="core.clarificationGate", config={"questions": [question]})
    async with notify_host(tmp_path, routes=_route("fail"), workflows=[wf], with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        _refuse_everyone(host)
        run_id, record = await host.start_gate()
        await _all_dead(host, settled)
        run = await settle(host.engine, run_id)
        assert run.status == "cancelled", "never answered by default: the question's run ends"
        closed = await host.engine.interrupt_record(record.interrupt_id)
        assert closed is not None and closed.status == "cancelled"
