"""Slack: messages through a loopback stand-in for the Web API (driven by slack_sdk), and signed interactions."""

from __future__ import annotations

import hashlib
import hmac
import time
from pathlib import Path
from typing import Any

import pytest

from openwop_bridge.core.auth import SYSTEM
from tests.helpers import envelope, events
from tests.notify.host import SIGNING_SECRET, NotifyHost, gate, notify_host
from tests.notify.receivers import block_action, slack_signed

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

INTERACTIONS = "/notify/slack/interactions"


def _buttons(call: dict[str, Any]) -> list[dict[str, Any]]:
    actions = [b for b in call["blocks"] if b["type"] == "actions"]
    return list(actions[0]["elements"])


async def _click(host: NotifyHost, user: str, action_id: str, interrupt_id: str, **kw: Any) -> Any:
    body, headers = slack_signed(kw.pop("secret", SIGNING_SECRET), block_action(user, action_id, interrupt_id), **kw)
    return await host.client.post(INTERACTIONS, content=body, headers=headers)


async def _posted(host: NotifyHost, n: int) -> list[dict[str, Any]]:
    await host.until(lambda: len(host.slack.of("chat.postMessage")) >= n, f"{n} Slack posts")
    return host.slack.of("chat.postMessage")


async def test_a_dm_to_each_person_and_a_post_to_the_channel_with_approve_and_reject(tmp_path: Path) -> None:
    routes = [{"notify": ["alice", "slack:C0FINANCE"]}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], with_teams=False) as host:
        _, record = await host.start_gate()
        posts = await _posted(host, 2)
        assert sorted(p["channel"] for p in posts) == ["C0FINANCE", "U0ALICE"]
        assert all(auth == "Bearer xoxb-test-token" for _, _, auth in host.slack.calls)
        for post in posts:
            assert "Approve expense report EXP-1042" in post["text"]
            section = post["blocks"][0]["text"]["text"]
            assert "Approve expense report EXP-1042" in section and "Team offsite" in section
            assert "answer by" in post["blocks"][1]["elements"][0]["text"]
            buttons = _buttons(post)
            assert [b["action_id"] for b in buttons] == ["accept", "reject", "open_link"]
            assert buttons[0]["value"] == buttons[1]["value"] == record.interrupt_id
            assert buttons[2]["url"].startswith(f"{host.url}/v1/interrupts/")
        dm = next(p for p in posts if p["channel"] == "U0ALICE")
        channel = next(p for p in posts if p["channel"] == "C0FINANCE")
        dm_link = (await host.client.get(_buttons(dm)[2]["url"], headers={"Accept": "application/json"})).json()
        ch_link = (await host.client.get(_buttons(channel)[2]["url"], headers={"Accept": "application/json"})).json()
        assert (dm_link["intent"], dm_link["subject"]) == ("resolve", "alice")
        assert ch_link["intent"] == "inspect" and "subject" not in ch_link


async def test_a_form_kind_gets_a_link_button_and_no_approve(tmp_path: Path) -> None:
    from openwop_bridge import Workflow

    wf = Workflow("question")
    question = {"id": "cc", "question": "Which cost centre?", "schema": {"type": "string"}}
    wf.node("ask", type_id="core.clarificationGate", config={"questions": [question]})
    routes = [{"match": {"kind": "clarification"}, "notify": ["alice"]}]
    async with notify_host(tmp_path, routes=routes, workflows=[wf], with_teams=False) as host:
        await host.start_gate("question")
        (post,) = await _posted(host, 1)
        assert [b["action_id"] for b in _buttons(post)] == ["open_link"]
        assert _buttons(post)[0]["text"]["text"] == "Answer"
        assert "Which cost centre?" in post["blocks"][0]["text"]["text"]


async def test_an_allowed_click_decides_as_the_person_and_rewrites_the_message(tmp_path: Path) -> None:
    routes = [{"notify": ["alice"]}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], with_teams=False) as host:
        run_id, record = await host.start_gate()
        await _posted(host, 1)
        r = await _click(host, "U0ALICE", "accept", record.interrupt_id)
        assert r.status_code == 200, r.text
        closed = await host.engine.interrupt_record(record.interrupt_id)
        assert closed is not None and closed.status == "resolved"
        assert closed.resolution is not None and closed.resolution["resolvedBy"] == "alice"
        resolved = await events(host.engine, run_id, "interrupt.resolved")
        assert resolved[0]["payload"]["resolvedBy"] == "alice"
        # Rewritten at once by the click, and again (the same words) by the notice the closing planned.
        await host.until(lambda: bool(host.slack.of("chat.update")), "the message rewritten")
        updates = host.slack.of("chat.update")
        for update in updates:
            assert update["channel"] == "D0ALICE" and update["ts"] == "1700000000.000001"
            assert "Approved by alice" in str(update["blocks"]) and "accept" not in str(update["blocks"])


async def test_forged_stale_and_unsigned_interactions_are_401_and_decide_nothing(tmp_path: Path) -> None:
    async with notify_host(tmp_path, routes=[], workflows=[gate("expense")], with_teams=False) as host:
        _, record = await host.start_gate()
        forged = await _click(host, "U0ALICE", "accept", record.interrupt_id, secret="not-the-secret")
        envelope(forged, 401, "unauthenticated")
        stale = await _click(host, "U0ALICE", "accept", record.interrupt_id, at=int(time.time()) - 6 * 60)
        envelope(stale, 401, "unauthenticated")
        future = await _click(host, "U0ALICE", "accept", record.interrupt_id, at=int(time.time()) + 6 * 60)
        envelope(future, 401, "unauthenticated")
        body, headers = slack_signed(SIGNING_SECRET, block_action("U0ALICE", "accept", record.interrupt_id))
        tampered = body.replace(b"accept", b"reject")
        envelope(await host.client.post(INTERACTIONS, content=tampered, headers=headers), 401, "unauthenticated")
        bare = {"Content-Type": headers["Content-Type"]}
        envelope(await host.client.post(INTERACTIONS, content=body, headers=bare), 401, "unauthenticated")
        current = await host.engine.interrupt_record(record.interrupt_id)
        assert current is not None and current.open and not current.state.get("votes")


async def test_an_unknown_user_and_a_user_outside_the_gate_are_403_and_decide_nothing(tmp_path: Path) -> None:
    wf = gate("expense", approversList=["alice", "bob"], requiredRole="finance")
    async with notify_host(tmp_path, routes=[], workflows=[wf], with_teams=False) as host:
        _, record = await host.start_gate()
        envelope(await _click(host, "U0STRANGER", "accept", record.interrupt_id), 403, "forbidden")
        envelope(await _click(host, "U0EVE", "accept", record.interrupt_id), 403, "forbidden")  # no finance role
        # mallory holds the role but belongs to another tenant: the interrupt is not hers to see.
        envelope(await _click(host, "U0MALLORY", "accept", record.interrupt_id), 404, "interrupt_not_found")
        current = await host.engine.interrupt_record(record.interrupt_id)
        assert current is not None and current.open and not current.state.get("votes")
        assert host.slack.of("chat.update") == [], "a refused click starts no rewrite"


async def test_a_replayed_interaction_decides_nothing_twice(tmp_path: Path) -> None:
    wf = gate("expense", requiredApprovals=2, approversList=["alice", "bob"])
    async with notify_host(tmp_path, routes=[], workflows=[wf], with_teams=False) as host:
        run_id, record = await host.start_gate()
        body, headers = slack_signed(SIGNING_SECRET, block_action("U0ALICE", "accept", record.interrupt_id))
        first = await host.client.post(INTERACTIONS, content=body, headers=headers)
        assert first.status_code == 200
        replay = await host.client.post(INTERACTIONS, content=body, headers=headers)
        assert replay.status_code == 200, "a repeated vote changes nothing and is acknowledged"
        current = await host.engine.interrupt_record(record.interrupt_id)
        assert current is not None and current.open
        assert [v["voter"] for v in current.state["votes"]] == ["alice"]
        r = await _click(host, "U0BOB", "reject", record.interrupt_id)
        assert r.status_code == 200
        decided = await host.engine.interrupt_record(record.interrupt_id)
        assert decided is not None and decided.status == "resolved"
        late = await host.client.post(INTERACTIONS, content=body, headers=headers)
        envelope(late, 409, "interrupt_already_resolved")
        assert len(await events(host.engine, run_id, "interrupt.resolved")) == 1


async def test_a_gate_decided_elsewhere_rewrites_its_messages(tmp_path: Path) -> None:
    routes = [{"notify": ["alice", "bob"]}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], with_teams=False) as host:
        _, record = await host.start_gate()
        await _posted(host, 2)
        await host.engine.resolve(SYSTEM, {"action": "reject"}, interrupt_id=record.interrupt_id)
        await host.until(lambda: len(host.slack.of("chat.update")) == 2, "both messages rewritten")
        updates = host.slack.of("chat.update")
        assert sorted(u["channel"] for u in updates) == ["D0ALICE", "D0BOB"]
        assert all("Rejected by system" in str(u["blocks"]) for u in updates)


async def test_a_channel_slack_refuses_is_dead_at_once(tmp_path: Path) -> None:
    async with notify_host(tmp_path, routes=[{"notify": ["slack:C0GONE"]}], workflows=[gate("expense")]) as host:
        host.slack.unknown_channels.add("C0GONE")
        from openwop_bridge.notify.notice import Notice

        run_id, record = await host.start_gate()
        slack = host.setup.channels.get("slack")
        assert slack is not None
        notice = Notice(
            "ntc_x", "slack", "default", run_id, record.interrupt_id, "slack:C0GONE",
            {"address": "C0GONE", "person": None, "purpose": "notice"}, 1, 0,
        )  # fmt: skip
        outcome = await slack.deliver(notice)
        assert (outcome.kind, outcome.reason) == ("dead", "slack_channel_not_found")


async def test_a_gate_that_times_out_has_its_messages_say_so(tmp_path: Path) -> None:
    routes = [{"notify": ["alice"]}]
    async with notify_host(
        tmp_path, routes=routes, workflows=[gate("expense", timeoutMs=1000)], with_teams=False
    ) as host:
        await host.start_gate()
        await _posted(host, 1)
        await host.until(lambda: len(host.slack.of("chat.update")) == 1, "the message rewritten")
        (update,) = host.slack.of("chat.update")
        assert "nobody answered in time" in str(update["blocks"]), update["blocks"]


def _strings(value: Any) -> list[str]:
    """Every string of a Web API call's body, however deep."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


async def test_control_sequences_in_a_title_are_shown_as_text_in_every_field_slack_renders(tmp_path: Path) -> None:
    hostile = "<!channel> Pay now <https://evil.example|Approve> & <!everyone> <@U0BOB>"
    wf = gate("expense", title=hostile, description=hostile)
    async with notify_host(tmp_path, routes=[{"notify": ["alice"]}], workflows=[wf], with_teams=False) as host:
        _, record = await host.start_gate()
        (post,) = await _posted(host, 1)
        await host.engine.resolve(SYSTEM, {"action": "reject"}, interrupt_id=record.interrupt_id)
        await host.until(lambda: bool(host.slack.of("chat.update")), "the message rewritten")
        for call in [post, *host.slack.of("chat.update")]:
            assert "&lt;!channel&gt; Pay now &lt;https://evil.example|Approve&gt; &amp;" in call["text"]
            for text in _strings({k: v for k, v in call.items() if k in ("text", "blocks")}):
                assert "<" not in text and ">" not in text, text


async def test_malformed_signature_headers_are_401_and_decide_nothing(tmp_path: Path) -> None:
    async with notify_host(tmp_path, routes=[], workflows=[gate("expense")], with_teams=False) as host:
        _, record = await host.start_gate()
        body, headers = slack_signed(SIGNING_SECRET, block_action("U0ALICE", "accept", record.interrupt_id))
        for name, value in (
            ("X-Slack-Request-Timestamp", b"abc"),
            ("X-Slack-Request-Timestamp", b"1" * 5000),
            ("X-Slack-Request-Timestamp", b"-" + headers["X-Slack-Request-Timestamp"].encode()),
            ("X-Slack-Signature", "v0=\u00e9t\u00e9".encode()),
            ("X-Slack-Signature", headers["X-Slack-Signature"].encode() + "\u00e9".encode()),
        ):
            sent: dict[str, Any] = {**headers, name: value}
            envelope(await host.client.post(INTERACTIONS, content=body, headers=sent), 401, "unauthenticated")
        # A body that is no UTF-8, signed as it is.
        raw = b"payload=\xff\xfe"
        _, signed = slack_signed(SIGNING_SECRET, {})
        ts = signed["X-Slack-Request-Timestamp"]
        mac = hmac.new(SIGNING_SECRET.encode(), f"v0:{ts}:".encode() + raw, hashlib.sha256).hexdigest()
        sent = {**signed, "X-Slack-Signature": f"v0={mac}"}
        envelope(await host.client.post(INTERACTIONS, content=raw, headers=sent), 401, "unauthenticated")
        current = await host.engine.interrupt_record(record.interrupt_id)
        assert current is not None and current.open and not current.state.get("votes")


async def test_a_vote_on_an_open_quorum_shows_the_count_so_far(tmp_path: Path) -> None:
    wf = gate("expense", requiredApprovals=2, approversList=["alice", "bob"])
    async with notify_host(tmp_path, routes=[{"notify": ["alice"]}], workflows=[wf], with_teams=False) as host:
        _, record = await host.start_gate()
        await _posted(host, 1)
        r = await _click(host, "U0ALICE", "accept", record.interrupt_id)
        assert r.status_code == 200, r.text
        await host.until(lambda: bool(host.slack.of("chat.update")), "the vote shown")
        (update,) = host.slack.of("chat.update")
        assert update["blocks"][-1]["elements"][0]["text"] == "alice voted accept (1 of 2)"
