"""``GET /v1/analytics/decisions``: exact figures on a crafted set of decisions, on SQLite and PostgreSQL.

The engine runs on a clock the test moves, so every request, vote, notice and decision has a known time;
notices are written, claimed and settled through the store's own outbox calls at those times.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx
import pytest

from openwop_bridge import Engine, Workflow
from openwop_bridge.core.auth import SYSTEM, KeyRing, Principal, make_key
from openwop_bridge.core.clock import SystemClock, iso_ms
from openwop_bridge.core.notices import NoticeDraft
from openwop_bridge.host.app import create_app
from openwop_bridge.runtime.config import EngineConfig
from tests.conftest import KEYS, _store, auth, fixture_workflows
from tests.helpers import envelope, settle

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store

BASE = 1_795_000_000_000  # 2026-11-18T…
AUDITOR = make_key("key-auditor-01", principal="audrey", scopes=["audit:read"])
AUDITOR_AUTH = {"Authorization": "Bearer key-auditor-01"}
ROUTE = "/v1/analytics/decisions"


class ManualClock(SystemClock):
    """Time stands where the test puts it."""

    def __init__(self, at: int) -> None:
        self.at = at

    def now_ms(self) -> int:
        return self.at


def _person(name: str, tenant: str = "default") -> Principal:
    return Principal(id=name, tenant=tenant, scopes=frozenset({"*"}))


def _workflows() -> list[Workflow]:
    gate = Workflow("gate")
    gate.node("gate", type_id="core.approvalGate", config={"title": "Pay?", "actions": ["accept", "reject"]})
    quorum = Workflow("quorum")
    quorum.node(
        "gate", type_id="core.approvalGate", config={"title": "Ship?", "actions": ["accept"], "requiredApprovals": 2}
    )
    timed = Workflow("timed")
    timed.node("gate", type_id="core.approvalGate", config={"title": "Now?", "timeoutMs": 50_000})
    ask = Workflow("ask")
    ask.node("gate", type_id="core.clarificationGate", config={"question": "Which cost center?"})
    return [gate, quorum, timed, ask]


Build = Callable[..., Coroutine[Any, Any, tuple[Engine, ManualClock, httpx.AsyncClient]]]


@pytest.fixture
async def bridge(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Build]:
    """Build engines on a manual clock (``cap``: the report's read cap), each served in process."""
    built: list[Engine] = []

    async def build(cap: int = 100_000, at: int = BASE) -> tuple[Engine, ManualClock, httpx.AsyncClient]:
        clock = ManualClock(at)
        eng = Engine(
            _store(request, tmp_path / f"a{len(built)}.db"),
            workflows=fixture_workflows(),
            clock=clock,
            config=EngineConfig(decision_rows_cap=cap),
        )
        for wf in _workflows():
            wf.register(eng)
        await eng.start()
        built.append(eng)
        app = create_app(eng, KeyRing([*KEYS.values(), AUDITOR]), manage_engine=False)
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test")
        clients.append(client)
        return eng, clock, client

    clients: list[httpx.AsyncClient] = []
    yield build
    for c in clients:
        await c.aclose()
    for eng in built:
        await eng.stop()


async def _open(engine: Engine, workflow: str, tenant: str = "default") -> tuple[str, str]:
    run = await engine.create_run(SYSTEM, workflow, tenant=tenant)
    await settle(engine, run.run_id)
    (record,) = await engine.run_interrupts(run.run_id, open_only=True)
    return run.run_id, record.interrupt_id


async def _decide(engine: Engine, clock: ManualClock, at: int, who: str, run_id: str, value: Any) -> None:
    clock.at = at
    await engine.resolve(_person(who), value, run_id=run_id, node_id="gate")
    await settle(engine, run_id)


async def _notice(engine: Engine, clock: ManualClock, run_id: str, interrupt_id: str, at: int, outcome: str) -> None:
    """A mail about the interrupt, written and attempted at ``at``: ``delivered`` or ``dead``."""
    clock.at = at
    draft = NoticeDraft("email", "email:someone@example.com", {"subject": "decide"}, interrupt_id=interrupt_id)
    await engine.store.outbox_add("default", run_id, [draft], at)
    claimed = await engine.store.outbox_claim("analytics-test", at, 60_000, 10, channels=("email",))
    assert len(claimed) == 1
    notice = claimed[0]
    assert await engine.store.outbox_settle(notice.notice_id, "analytics-test", notice.attempt, outcome, 0, "x", at)


async def _crafted(engine: Engine, clock: ManualClock) -> None:
    """The decisions every figure below is worked out from (times relative to BASE)."""
    # Before the window: alice approves, 3 days earlier.
    clock.at = BASE - 3 * 86_400_000
    old, _ = await _open(engine, "gate")
    await _decide(engine, clock, clock.at + 500, "alice", old, {"action": "accept"})
    # A: alice approves 2 s after the request (no notice).
    clock.at = BASE
    a, _ = await _open(engine, "gate")
    await _decide(engine, clock, BASE + 2_000, "alice", a, {"action": "accept"})
    # B: requested at +10 s, a mail delivered at +70 s, bob rejects at +73 s.
    clock.at = BASE + 10_000
    b, b_id = await _open(engine, "gate")
    await _notice(engine, clock, b, b_id, BASE + 70_000, "delivered")
    await _decide(engine, clock, BASE + 73_000, "bob", b, {"action": "reject", "reason": "no"})
    # C: a quorum of two: alice at +101 s, carol at +130 s.
    clock.at = BASE + 100_000
    c, _ = await _open(engine, "quorum")
    await _decide(engine, clock, BASE + 101_000, "alice", c, {"action": "accept"})
    await _decide(engine, clock, BASE + 130_000, "carol", c, {"action": "accept"})
    # D: bob answers a question at +240 s (asked at +200 s).
    clock.at = BASE + 200_000
    d, _ = await _open(engine, "ask")
    await _decide(engine, clock, BASE + 240_000, "bob", d, {"answers": [{"id": "q1", "answer": "CC-7"}]})
    # E: alice cancels at +308 s (requested at +300 s).
    clock.at = BASE + 300_000
    e, e_id = await _open(engine, "gate")
    clock.at = BASE + 308_000
    await engine.cancel_interrupt(_person("alice"), e_id, "cancelled")
    await settle(engine, e)
    # F: times out at +450 s (requested at +400 s, 50 s to decide).
    clock.at = BASE + 400_000
    f, f_id = await _open(engine, "timed")
    clock.at = BASE + 450_000
    engine._timers.poke()
    await settle(engine, f, statuses=("failed",))
    record = await engine.store.get_interrupt(f_id)
    assert record is not None and record.status == "expired"
    # G: the mail dies at +501 s; alice approves at +600 s (requested at +500 s).
    clock.at = BASE + 500_000
    g, g_id = await _open(engine, "gate")
    await _notice(engine, clock, g, g_id, BASE + 501_000, "dead")
    await _decide(engine, clock, BASE + 600_000, "alice", g, {"action": "accept"})
    # Another tenant's decision, in the window: never counted.
    clock.at = BASE + 700_000
    h, h_id = await _open(engine, "gate", tenant="other")
    await _notice_other(engine, h, h_id)
    clock.at = BASE + 701_000
    await engine.resolve(_person("olga", "other"), {"action": "reject"}, run_id=h, node_id="gate")
    await settle(engine, h)
    clock.at = BASE + 800_000


async def _notice_other(engine: Engine, run_id: str, interrupt_id: str) -> None:
    draft = NoticeDraft("email", "email:olga@example.com", {"subject": "decide"}, interrupt_id=interrupt_id)
    await engine.store.outbox_add("other", run_id, [draft], BASE + 700_000)
    (notice,) = await engine.store.outbox_claim("analytics-test", BASE + 700_000, 60_000, 10, channels=("email",))
    await engine.store.outbox_settle(notice.notice_id, "analytics-test", notice.attempt, "dead", 0, "x", BASE + 700_500)


def _outcomes(**counts: int) -> dict[str, int]:
    return {"approved": 0, "rejected": 0, "answered": 0, "cancelled": 0, "expired": 0, **counts}


def _times(*values: int | None) -> dict[str, int | None]:
    count, median, p90 = values if values else (0, None, None)
    return {"count": count, "median": median, "p90": p90}


WINDOW = {"from": iso_ms(BASE - 3_600_000), "to": str(BASE + 86_400_000)}


async def test_figures_by_approver_are_exact(bridge: Build) -> None:
    engine, clock, client = await bridge()
    await _crafted(engine, clock)
    r = await client.get(ROUTE, params={**WINDOW, "groupBy": "approver"}, headers=AUDITOR_AUTH)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["from"] == iso_ms(BASE - 3_600_000) and body["to"] == iso_ms(BASE + 86_400_000)
    assert (body["groupBy"], body["truncated"], body["interruptsRead"], body["fastWithinMs"]) == (
        "approver",
        False,
        7,
        5_000,
    )
    groups = {g["key"]: g for g in body["groups"]}
    assert list(groups) == ["alice", "bob", "carol", "system:timeout"]
    assert groups["alice"] == {
        "key": "alice",
        "decisions": 4,
        "outcomes": _outcomes(approved=3, cancelled=1),
        "requestToDecisionMs": _times(4, 2_000, 100_000),
        "noticeToDecisionMs": _times(),
        "undeliverable": 1,
        "fastDecisions": 2,
        "fastShare": 0.5,
        "rubberStamp": True,
    }
    assert groups["bob"] == {
        "key": "bob",
        "decisions": 2,
        "outcomes": _outcomes(rejected=1, answered=1),
        "requestToDecisionMs": _times(2, 40_000, 63_000),
        "noticeToDecisionMs": _times(1, 3_000, 3_000),
        "undeliverable": 0,
        "fastDecisions": 1,
        "fastShare": 0.5,
        "rubberStamp": True,
    }
    assert groups["carol"]["outcomes"] == _outcomes(approved=1)
    assert groups["carol"]["requestToDecisionMs"] == _times(1, 30_000, 30_000)
    assert (groups["carol"]["fastShare"], groups["carol"]["rubberStamp"]) == (0.0, False)
    assert groups["system:timeout"]["outcomes"] == _outcomes(expired=1)
    assert groups["system:timeout"]["requestToDecisionMs"] == _times()
    assert groups["system:timeout"]["rubberStamp"] is False
    assert body["total"]["decisions"] == 8 and body["total"]["undeliverable"] == 1
    assert body["total"]["outcomes"] == _outcomes(approved=4, rejected=1, answered=1, cancelled=1, expired=1)


async def test_figures_by_workflow_and_by_kind(bridge: Build) -> None:
    engine, clock, client = await bridge()
    await _crafted(engine, clock)
    r = await client.get(ROUTE, params={**WINDOW, "groupBy": "workflow"}, headers=AUDITOR_AUTH)
    by_workflow = {g["key"]: g for g in r.json()["groups"]}
    assert list(by_workflow) == ["gate", "quorum", "ask", "timed"]
    assert by_workflow["gate"]["outcomes"] == _outcomes(approved=2, rejected=1, cancelled=1)
    assert by_workflow["gate"]["requestToDecisionMs"] == _times(4, 8_000, 100_000)
    assert by_workflow["gate"]["noticeToDecisionMs"] == _times(1, 3_000, 3_000)
    assert by_workflow["gate"]["undeliverable"] == 1
    assert "rubberStamp" not in by_workflow["gate"]
    assert by_workflow["quorum"]["decisions"] == 2, "each vote is its voter's decision"
    assert by_workflow["quorum"]["requestToDecisionMs"] == _times(2, 1_000, 30_000)
    assert by_workflow["ask"]["outcomes"] == _outcomes(answered=1)
    assert by_workflow["timed"]["outcomes"] == _outcomes(expired=1)
    r = await client.get(ROUTE, params={**WINDOW, "groupBy": "kind"}, headers=AUDITOR_AUTH)
    by_kind = {g["key"]: g["outcomes"] for g in r.json()["groups"]}
    assert by_kind == {
        "approval": _outcomes(approved=4, rejected=1, cancelled=1, expired=1),
        "clarification": _outcomes(answered=1),
    }


async def test_the_default_window_is_the_last_30_days_and_tenants_stay_apart(bridge: Build) -> None:
    engine, clock, client = await bridge()
    await _crafted(engine, clock)
    r = await client.get(ROUTE, headers=AUDITOR_AUTH)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["to"] == iso_ms(BASE + 800_000) and body["from"] == iso_ms(BASE + 800_000 - 30 * 86_400_000)
    assert body["groupBy"] == "approver"
    assert body["interruptsRead"] == 8, "the decision 3 days back is in the last 30 days"
    assert {g["key"] for g in body["groups"]} == {"alice", "bob", "carol", "system:timeout"}
    other = await client.get(ROUTE, params=WINDOW, headers=auth("other"))
    assert other.status_code == 200, other.text
    (olga,) = other.json()["groups"]
    assert olga["key"] == "olga" and olga["outcomes"] == _outcomes(rejected=1) and olga["undeliverable"] == 1
    assert other.json()["interruptsRead"] == 1


async def test_audit_read_is_needed(bridge: Build) -> None:
    _, _, client = await bridge()
    for who in ("bob", "reader"):
        envelope(await client.get(ROUTE, headers=auth(who)), 403, "forbidden")
    envelope(await client.get(ROUTE), 401, "unauthenticated")
    assert (await client.get(ROUTE, headers=auth("admin"))).status_code == 200


@pytest.mark.parametrize(
    "params",
    [
        {"groupBy": "team"},
        {"groupBy": ""},
        {"to": ""},
        {"from": "yesterday"},
        {"to": "2026-13-01T00:00:00Z"},
        {"from": "-5"},
        {"from": str(BASE), "to": str(BASE)},
        {"from": str(BASE), "to": str(BASE - 1)},
        {"from": "2025-01-01T00:00:00Z", "to": "2026-01-03T00:00:00Z"},
        {"from": "99999999999999999999"},
    ],
)
async def test_bad_parameters_are_400(bridge: Build, params: dict[str, str]) -> None:
    _, _, client = await bridge()
    envelope(await client.get(ROUTE, params=params, headers=AUDITOR_AUTH), 400, "validation_error")


async def test_a_window_of_366_days_is_allowed(bridge: Build) -> None:
    _, _, client = await bridge()
    params = {"from": "2025-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"}
    assert (await client.get(ROUTE, params=params, headers=AUDITOR_AUTH)).status_code == 200


async def test_the_cap_cuts_the_window_and_says_so(bridge: Build) -> None:
    engine, clock, client = await bridge(cap=3)
    await _crafted(engine, clock)
    body = (await client.get(ROUTE, params={**WINDOW, "groupBy": "approver"}, headers=AUDITOR_AUTH)).json()
    assert (body["truncated"], body["interruptsRead"], body["cap"]) == (True, 3, 3)
    # The first three settled: A (alice), B (bob), C (alice and carol).
    groups = {g["key"]: g["decisions"] for g in body["groups"]}
    assert groups == {"alice": 2, "bob": 1, "carol": 1}
    exact = {"from": str(BASE), "to": str(BASE + 131_000)}
    body = (await client.get(ROUTE, params=exact, headers=AUDITOR_AUTH)).json()
    assert (body["truncated"], body["interruptsRead"]) == (False, 3), "a window holding just the cap is whole"


async def test_a_window_read_a_few_rows_at_a_time_gives_the_same_figures(
    bridge: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openwop_bridge.runtime import analytics

    engine, clock, client = await bridge()
    await _crafted(engine, clock)
    whole = (await client.get(ROUTE, params=WINDOW, headers=AUDITOR_AUTH)).json()
    monkeypatch.setattr(analytics, "CHUNK", 2)
    chunked = (await client.get(ROUTE, params=WINDOW, headers=AUDITOR_AUTH)).json()
    assert chunked == whole and chunked["interruptsRead"] == 7


async def test_the_store_hands_over_the_votes_fields_the_report_needs_only(bridge: Build) -> None:
    engine, clock, _ = await bridge()
    clock.at = BASE
    run_id, _ = await _open(engine, "quorum")
    edited = {"editedArtifactData": {"text": "x" * 10_000}}
    await _decide(engine, clock, BASE + 1_000, "alice", run_id, {"action": "accept", "reason": "fine", **edited})
    await _decide(engine, clock, BASE + 2_000, "carol", run_id, {"action": "accept"})
    page = await engine.store.settled_interrupts("default", BASE, BASE + 10_000, 10)
    ((row), *_) = page.rows
    assert list(row.votes) == [
        {"voter": "alice", "action": "accept", "at": iso_ms(BASE + 1_000), "cancelled": False},
        {"voter": "carol", "action": "accept", "at": iso_ms(BASE + 2_000), "cancelled": False},
    ]
    assert (row.resolved_by, row.action, row.requested_at, row.resolved_at) == (
        "carol",
        "edit-accept",
        BASE,
        BASE + 2_000,
    )
    after = await engine.store.settled_interrupts(
        "default", BASE, BASE + 10_000, 10, after=(BASE + 2_000, row.interrupt_id)
    )
    assert after.rows == [] and not after.more


async def test_from_alone_runs_to_now_and_must_be_before_it(bridge: Build) -> None:
    engine, clock, client = await bridge()
    await _crafted(engine, clock)
    body = (await client.get(ROUTE, params={"from": str(BASE)}, headers=AUDITOR_AUTH)).json()
    assert (body["from"], body["to"], body["interruptsRead"]) == (iso_ms(BASE), iso_ms(BASE + 800_000), 7)
    later = {"from": iso_ms(BASE + 900_000)}
    envelope(await client.get(ROUTE, params=later, headers=AUDITOR_AUTH), 400, "validation_error")
