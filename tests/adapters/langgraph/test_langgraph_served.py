"""Graphs served with ``openwop-bridge serve --graph``: REST, the real @ag-ui/client, kill -9."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.nodejs import assert_suite_passes, node_binary
from tests.server import ServerProcess, wait_for_status

pytestmark = pytest.mark.slow
KEY = "graph-key-12345"
H = {"Authorization": f"Bearer {KEY}"}
GRAPHS = [
    "--graph",
    "publish=tests.graphs:approve_graph",
    "--graph",
    "fan=tests.graphs:fan_out_graph",
    "--graph",
    "agent=tests.graphs:hitl_per_call",
    "--graph",
    "single=tests.graphs:single_question_graph",
]


def _server(db: Path) -> ServerProcess:
    return ServerProcess(db, ["--no-demo", *GRAPHS, "--api-key", f"tester={KEY}+admin"])


def _wait(url: str, run_id: str, statuses: tuple[str, ...]) -> dict:
    return wait_for_status(url, H, run_id, statuses)


def test_graphs_through_the_real_agui_client(tmp_path: Path) -> None:
    node = node_binary("AG-UI interop")
    with _server(tmp_path / "g.db") as server:
        assert_suite_passes(node, "langgraph.test.mjs", server, KEY, 4)


def test_graph_resumes_after_kill_9(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    server = _server(db).start()
    try:
        run_id = httpx.post(
            f"{server.url}/v1/runs", json={"workflowId": "publish", "inputs": {"text": "v1"}}, headers=H
        ).json()["runId"]
        node = _wait(server.url, run_id, ("waiting-approval",))["interrupt"]["nodeId"]
        server.kill9()
        server = _server(db).start()
        snap = _wait(server.url, run_id, ("waiting-approval",))
        assert snap["interrupt"]["nodeId"] == node
        r = httpx.post(
            f"{server.url}/v1/runs/{run_id}/interrupts/{node}", json={"resumeValue": {"action": "accept"}}, headers=H
        )
        assert r.status_code == 200
        done = _wait(server.url, run_id, ("completed",))
        assert done["outputs"]["graph"]["state"]["decision"] == "accept"
        assert (tmp_path / "g.langgraph.db").exists(), "the checkpointer lives beside the host database"
    finally:
        server.stop()
