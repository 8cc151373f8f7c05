"""kill -9 and restart: suspended runs stay suspended, answered runs finish, timers fire."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path

import httpx
import pytest

from openwop_bridge.spec import load_fixture
from tests.helpers import gate_then_wait
from tests.server import ServerProcess, wait_for_status

pytestmark = pytest.mark.slow
KEY = "test-key-123456"
H = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
def workflows(tmp_path: Path) -> Path:
    folder = tmp_path / "workflows"
    folder.mkdir()
    for name in ("conformance-approval", "conformance-approval-timeout"):
        (folder / f"{name}.json").write_text(json.dumps(load_fixture(name)))
    (folder / "gate-then-wait.json").write_text(json.dumps(gate_then_wait(1500)))
    return folder


def _server(db: Path, workflows: Path) -> ServerProcess:
    return ServerProcess(db, ["--no-demo", "--workflows", str(workflows), "--api-key", f"alice={KEY}+admin"])


def _wait(url: str, run_id: str, statuses: tuple[str, ...]) -> dict:
    return wait_for_status(url, H, run_id, statuses)


def _events(url: str, run_id: str) -> list[dict]:
    return httpx.get(f"{url}/v1/runs/{run_id}/events", headers={**H, "Accept": "application/json"}).json()["events"]


def _waiting_run(url: str, workflow_id: str) -> str:
    """Start a run of ``workflow_id`` and return its id once it waits on its approval."""
    run_id: str = httpx.post(f"{url}/v1/runs", json={"workflowId": workflow_id}, headers=H).json()["runId"]
    _wait(url, run_id, ("waiting-approval",))
    return run_id


def _accept_gate(url: str, run_id: str) -> None:
    """Accept the run's ``gate`` (200: the answer is acknowledged)."""
    r = httpx.post(f"{url}/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}, headers=H)
    assert r.status_code == 200


def test_suspended_run_survives_kill_9(tmp_path: Path, workflows: Path) -> None:
    db = tmp_path / "b.db"
    with _server(db, workflows) as server:
        run_id = _waiting_run(server.url, "conformance-approval")
        server.kill9()
        server.start()  # the same database, options and port
        snap = _wait(server.url, run_id, ("waiting-approval",))
        assert snap["interrupt"]["nodeId"] == "gate"
        _accept_gate(server.url, run_id)
        _wait(server.url, run_id, ("completed",))
        types = [e["type"] for e in _events(server.url, run_id)]
        assert types.count("interrupt.requested") == 1 and types[-1] == "run.completed"


def test_acknowledged_resolution_survives_kill_9_and_the_run_finishes(tmp_path: Path, workflows: Path) -> None:
    db = tmp_path / "b.db"
    with _server(db, workflows) as server:
        run_id = _waiting_run(server.url, "gate-then-wait")
        _accept_gate(server.url, run_id)
        server.kill9()  # the 200 was sent: the answer must survive; the delay node was mid-wait
        server.start()  # the same database, options and port
        snap = _wait(server.url, run_id, ("completed",))
        assert snap["nodeStates"]["gate"]["outputs"]["decidedBy"] == "alice"
        events = _events(server.url, run_id)
        keys = [e["payload"]["key"] for e in events if e["type"] == "interrupt.requested"]
        assert len(keys) == len(set(keys)) == 1
        assert [e["sequence"] for e in events] == list(range(len(events)))


def test_the_node_running_at_the_kill_runs_again_after_restart(tmp_path: Path, workflows: Path) -> None:
    db = tmp_path / "r.db"
    with _server(db, workflows) as server:
        run_id = _waiting_run(server.url, "gate-then-wait")
        _accept_gate(server.url, run_id)
        deadline = time.monotonic() + 10
        while not any(
            e["type"] == "node.started" and e["payload"]["nodeId"] == "wait" for e in _events(server.url, run_id)
        ):
            assert time.monotonic() < deadline, "the delay never started"
            time.sleep(0.02)
        server.kill9()  # mid-delay: the wait node is recorded as running
        server.start()  # the same database, options and port
        snap = _wait(server.url, run_id, ("completed",))
        assert snap["nodeStates"]["wait"]["status"] == "completed", snap["nodeStates"]
        assert snap["nodeStates"]["wait"]["outputs"] == {"delayedMs": 1500}
        events = _events(server.url, run_id)
        waits = [e["type"] for e in events if e.get("payload", {}).get("nodeId") == "wait"]
        assert waits == ["node.started", "node.completed"]  # the same activation, finished once
        assert [e["sequence"] for e in events] == list(range(len(events)))


def test_deadline_fires_after_restart_without_any_request(tmp_path: Path, workflows: Path) -> None:
    db = tmp_path / "b.db"
    with _server(db, workflows) as server:
        run_id = _waiting_run(server.url, "conformance-approval-timeout")
        server.kill9()
        time.sleep(1.6)  # the 1500 ms deadline passes while no server is running
        server.start()  # the same database, options and port
        snap = _wait(server.url, run_id, ("failed",))
        assert snap["error"]["code"] == "approval_rejected"
        resolved = [e for e in _events(server.url, run_id) if e["type"] == "interrupt.resolved"]
        assert resolved[0]["payload"]["action"] == "timeout" and resolved[0]["payload"]["decision"] == "rejected"


def test_a_second_server_on_the_same_sqlite_file_is_refused(tmp_path: Path, workflows: Path) -> None:
    db = tmp_path / "b.db"
    with _server(db, workflows):
        second = _server(db, workflows)
        with pytest.raises(RuntimeError) as err:
            second.start(timeout=10)
        assert "another openwop-bridge server is using" in str(err.value)


def test_conversation_refolds_after_kill_9_without_reprompting(tmp_path: Path, workflows: Path) -> None:
    db = tmp_path / "b.db"
    args = ["--workflows", str(workflows), "--api-key", f"alice={KEY}+admin"]
    with ServerProcess(db, args) as server:
        run_id = _waiting_run(server.url, "demo-conversation")
        r = httpx.post(f"{server.url}/v1/runs/{run_id}/interrupts/chat", json={"resumeValue": "Lisbon"}, headers=H)
        assert r.status_code == 200
        snap = _wait(server.url, run_id, ("waiting-approval",))
        server.kill9()
        server.start()  # the same database, options and port
        after = _wait(server.url, run_id, ("waiting-approval",))
        assert after["interrupt"]["interruptId"] == snap["interrupt"]["interruptId"]
        for answer in ("in May", "two people"):
            turn = httpx.get(f"{server.url}/v1/runs/{run_id}", headers=H).json()["interrupt"]["interruptId"]
            httpx.post(f"{server.url}/v1/runs/{run_id}/interrupts/chat", json={"resumeValue": answer}, headers=H)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                now = httpx.get(f"{server.url}/v1/runs/{run_id}", headers=H).json()
                if now["status"] == "completed" or now.get("interrupt", {}).get("interruptId") != turn:
                    break
                time.sleep(0.05)
        done = _wait(server.url, run_id, ("completed",))
        users = [t["content"] for t in done["channels"]["conversation"] if t["role"] == "user"]
        assert users == ["Lisbon", "in May", "two people"]
        requested = [e for e in _events(server.url, run_id) if e["type"] == "interrupt.requested"]
        indexes = [
            e["payload"]["data"].get("turnIndex") for e in requested if e["payload"]["kind"] == "conversation.exchange"
        ]
        assert indexes == [1, 2, 3]  # no turn was asked twice


async def test_a_kill_9_in_the_middle_of_a_group_commit_loses_no_acknowledged_answer(
    tmp_path: Path, workflows: Path
) -> None:
    db = tmp_path / "g.db"
    with _server(db, workflows) as server:
        async with httpx.AsyncClient(base_url=server.url, headers=H, timeout=10) as client:
            run_ids = []
            for _ in range(64):
                created = await client.post("/v1/runs", json={"workflowId": "conformance-approval"})
                run_ids.append(created.json()["runId"])
            for run_id in run_ids:
                _wait(server.url, run_id, ("waiting-approval",))
            acknowledged: list[str] = []
            enough = asyncio.Event()

            async def answer(mine: list[str]) -> None:
                # 16 clients answer at once, each in turn: the writer groups what arrives together.
                with contextlib.suppress(httpx.HTTPError):
                    for run_id in mine:
                        r = await client.post(
                            f"/v1/runs/{run_id}/interrupts/gate", json={"resumeValue": {"action": "accept"}}
                        )
                        if r.status_code == 200:
                            acknowledged.append(run_id)
                        if len(acknowledged) >= 24:
                            enough.set()

            clients = [asyncio.ensure_future(answer(run_ids[i::16])) for i in range(16)]
            await asyncio.wait_for(enough.wait(), 30)
            server.kill9()  # later answers are in flight, grouped into commits not yet durable
            await asyncio.gather(*clients)
        assert len(acknowledged) < len(run_ids), "the kill landed after every answer"
        server.start()  # the same database, options and port
        for run_id in acknowledged:
            assert _wait(server.url, run_id, ("completed",))["status"] == "completed"
        for run_id in set(run_ids) - set(acknowledged):
            # Unacknowledged: either committed whole (and then finished) or not at all (still open).
            snap = _wait(server.url, run_id, ("completed", "waiting-approval"))
            types = [e["type"] for e in _events(server.url, run_id)]
            assert ("interrupt.resolved" in types) == (snap["status"] == "completed"), types
