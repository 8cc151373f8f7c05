"""Small helpers shared by the tests."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx

from openwop_bridge import Engine, Workflow, spec
from openwop_bridge.core.auth import Principal

ADMIN = Principal("alice", roles=frozenset({"admin"}))
WAITING = ("waiting-approval", "waiting-input", "waiting-external")
TERMINAL = ("completed", "failed", "cancelled")


def envelope(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The body of an error response, once it is the OpenWOP error envelope with ``status`` and ``code``."""
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    assert set(body) <= {"error", "message", "details"} and body["error"] == code and body["message"]
    assert not list(spec.validator("error-envelope.schema.json").iter_errors(body))
    return body


async def settle(
    engine: Engine, run_id: str, *, statuses: tuple[str, ...] = WAITING + TERMINAL, timeout: float = 10.0
) -> Any:
    """Wait until a run reaches one of ``statuses`` with nothing left to do; return the run record.

    "Nothing left to do": no executor of this engine drives it, and the store no longer flags
    work for it (an answer that just committed wakes the run before any executor has picked it
    up, so the run still shows the status it had while it waited).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        run = await engine.store.load_run(run_id)
        if run is not None and run.status in statuses and not run.needs_work and run_id not in engine._executors:
            return run
        if loop.time() > deadline:
            raise AssertionError(f"run {run_id} is {run.status if run else 'missing'}, wanted one of {statuses}")
        await asyncio.sleep(0.005)


async def created_waiting(
    client: httpx.AsyncClient, engine: Engine, headers: dict[str, str], workflow: str = "conformance-approval"
) -> str:
    """``POST /v1/runs`` for ``workflow`` (201), settled at its first wait or end; returns the run id."""
    r = await client.post("/v1/runs", json={"workflowId": workflow}, headers=headers)
    assert r.status_code == 201, r.text
    run_id: str = r.json()["runId"]
    await settle(engine, run_id)
    return run_id


async def event_types(engine: Engine, run_id: str) -> list[str]:
    """The types of a run's committed events, in order."""
    return [e["type"] for e in await engine.store.read_events(run_id)]


async def events(engine: Engine, run_id: str, type_: str | None = None) -> list[dict[str, Any]]:
    """A run's committed events (optionally of one type)."""
    docs = await engine.store.read_events(run_id)
    return [d for d in docs if type_ is None or d["type"] == type_]


def workflow_doc(workflow_id: str, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> dict[str, Any]:
    """A workflow document: the given nodes and edges, no triggers, variables, metadata or settings."""
    return {
        "id": workflow_id,
        "name": workflow_id.replace("-", " "),
        "version": "1",
        "triggers": [],
        "variables": [],
        "metadata": {},
        "settings": {},
        "nodes": nodes,
        "edges": edges,
    }


def gate_then_wait(delay_ms: int) -> dict[str, Any]:
    """``gate-then-wait``: an approval gate, then a ``core.delay`` of ``delay_ms`` (mid-run for a while)."""
    gate = {
        "id": "gate",
        "typeId": "core.approvalGate",
        "name": "g",
        "position": {"x": 0, "y": 0},
        "config": {"title": "Go?", "actions": ["accept", "reject"]},
        "inputs": {},
    }
    wait = {
        "id": "wait",
        "typeId": "core.delay",
        "name": "w",
        "position": {"x": 1, "y": 0},
        "config": {"delayMs": delay_ms},
        "inputs": {},
    }
    return workflow_doc("gate-then-wait", [gate, wait], [{"id": "e", "sourceNodeId": "gate", "targetNodeId": "wait"}])


def two_sign_offs(engine: Engine, workflow_id: str, actions: list[str]) -> None:
    """Register ``workflow_id``: a start node, then two approval gates side by side, ``legal`` and
    ``finance`` ("<name> sign-off"), each allowing ``actions``."""
    wf = Workflow(workflow_id)
    wf.node("start", type_id="core.noop")
    for name in ("legal", "finance"):
        wf.node(
            name,
            type_id="core.approvalGate",
            after="start",
            config={"title": f"{name} sign-off", "actions": list(actions)},
        )
    wf.register(engine)


async def alice_away(engine: Engine, workflow_id: str) -> str:
    """A gate ``workflow_id`` waiting on alice, who delegates to bob for an hour; the delegation's id."""
    wf = Workflow(workflow_id)
    wf.node("gate", type_id="core.approvalGate", config={"title": "Pay?", "approversList": ["alice"]})
    wf.register(engine)
    made = await engine.create_delegation(ADMIN, delegate="bob", until_ms=int(time.time() * 1000) + 3_600_000)
    return made.delegation_id


async def answered_for_alice(engine: Engine, interrupt_id: str, delegation_id: str) -> None:
    """The interrupt holds alice's vote cast by bob under ``delegation_id``, and the decision record says so."""
    record = await engine.store.get_interrupt(interrupt_id)
    assert record is not None
    (vote,) = record.state["votes"]
    assert (vote["voter"], vote["actingPrincipal"], vote["delegation"]) == ("alice", "bob", delegation_id)
    rows = [json.loads(row.body) for row in await engine.store.decision_records(None, 100)]
    (used,) = [r for r in rows if r["decision"] == "vote" and r["interruptId"] == interrupt_id]
    assert (used["by"], used["delegation"]) == ("alice", delegation_id), used
    assert used["subject"]["subjectId"] == "alice" and used["subject"]["actor"]["subjectId"] == "bob", used


async def unanswered(engine: Engine, interrupt_id: str) -> None:
    """The interrupt is still open, with no vote."""
    record = await engine.store.get_interrupt(interrupt_id)
    assert record is not None and record.open and not record.state.get("votes"), record
