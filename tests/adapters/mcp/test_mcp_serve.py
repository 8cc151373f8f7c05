"""MCP through ``openwop-bridge serve``: the entry point mounts ``/mcp``; the wire carries what 2026-07-28 asks;
a ``requestState`` sealed before a restart still answers after it, once."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.server import ServerProcess

pytestmark = pytest.mark.slow
FIXTURES = Path(__file__).resolve().parents[3] / "bridge" / "spec" / "fixtures"
KEY = "mcp-serve-key-123"
MODERN = "2026-07-28"


def _serve(db: Path | str, *extra: str, logs: Path | None = None) -> ServerProcess:
    server = ServerProcess(db, ["--workflows", str(FIXTURES), "--api-key", f"tester={KEY}+admin", *extra])
    if logs is not None:  # a database URL is no place for a log file
        server.log = logs / f"serve-{server.port}.log"
    return server.start()


def _rpc(
    url: str, method: str, params: dict[str, Any] | None = None, caps: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One 2026-07-28 request on the wire, as a client sends it (no session, per-request metadata)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "wire-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": caps or {},
    }
    headers = {
        "Authorization": f"Bearer {KEY}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if params and "name" in params:
        headers["Mcp-Name"] = params["name"]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**(params or {}), "_meta": meta}}
    r = httpx.post(f"{url}/mcp", json=body, headers=headers, timeout=10)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json"), r.text
    reply: dict[str, Any] = r.json()
    assert "result" in reply, reply
    return dict(reply["result"])


def test_serve_mounts_mcp_and_the_wire_carries_ttl_cache_scope_and_result_type(tmp_path: Path) -> None:
    server = _serve(tmp_path / "mcp.db")
    try:
        assert httpx.post(f"{server.url}/mcp", json={}, timeout=10).status_code == 401
        discover = _rpc(server.url, "server/discover")
        assert MODERN in discover["supportedVersions"] and discover["resultType"] == "complete"
        assert isinstance(discover["ttlMs"], int) and discover["cacheScope"] in ("public", "private")
        listed = _rpc(server.url, "tools/list")
        assert listed["resultType"] == "complete" and listed["ttlMs"] > 0 and listed["cacheScope"] == "private"
        names = [t["name"] for t in listed["tools"]]
        assert names == sorted(names) and "conformance-approval" in names
        done = _rpc(server.url, "tools/call", {"name": "conformance-noop", "arguments": {}})
        assert done["resultType"] == "complete" and done["isError"] is False
        waiting = _rpc(server.url, "tools/call", {"name": "conformance-approval", "arguments": {}})
        assert waiting["resultType"] == "complete" and waiting["structuredContent"]["status"] == "waiting"
        forms = {"elicitation": {"form": {}}}
        asked = _rpc(server.url, "tools/call", {"name": "conformance-approval", "arguments": {}}, forms)
        assert asked["resultType"] == "input_required" and asked["requestState"].startswith("v1.")
        (request,) = asked["inputRequests"].values()
        assert request["method"] == "elicitation/create" and request["params"]["mode"] == "form"
    finally:
        server.stop()


async def _never(_ctx: Any, _params: types.ElicitRequestParams) -> types.ElicitResult:
    raise AssertionError("the test answers through requestState, not the callback")


def _client(url: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    return Client(streamable_http_client(f"{url}/mcp", http_client=http), elicitation_callback=_never)


async def test_a_request_state_sealed_before_a_restart_answers_after_it_once(tmp_path: Path) -> None:
    db = tmp_path / "mcp.db"
    first = _serve(db)
    try:
        async with _client(first.url) as client:
            asked = await client.session.call_tool("conformance-approval", {}, allow_input_required=True)
    finally:
        first.stop()
    assert isinstance(asked, types.InputRequiredResult) and asked.request_state and asked.input_requests
    (gate_id,) = asked.input_requests
    assert asked.result_type == "input_required"
    accept = types.ElicitResult(action="accept", content={"feedback": "after restart"})
    retry: dict[str, Any] = {"input_responses": {gate_id: accept}, "request_state": asked.request_state}
    second = _serve(db)
    try:
        async with _client(second.url) as client:
            done = await client.session.call_tool("conformance-approval", {}, allow_input_required=True, **retry)
            assert isinstance(done, types.CallToolResult) and done.is_error is False, done
            with pytest.raises(MCPError) as err:
                await client.session.call_tool("conformance-approval", {}, allow_input_required=True, **retry)
        assert "already used" in err.value.error.message
        headers = {"Authorization": f"Bearer {KEY}"}
        (run,) = httpx.get(f"{second.url}/v1/runs", headers=headers).json()["runs"]
        assert run["status"] == "completed"
        audit = httpx.get(f"{second.url}/v1/runs/{run['runId']}/audit", headers=headers).json()
        assert [e["action"] for e in audit["entries"]] == ["approval.vote.accept"]
    finally:
        second.stop()


def _keys(db: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "openwop_bridge", "keys", *args, "--db", db], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def _ask(url: str) -> dict[str, Any]:
    """Start the approval tool on ``url``; the retry that accepts it, with its sealed requestState."""
    async with _client(url) as client:
        asked = await client.session.call_tool("conformance-approval", {}, allow_input_required=True)
    assert isinstance(asked, types.InputRequiredResult) and asked.request_state and asked.input_requests
    (gate_id,) = asked.input_requests
    accept = types.ElicitResult(action="accept", content={})
    return {"input_responses": {gate_id: accept}, "request_state": asked.request_state}


async def _retry(url: str, retry: dict[str, Any]) -> Any:
    """The retry's result on ``url``, or the ``MCPError`` it was refused with."""
    async with _client(url) as client:
        try:
            return await client.session.call_tool("conformance-approval", {}, allow_input_required=True, **retry)
        except MCPError as exc:
            return exc


@pytest.mark.postgres
async def test_two_instances_answer_one_elicitation_across_a_key_rotation(pg_url: str, tmp_path: Path) -> None:
    # A reloads its keys only when it must (its lease, and so its key reload, is long).
    a = _serve(pg_url, "--no-demo", "--lease-ms", "600000", logs=tmp_path)
    b: ServerProcess | None = None
    try:
        old_1, old_2 = await _ask(a.url), await _ask(a.url)
        _keys(pg_url, "rotate")
        (old_kid,) = [
            kid
            for kid, status in (line.split() for line in _keys(pg_url, "list").splitlines())
            if status == "verify-only"
        ]
        b = _serve(pg_url, "--no-demo", logs=tmp_path)
        sealed_on_b = await _ask(b.url)
        # Sealed on B with the new key, answered on A, which has not loaded it yet: one answer.
        done = await _retry(a.url, sealed_on_b)
        assert isinstance(done, types.CallToolResult) and done.is_error is False, done
        refused = await _retry(b.url, sealed_on_b)
        assert isinstance(refused, MCPError) and "already used" in refused.error.message
        # Sealed on A with the previous key, answered on B during the overlap.
        done = await _retry(b.url, old_1)
        assert isinstance(done, types.CallToolResult) and done.is_error is False, done
        # Retired: an instance that loads the keys no longer opens a state sealed with it.
        _keys(pg_url, "retire", "--kid", old_kid)
        b.stop()
        b = _serve(pg_url, "--no-demo", logs=tmp_path)
        refused = await _retry(b.url, old_2)
        assert isinstance(refused, MCPError) and refused.error.code == types.INVALID_PARAMS
        assert "already used" not in refused.error.message
        headers = {"Authorization": f"Bearer {KEY}"}
        runs = httpx.get(f"{b.url}/v1/runs", headers=headers).json()["runs"]
        assert sorted(r["status"] for r in runs) == ["completed", "completed", "waiting-approval"]
    finally:
        a.stop()
        if b is not None:
            b.stop()


def _session(url: str) -> str:
    """A session of the streamable HTTP transport (``initialize``), by its ``Mcp-Session-Id``."""
    r = httpx.post(
        f"{url}/mcp",
        headers={"Authorization": f"Bearer {KEY}", "Accept": "application/json, text/event-stream"},
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        timeout=10,
    )
    assert r.status_code == 200, r.text
    return r.headers["mcp-session-id"]


def _open_get(port: int, session: str) -> tuple[socket.socket, bytes]:
    """``GET /mcp`` (the session's server-to-client stream), left open and never read past its head."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {KEY}\r\nAccept: text/event-stream\r\n"
        f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n".encode()
    )
    s.settimeout(10)
    head = b""
    while b"\r\n\r\n" not in head:
        part = s.recv(4096)
        if not part:
            break
        head += part
    return s, head


def _body(s: socket.socket, received: bytes) -> bytes:
    """The body of the answer whose first bytes ``_open_get`` received (they may already hold part or all of it)."""
    head, _, body = received.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    assert length, head
    while len(body) < int(length.group(1)):
        part = s.recv(4096)
        if not part:
            break
        body += part
    return body


def test_get_mcp_streams_hold_a_slot_of_their_key(tmp_path: Path) -> None:
    """Each open ``GET /mcp`` stream holds one of its key's stream slots: beyond them, 429 with ``Retry-After``."""
    server = ServerProcess(
        tmp_path / "mcp.db",
        ["--workflows", str(FIXTURES), "--api-key", f"tester={KEY}+admin"],
        env={"OPENWOP_BRIDGE_MAX_STREAMS_PER_KEY": "2"},
    ).start()
    held: list[socket.socket] = []
    try:
        sessions = [_session(server.url) for _ in range(3)]
        for session in sessions[:2]:
            s, head = _open_get(server.port, session)
            held.append(s)
            assert head.startswith(b"HTTP/1.1 200 ") and b"text/event-stream" in head, head
        s, head = _open_get(server.port, sessions[2])
        held.append(s)
        assert head.startswith(b"HTTP/1.1 429 "), head
        assert b"retry-after: " in head.lower(), head
        body = _body(s, head)
        assert b'"error":"rate_limited"' in body, body
        # Any other stream of the key is refused too, while both are open.
        auth = {"Authorization": f"Bearer {KEY}"}
        run = httpx.post(f"{server.url}/v1/runs", headers=auth, json={"workflowId": "conformance-approval"}, timeout=10)
        assert run.status_code == 201, run.text
        sse = httpx.get(f"{server.url}/v1/runs/{run.json()['runId']}/events", headers=auth, timeout=10)
        assert sse.status_code == 429 and sse.json()["error"] == "rate_limited", sse.text
        # A stream that ends gives its slot back.
        held.pop(0).close()
        deadline = time.monotonic() + 10
        while True:
            s, head = _open_get(server.port, sessions[2])
            held.append(s)
            if head.startswith(b"HTTP/1.1 200 ") or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert head.startswith(b"HTTP/1.1 200 "), head
    finally:
        for s in held:
            s.close()
        server.stop()
