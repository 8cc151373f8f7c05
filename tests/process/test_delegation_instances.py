"""Delegation across two ``serve`` processes on one PostgreSQL database.

A delegation made on instance A is honoured on instance B; separation of duties refuses, on B, the
delegate of the run's requester (403, nothing recorded, the gate still open); a delegate's vote on B
in the delegator's place counts once, and the delegator's own later vote on A, like the delegate's
own, is not counted again (one slot, one vote; one human, one vote).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openwop_bridge.spec import load_fixture
from tests import pg
from tests.server import ServerProcess, wait_for_status

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

KEYS = {
    "alice": "deleg-alice-key-0001",
    "bob": "deleg-bob-key-00001",
    "carol": "deleg-carol-key-0001",
    "opal": "deleg-opal-key-00001",
}
HOUR_MS = 3_600_000


def _h(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[who]}"}


def _gate(folder: Path, workflow_id: str, **config: Any) -> None:
    doc = load_fixture("conformance-approval")
    doc["id"] = workflow_id
    doc["nodes"][0]["config"].update(config)
    (folder / f"{workflow_id}.json").write_text(json.dumps(doc))


@pytest.fixture
def pair(pg_url: str, tmp_path: Path) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Instances A and B on one fresh PostgreSQL database, with the test's gates."""
    folder = tmp_path / "workflows"
    folder.mkdir()
    _gate(folder, "separated", separationOfDuties=True)
    _gate(folder, "pair", approversList=["alice", "bob", "carol"], requiredApprovals=2)
    people = ":runs:read,runs:create,approvals:respond,interrupts:read"
    args = [
        "--no-demo",
        "--workflows",
        str(folder),
        "--api-key",
        f"alice={KEYS['alice']}{people}",
        "--api-key",
        f"bob={KEYS['bob']}{people}",
        "--api-key",
        f"carol={KEYS['carol']}{people}",
        "--api-key",
        f"opal={KEYS['opal']}+operator",
    ]
    first, second = ServerProcess(pg_url, args), ServerProcess(pg_url, args)
    for name, server in (("a", first), ("b", second)):
        server.log = tmp_path / f"{name}-{server.port}.log"
    try:
        first.start()
        second.start()
        yield first, second
    finally:
        second.stop()
        first.stop()


def _waiting(server: ServerProcess, workflow: str, who: str) -> str:
    r = httpx.post(f"{server.url}/v1/runs", json={"workflowId": workflow}, headers=_h(who))
    assert r.status_code == 201, r.text
    run_id = str(r.json()["runId"])
    wait_for_status(server.url, _h(who), run_id, ("waiting-approval",))
    return run_id


def _vote(server: ServerProcess, run_id: str, who: str, **value: Any) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/runs/{run_id}/interrupts/gate",
        json={"resumeValue": {"action": "accept", **value}},
        headers=_h(who),
    )


def _gate_row(url: str, run_id: str) -> tuple[str, dict[str, Any]]:
    """The gate's status and state, read from the shared database."""
    [(status, state)] = pg.execute(url, "SELECT status, state FROM interrupts WHERE run_id=%s", run_id)
    return str(status), state if isinstance(state, dict) else json.loads(state)


def test_a_delegation_made_on_one_instance_holds_on_the_other(
    pair: tuple[ServerProcess, ServerProcess], pg_url: str
) -> None:
    a, b = pair
    until = int(time.time() * 1000) + HOUR_MS
    made = httpx.post(f"{a.url}/v1/delegations", json={"delegate": "bob", "until": until}, headers=_h("alice"))
    assert made.status_code == 201, made.text
    delegation = made.json()["delegationId"]
    seen = httpx.get(f"{b.url}/v1/delegations", headers=_h("bob")).json()["delegations"]
    assert [d["delegationId"] for d in seen] == [delegation]

    # alice asked for this run: neither she nor her delegate decides its separated gate, on any instance.
    asked_by_alice = _waiting(a, "separated", "alice")
    refused = _vote(b, asked_by_alice, "bob", voter="alice")
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden", refused.text
    assert "separation of duties" in refused.json()["message"]
    status, state = _gate_row(pg_url, asked_by_alice)
    assert status == "pending" and not state.get("votes"), state
    votes = "SELECT count(*) FROM audit WHERE run_id=%s AND action LIKE 'approval.vote.%%'"
    assert pg.execute(pg_url, votes, asked_by_alice) == [(0,)]
    assert httpx.get(f"{a.url}/v1/runs/{asked_by_alice}", headers=_h("alice")).json()["status"] == "waiting-approval"

    # Two approvals needed: bob on B in alice's place counts once; alice's own later vote on A fills no second
    # slot, nor does bob's own; carol's makes the second approval.
    run_id = _waiting(a, "pair", "opal")
    counted = _vote(b, run_id, "bob", voter="alice")
    assert counted.status_code == 200 and counted.json()["status"] == "pending", counted.text
    assert counted.json()["votes"]["accept"] == 1
    for who in ("alice", "bob"):
        again = _vote(a, run_id, who)
        assert again.status_code == 200 and again.json()["duplicate"] is True, again.text
        assert again.json()["votes"]["accept"] == 1
    status, state = _gate_row(pg_url, run_id)
    assert status == "pending"
    assert [(v["voter"], v.get("actingPrincipal"), v.get("delegation")) for v in state["votes"]] == [
        ("alice", "bob", delegation)
    ]
    settled = _vote(a, run_id, "carol")
    assert settled.status_code == 200 and settled.json()["status"] == "resolved", settled.text
    status, state = _gate_row(pg_url, run_id)
    assert status == "resolved"
    assert [(v["voter"], v.get("actingPrincipal")) for v in state["votes"]] == [("alice", "bob"), ("carol", None)]
    wait_for_status(b.url, _h("opal"), run_id, ("completed",))
