"""Request bodies: every surface refuses one larger than 1 MiB with a 413 envelope while it is still arriving."""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Iterator

import pytest

from openwop_bridge.host.http.body import MAX_BODY
from tests.server import ServerProcess

KEY = "body-key-0001"
#: What a client offers to send: far more than the limit, and more than the server may read whole.
OFFERED = 64 * 1024 * 1024
CHUNK = 64 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    db = tmp_path_factory.mktemp("bodies") / "b.db"
    with ServerProcess(db, ["--api-key", f"alice={KEY}+admin"]) as running:
        yield running


def _send_endless(port: int, path: str, *, declared: bool) -> tuple[bytes, int]:
    """POST ``path`` a JSON body of :data:`OFFERED` bytes, chunked or with its length declared; the
    answer read as soon as one comes, and how many body bytes were sent by then."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {KEY}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    )
    head += f"Content-Length: {OFFERED}\r\n\r\n" if declared else "Transfer-Encoding: chunked\r\n\r\n"
    payload = b'{"x": "' + b"a" * (CHUNK - 7)
    piece = payload if declared else b"%x\r\n%s\r\n" % (len(payload), payload)
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head.encode())
        answer = b""
        while sent < OFFERED:
            readable, writable, _ = select.select([s], [s], [], 10)
            if readable:
                break
            if writable:
                try:
                    s.sendall(piece)
                except OSError:
                    break
                sent += len(payload)
        s.settimeout(10)
        try:
            while b"\r\n\r\n" not in answer or len(answer) < answer.index(b"\r\n\r\n") + 20:
                part = s.recv(65536)
                if not part:
                    break
                answer += part
        except OSError:
            pass
    return answer, sent


def _link_path(server: ServerProcess) -> str:
    import httpx

    headers = {"Authorization": f"Bearer {KEY}"}
    run = httpx.post(f"{server.url}/v1/runs", headers=headers, json={"workflowId": "demo-expense-approval"}).json()
    for _ in range(100):
        snap = httpx.get(f"{server.url}/v1/runs/{run['runId']}", headers=headers).json()
        if snap["status"] != "pending" and snap.get("interrupts"):
            break
    link = httpx.post(f"{server.url}/v1/runs/{run['runId']}/interrupts/review/links", headers=headers, json={})
    assert link.status_code in (200, 201), link.text
    return "/" + link.json()["url"].split("/", 3)[3]


PATHS = [
    "/v1/runs",
    "/runs",
    "/langgraph/threads",
    "/langgraph/threads/t1/runs/stream",
    "/agui/demo-expense-approval",
    "/a2a",
    "/mcp",
]


@pytest.mark.slow
@pytest.mark.parametrize("declared", [False, True], ids=["chunked", "content-length"])
@pytest.mark.parametrize("path", [*PATHS, "link"])
def test_a_body_over_the_limit_is_413_before_it_is_read_whole(server: ServerProcess, path: str, declared: bool) -> None:
    target = _link_path(server) if path == "link" else path
    answer, sent = _send_endless(server.port, target, declared=declared)
    assert answer.startswith(b"HTTP/1.1 413 "), (target, answer[:300])
    body = answer.split(b"\r\n\r\n", 1)[1]
    if b"payload_too_large" not in body and not declared:
        body = body.split(b"\r\n", 1)[1]  # a chunked answer: its first chunk's size line
    assert b'"error":"payload_too_large"' in body.replace(b" ", b""), (target, answer[:400])
    assert sent < 16 * MAX_BODY, f"{target}: {sent} bytes were sent before the 413"


def test_mcp_takes_bodies_up_to_the_limit(server: ServerProcess) -> None:
    """The limit in front of /mcp is the host's, not lower: a body just under it reaches the SDK."""
    import httpx

    call = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "a" * (MAX_BODY - 200)}}
    raw = json.dumps(call).encode()
    assert len(raw) <= MAX_BODY
    r = httpx.post(
        f"{server.url}/mcp",
        content=raw,
        headers={
            "Authorization": f"Bearer {KEY}",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        },
        timeout=10,
    )
    assert r.status_code != 413, r.text


def test_mcp_refuses_a_body_between_the_host_limit_and_the_sdks(server: ServerProcess) -> None:
    """2 MiB, under the SDK's own 4 MiB: the host's 1 MiB applies (413 envelope) and the SDK never sees it."""
    import httpx

    call = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "a" * (2 * MAX_BODY)}}
    r = httpx.post(
        f"{server.url}/mcp",
        json=call,
        headers={"Authorization": f"Bearer {KEY}", "accept": "application/json, text/event-stream"},
        timeout=10,
    )
    assert r.status_code == 413, r.text
    assert r.json() == {
        "error": "payload_too_large",
        "message": f"the request body is larger than {MAX_BODY} bytes",
        "details": {"limit": MAX_BODY},
    }


#: A body over the limit by far more than a request header may be (32 KiB): what is left of it
#: after the 413, read as the next request's header, would pass that limit.
OVER = MAX_BODY + 256 * 1024


def _heads(answer: bytes) -> list[bytes]:
    """The status lines and headers of the answers in ``answer``, in order (bodies are envelopes, not heads)."""
    return [part.split(b"\r\n\r\n", 1)[0].lower() for part in answer.split(b"HTTP/1.1 ")[1:]]


@pytest.mark.parametrize("declared", [False, True], ids=["chunked", "content-length"])
def test_a_connection_after_a_413_serves_its_next_request_or_closes(server: ServerProcess, declared: bool) -> None:
    """A client sends a body over the limit, then its next request on the same connection: the rest of
    the refused body is never taken for that request's header (no 431); the 413 says it closes the
    connection, and it does, or the next request is answered."""
    head = (
        f"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {KEY}\r\n"
        "Content-Type: application/json\r\n"
    )
    body = b'{"workflowId": "' + b"a" * (OVER - 18) + b'"}'
    if declared:
        request = head.encode() + b"Content-Length: %d\r\n\r\n" % len(body) + body
    else:
        request = head.encode() + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    following = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode()
    answer = b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        try:
            s.sendall(request + following)
        except OSError:
            pass  # the server may close before it took everything; its answer is still to be read
        try:
            while part := s.recv(65536):
                answer += part
        except OSError:
            pass
    heads = _heads(answer)
    assert heads and heads[0].startswith(b"413 "), answer[:400]
    assert not any(h.startswith(b"431 ") for h in heads), answer[:800]
    assert b"connection: close" in heads[0] or (len(heads) == 2 and heads[1].startswith(b"200 ")), answer[:800]


def test_httpx_reusing_its_connection_after_a_413_is_answered(server: ServerProcess) -> None:
    """httpx keeps connections alive: after each 413 its next request gets its own answer, never a 431."""
    import httpx

    headers = {"Authorization": f"Bearer {KEY}", "content-type": "application/json"}
    body = b'{"workflowId": "' + b"a" * (OVER - 18) + b'"}'
    with httpx.Client(base_url=server.url, headers=headers, timeout=10) as client:
        for _ in range(5):
            refused = client.post("/v1/runs", content=body)
            assert refused.status_code == 413, refused.text
            assert refused.json()["error"] == "payload_too_large"
            after = client.get("/healthz")
            assert after.status_code == 200, after.text
