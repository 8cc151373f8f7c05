"""Event streams whose clients never read: server memory stays flat, and streams per key and per run are bounded."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server import ServerProcess

ADMIN = "admin-key-0001"
READER = "reader-key-001"
#: Gates opened at once, each asking with a 10 kB artifact: a run whose event log is about 1.1 MB.
GATES = 100
#: What each gate of ``huge`` carries: a run whose event log (about 6 MB) is more than a socket's send buffer holds.
HUGE_BLOB = 60_000


def _wide_workflow(folder: Path, name: str = "wide", blob: int = 10_000) -> None:
    """``wide``: one step, then :data:`GATES` approval gates side by side, each carrying ``blob`` bytes (10 kB)."""
    at = {"x": 0, "y": 0}
    nodes = [{"id": "start", "typeId": "core.noop", "name": "start", "config": {}, "inputs": {}, "position": at}]
    nodes += [
        {
            "id": f"g{i}",
            "typeId": "core.approvalGate",
            "name": f"gate {i}",
            "config": {"title": f"gate {i}", "artifactData": {"blob": "x" * blob}},
            "inputs": {},
            "position": at,
        }
        for i in range(GATES)
    ]
    edges = [{"id": f"e{i}", "sourceNodeId": "start", "targetNodeId": f"g{i}"} for i in range(GATES)]
    workflow = {
        "id": name,
        "name": name,
        "version": "1.0",
        "nodes": nodes,
        "edges": edges,
        "triggers": [{"id": "manual", "type": "manual", "enabled": True}],
        "variables": [],
        "metadata": {},
        "settings": {"timeout": 0},
    }
    (folder / f"{name}.json").write_text(json.dumps(workflow))


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _serve(tmp_path: Path, env: dict[str, str] | None = None) -> ServerProcess:
    folder = tmp_path / "workflows"
    folder.mkdir()
    _wide_workflow(folder)
    _wide_workflow(folder, "huge", blob=HUGE_BLOB)
    keys = ["--api-key", f"alice={ADMIN}+admin", "--api-key", f"rita={READER}:runs:read"]
    return ServerProcess(tmp_path / "s.db", ["--no-demo", "--workflows", str(folder), *keys], env=env)


def _wide_run(server: ServerProcess, workflow: str = "wide") -> str:
    """A run waiting on every gate, its event log about 1.1 MB (``huge``: 6 MB)."""
    admin = {"Authorization": f"Bearer {ADMIN}"}
    r = httpx.post(f"{server.url}/v1/runs", headers=admin, json={"workflowId": workflow}, timeout=30)
    assert r.status_code == 201, r.text
    run_id: str = r.json()["runId"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = httpx.get(
            f"{server.url}/v1/runs/{run_id}/events", headers={**admin, "accept": "application/json"}, timeout=30
        )
        if len(got.content) > GATES * (HUGE_BLOB if workflow == "huge" else 10_000):
            return run_id
        time.sleep(0.1)
    raise AssertionError("the run did not open its gates")


def _request(path: str, run_id: str, port: int) -> bytes:
    """The raw request opening one stream of ``run_id`` on a surface."""
    head = f"Host: 127.0.0.1:{port}\r\nAuthorization: Bearer {READER}\r\n"
    if path == "a2a":
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": run_id}})
        return (
            f"POST /a2a HTTP/1.1\r\n{head}Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"A2A-Version: 1.0\r\nContent-Length: {len(body)}\r\n\r\n{body}"
        ).encode()
    if path == "v1":
        return f"GET /v1/runs/{run_id}/events HTTP/1.1\r\n{head}Accept: text/event-stream\r\n\r\n".encode()
    if path == "v1-json":
        return f"GET /v1/runs/{run_id}/events HTTP/1.1\r\n{head}Accept: application/json\r\n\r\n".encode()
    if path == "v1-poll":
        return f"GET /v1/runs/{run_id}/events/poll HTTP/1.1\r\n{head}\r\n".encode()
    if path == "v2-poll":
        return f"GET /runs/{run_id}/events/poll HTTP/1.1\r\n{head}OpenWOP-Version: 2\r\n\r\n".encode()
    query = "?bufferMs=1000" if path == "v2-batched" else ""
    return (
        f"GET /runs/{run_id}/events{query} HTTP/1.1\r\n{head}Accept: text/event-stream\r\nOpenWOP-Version: 2\r\n\r\n"
    ).encode()


def _open_unread(port: int, raw: bytes, count: int) -> Iterator[socket.socket]:
    """``count`` connections that send ``raw`` and then never read."""
    for _ in range(count):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", port))
        s.sendall(raw)
        yield s


def _status_line(s: socket.socket) -> bytes:
    s.settimeout(10)
    head = b""
    while b"\r\n\r\n" not in head:
        part = s.recv(4096)
        if not part:
            break
        head += part
    return head


#: Surfaces answering with one JSON document rather than a stream.
WHOLE_DOCUMENTS = ("v1-json", "v1-poll", "v2-poll")


@pytest.mark.slow
@pytest.mark.parametrize("surface", ["v1", "v2", "v2-batched", "a2a", *WHOLE_DOCUMENTS])
def test_streams_nobody_reads_do_not_grow_server_memory(tmp_path: Path, surface: str) -> None:
    """150 reads of a 6 MB event log (streams, JSON documents, long polls), never read by their clients:
    the server's RSS grows by a few MiB, not by the log each."""
    streams = 150
    with _serve(tmp_path, env={"OPENWOP_BRIDGE_MAX_STREAMS_PER_KEY": str(streams)}) as server:
        assert server.proc is not None
        # A log larger than the socket's send buffer (up to 4 MiB), of events large enough that a page
        # of 32 of them is about 2 MB: what a stalled reader holds must be bounded in bytes, not in events.
        run_id = _wide_run(server, "huge")
        raw = _request(surface, run_id, server.port)
        # One stream read to its first bytes first: the server's code paths are warm before measuring.
        with next(_open_unread(server.port, raw, 1)) as warm:
            assert _status_line(warm).startswith(b"HTTP/1.1 200 "), surface
        time.sleep(1)
        before = _rss_mib(server.proc.pid)
        opened = list(_open_unread(server.port, raw, streams))
        try:
            time.sleep(4)
            after = _rss_mib(server.proc.pid)
            assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
        finally:
            for s in opened:
                s.close()
        assert after - before < 48, f"{surface}: RSS {before:.0f} MiB -> {after:.0f} MiB with {streams} unread streams"


@pytest.mark.slow
def test_streams_beyond_the_limit_of_a_key_are_429_with_retry_after(tmp_path: Path) -> None:
    env = {"OPENWOP_BRIDGE_MAX_STREAMS_PER_KEY": "3", "OPENWOP_BRIDGE_MAX_STREAMS_PER_RUN": "5"}
    with _serve(tmp_path, env=env) as server:
        run_id = _wide_run(server)
        held = list(_open_unread(server.port, _request("v1", run_id, server.port), 3))
        try:
            for s in held:
                assert _status_line(s).startswith(b"HTTP/1.1 200 ")
            reader = {"Authorization": f"Bearer {READER}", "accept": "text/event-stream"}
            over = httpx.get(f"{server.url}/v1/runs/{run_id}/events", headers=reader, timeout=10)
            assert over.status_code == 429, over.text
            assert over.json()["error"] == "rate_limited"
            assert int(over.headers["retry-after"]) >= 1
            over2 = httpx.get(
                f"{server.url}/runs/{run_id}/events", headers={**reader, "OpenWOP-Version": "2"}, timeout=10
            )
            assert over2.status_code == 429, over2.text
            assert over2.json()["error"] == "rate_limited"
            assert "retryAfter" not in over2.json().get("details", {})
            assert int(over2.headers["retry-after"]) >= 1
            thread = httpx.post(
                f"{server.url}/langgraph/threads", headers={"Authorization": f"Bearer {ADMIN}"}, json={}, timeout=10
            )
            assert thread.status_code == 200, thread.text
            # Every streaming surface counts against the same limit, and refuses before it starts anything;
            # so do the whole-log JSON reads (written a page at a time, as streams are).
            refused = {
                "v1-json": httpx.get(
                    f"{server.url}/v1/runs/{run_id}/events",
                    headers={**reader, "accept": "application/json"},
                    timeout=10,
                ),
                "v1-poll": httpx.get(f"{server.url}/v1/runs/{run_id}/events/poll", headers=reader, timeout=10),
                "v1-audit": httpx.get(f"{server.url}/v1/runs/{run_id}/audit", headers=reader, timeout=10),
                "langgraph-history": httpx.post(
                    f"{server.url}/langgraph/threads/{thread.json()['thread_id']}/history",
                    headers=reader,
                    json={},
                    timeout=10,
                ),
                "v2-poll": httpx.get(
                    f"{server.url}/runs/{run_id}/events/poll", headers={**reader, "OpenWOP-Version": "2"}, timeout=10
                ),
                "a2a": httpx.post(
                    f"{server.url}/a2a",
                    headers={**reader, "A2A-Version": "1.0"},
                    json={"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": run_id}},
                    timeout=10,
                ),
                "agui": httpx.post(
                    f"{server.url}/agui/wide",
                    headers=reader,
                    json={"threadId": "t1", "runId": "r1", "messages": [], "state": {}, "tools": [], "context": []},
                    timeout=10,
                ),
                "langgraph": httpx.post(
                    f"{server.url}/langgraph/threads/t1/runs/stream",
                    headers=reader,
                    json={"assistant_id": "wide", "if_not_exists": "create"},
                    timeout=10,
                ),
            }
            for surface, answer in refused.items():
                assert answer.status_code == 429, (surface, answer.text)
                assert answer.json()["error"] == "rate_limited", surface
                assert int(answer.headers["retry-after"]) >= 1, surface
            # No run was started by the refused requests.
            listed = httpx.get(f"{server.url}/v1/runs", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10)
            assert [r["runId"] for r in listed.json()["runs"]] == [run_id]
            # Another key still streams the same run, up to the run's limit (5 in all).
            admin = {"Authorization": f"Bearer {ADMIN}", "accept": "text/event-stream"}
            more = [
                socket.create_connection(("127.0.0.1", server.port)),
                socket.create_connection(("127.0.0.1", server.port)),
            ]
            for s in more:
                s.sendall(
                    f"GET /v1/runs/{run_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    f"Authorization: Bearer {ADMIN}\r\n\r\n".encode()
                )
                assert _status_line(s).startswith(b"HTTP/1.1 200 ")
                held.append(s)
            full = httpx.get(f"{server.url}/v1/runs/{run_id}/events", headers=admin, timeout=10)
            assert full.status_code == 429 and full.json()["error"] == "rate_limited", full.text
        finally:
            for s in held:
                s.close()
        # Streams that ended give their places back.
        deadline = time.monotonic() + 10
        while True:
            with httpx.stream("GET", f"{server.url}/v1/runs/{run_id}/events", headers=reader, timeout=10) as again:
                if again.status_code == 200 or time.monotonic() > deadline:
                    break
            time.sleep(0.2)
        assert again.status_code == 200
