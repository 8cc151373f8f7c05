"""``X-Content-Type-Options: nosniff`` on every answer of ``serve``: each surface, errors, streams, refusals."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from tests.server import ServerProcess

KEY = "nosniff-key-01"
ADMIN = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    db = tmp_path_factory.mktemp("nosniff") / "n.db"
    with ServerProcess(db, ["--api-key", f"alice={KEY}+admin"]) as running:
        yield running


@pytest.fixture(scope="module")
def run_id(server: ServerProcess) -> str:
    r = httpx.post(f"{server.url}/v1/runs", headers=ADMIN, json={"workflowId": "demo-expense-approval"})
    assert r.status_code == 201, r.text
    return str(r.json()["runId"])


#: (method, path, headers, body): answers of every mounted surface, successes and errors.
REQUESTS: list[tuple[str, str, dict[str, str], object]] = [
    ("GET", "/healthz", {}, None),
    ("GET", "/.well-known/openwop", {}, None),
    ("GET", "/v1/openapi.json", {}, None),
    ("GET", "/v1/workflows", ADMIN, None),
    ("GET", "/v1/workflows", {}, None),  # 401
    ("GET", "/v1/runs/run_none", ADMIN, None),  # 404
    ("POST", "/v1/runs", ADMIN, {"nope": 1}),  # 400
    ("GET", "/no/such/path", {}, None),  # 404 from routing
    ("GET", "/workflows", {**ADMIN, "OpenWOP-Version": "2"}, None),
    ("GET", "/runs/run_none", {**ADMIN, "OpenWOP-Version": "2"}, None),
    ("GET", "/ui/", {}, None),
    ("GET", "/ui/api/me", ADMIN, None),
    ("GET", "/.well-known/agent-card.json", {}, None),
    ("POST", "/a2a", ADMIN, {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}),
    ("POST", "/langgraph/threads/search", ADMIN, {}),
    ("POST", "/langgraph/threads", {}, {}),  # 401
    ("POST", "/agui/demo-expense-approval", ADMIN, {"nope": 1}),  # 400
    ("POST", "/mcp", {}, {}),  # 401
    ("POST", "/mcp", {**ADMIN, "accept": "application/json, text/event-stream"}, {"jsonrpc": "2.0", "id": 1}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path", "headers", "body"), REQUESTS, ids=[f"{m} {p}" for m, p, _, _ in REQUESTS])
def test_every_answer_says_nosniff(
    server: ServerProcess, method: str, path: str, headers: dict[str, str], body: object
) -> None:
    r = httpx.request(method, f"{server.url}{path}", headers=headers, json=body, timeout=10)
    assert r.headers.get_list("x-content-type-options") == ["nosniff"], (path, r.status_code, r.headers)


@pytest.mark.slow
@pytest.mark.parametrize(
    "path",
    ["/v1/runs/{run}/events", "/runs/{run}/events"],
)
def test_event_streams_say_nosniff(server: ServerProcess, run_id: str, path: str) -> None:
    headers = {**ADMIN, "accept": "text/event-stream", "OpenWOP-Version": "1" if path.startswith("/v1") else "2"}
    with httpx.stream("GET", f"{server.url}{path.format(run=run_id)}", headers=headers, timeout=10) as r:
        assert r.status_code == 200
        assert r.headers.get_list("x-content-type-options") == ["nosniff"]


@pytest.mark.slow
def test_the_agui_stream_says_nosniff(server: ServerProcess) -> None:
    body = {"threadId": "ns-1", "runId": "r1", "messages": [], "state": {}, "tools": [], "context": []}
    headers = {**ADMIN, "accept": "text/event-stream"}
    with httpx.stream("POST", f"{server.url}/agui/demo-expense-approval", headers=headers, json=body) as r:
        assert r.status_code == 200
        assert r.headers.get_list("x-content-type-options") == ["nosniff"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 40_000 + b"\r\n\r\n", b"431"),
        (b"NOT A REQUEST\r\n\r\n", b"400"),
    ],
    ids=["header-too-large", "malformed"],
)
def test_refusals_before_the_app_say_nosniff(server: ServerProcess, raw: bytes, status: bytes) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(raw)
        answer = b""
        while b"\r\n\r\n" not in answer:
            part = s.recv(4096)
            if not part:
                break
            answer += part
    head = answer.split(b"\r\n\r\n", 1)[0].lower()
    assert head.startswith(b"http/1.1 " + status), answer[:200]
    assert head.count(b"x-content-type-options: nosniff") == 1, head
