"""A quorum of three, end to end: three mails, three different links, three votes, each recorded as its person."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import events, settle
from tests.notify.host import gate, notify_host
from tests.notify.receivers import mail_parts

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

LINK = re.compile(r"(http://127\.0\.0\.1:\d+/v1/interrupts/\S+)")


async def test_three_approvers_three_mails_three_links_three_votes(tmp_path: Path) -> None:
    people = {
        name: {"tenant": "default", "email": f"{name}@example.com", "roles": ["finance"]}
        for name in ("alice", "bob", "carol")
    }
    wf = gate("expense", requiredApprovals=3, approversList=["alice", "bob", "carol"])
    routes = [{"match": {"workflowId": "expense"}, "notify": ["role:finance"]}]
    async with notify_host(tmp_path, routes=routes, workflows=[wf], people=people, with_teams=False) as host:
        run_id, record = await host.start_gate()
        await host.until(lambda: len(host.smtp.mails) == 3, "three mails")
        links = {rcpts[0].split("@")[0]: LINK.findall(mail_parts(m)[0])[0] for rcpts, m in host.smtp.mails}
        assert sorted(links) == ["alice", "bob", "carol"]
        assert len(set(links.values())) == 3
        for n, who in enumerate(("carol", "alice", "bob"), start=1):
            r = await host.client.post(links[who], json={"resumeValue": {"action": "accept"}})
            assert r.status_code == 200, r.text
            assert r.json()["status"] == ("resolved" if n == 3 else "pending")
        closed = await host.engine.interrupt_record(record.interrupt_id)
        assert closed is not None and closed.status == "resolved"
        assert [v["voter"] for v in closed.state["votes"]] == ["carol", "alice", "bob"]
        granted = [e["payload"] for e in await events(host.engine, run_id, "approval.granted")]
        assert [p["principal"] for p in granted] == ["carol", "alice", "bob"]
        audit = [a for a in await host.engine.audit(run_id) if a["action"] == "approval.vote.accept"]
        assert [a["principal"] for a in audit] == ["carol", "alice", "bob"]
        await settle(host.engine, run_id)
        sent = await events(host.engine, run_id, "notification.sent")
        assert sorted(e["payload"]["recipient"] for e in sent) == ["alice", "bob", "carol"]
        assert all("@" not in str(e["payload"]) for e in sent), "events never carry an address"
