"""What a hostile or broken client cannot do to the host: deep JSON, bad hosts, odd links, slow or huge requests."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gc
import logging
import socket
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from openwop_bridge import Engine
from openwop_bridge.agui import agui_routes
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.core.errors import InterruptNotFoundError
from openwop_bridge.core.tokens import TokenSigner
from openwop_bridge.host.app import create_app
from openwop_bridge.host.http.body import MAX_JSON_DEPTH
from openwop_bridge.host.http.limits import HeaderLimits, http_protocol
from tests.conftest import KEYS, auth
from tests.helpers import envelope, settle
from tests.server import ServerProcess, uvicorn_server


def nested(depth: int) -> Any:
    """A JSON value ``depth`` containers deep (alternating arrays and objects)."""
    value: Any = 1
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


async def test_json_nested_at_the_limit_is_accepted_and_its_run_reads_back(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    # The body itself is {"inputs": {"v": ...}}: two containers around the value.
    inputs = {"v": nested(MAX_JSON_DEPTH - 2)}
    r = await client.post(
        "/v1/runs", json={"workflowId": "conformance-approval", "inputs": inputs}, headers=auth("admin")
    )
    assert r.status_code == 201, r.text
    run_id = r.json()["runId"]
    await settle(engine, run_id)
    for path in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/events", f"/v1/runs/{run_id}/events/poll?timeout=0"):
        got = await client.get(path, headers={**auth("admin"), "accept": "application/json"})
        assert got.status_code == 200, (path, got.text)


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 250, 252, 600, 1023, 1100])
async def test_json_nested_deeper_than_the_limit_is_a_400(client: httpx.AsyncClient, depth: int) -> None:
    # Written by hand: the standard library's encoder would hit the recursion limit first.
    raw = b'{"workflowId": "conformance-approval", "inputs": {"v": ' + b"[" * (depth - 2) + b"]" * (depth - 2) + b"}}"
    r = await client.post("/v1/runs", content=raw, headers={**auth("admin"), "content-type": "application/json"})
    problem = envelope(r, 400, "validation_error")
    assert problem["details"] == {"maxDepth": MAX_JSON_DEPTH}


async def test_deep_resume_values_are_refused_before_the_engine_sees_them(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    r = await client.post("/v1/runs", json={"workflowId": "conformance-approval"}, headers=auth("admin"))
    run_id = r.json()["runId"]
    await settle(engine, run_id)
    deep = {"resumeValue": {"action": "accept", "comment": nested(300)}}
    envelope(
        await client.post(f"/v1/runs/{run_id}/interrupts/gate", json=deep, headers=auth("admin")),
        400,
        "validation_error",
    )
    assert (await engine.store.interrupt_at(run_id, "gate")).open


async def test_agui_bodies_share_the_nesting_limit(engine: Engine) -> None:
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False, extra_routes=agui_routes(engine))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test") as c:
        body = {"threadId": "t-deep", "runId": "r1", "messages": [], "state": nested(400)}
        r = await c.post("/agui/conformance-approval", json=body, headers=auth("admin"))
    envelope(r, 400, "validation_error")


# --- request headers: slow, huge, too many fields (real sockets, real uvicorn) ------------------

LIMITS = HeaderLimits(timeout_s=0.5, max_bytes=8 * 1024, max_fields=20)


@pytest.fixture
async def limited(engine: Engine) -> AsyncIterator[tuple[str, int]]:
    """The host on uvicorn with small header limits; yields (host, port)."""
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False)
    async with uvicorn_server(app, http=http_protocol(LIMITS)) as url:
        host, port = url.removeprefix("http://").split(":")
        yield host, int(port)


async def _read_all(reader: asyncio.StreamReader, within: float) -> bytes:
    """Everything the server sends until it closes the connection (fails if it stays open ``within`` s)."""
    return await asyncio.wait_for(reader.read(), within)


async def test_a_connection_that_sends_nothing_is_closed(limited: tuple[str, int]) -> None:
    reader, writer = await asyncio.open_connection(*limited)
    assert await _read_all(reader, 5) == b""
    writer.close()


async def test_a_trickled_header_is_cut_off_with_408(limited: tuple[str, int]) -> None:
    reader, writer = await asyncio.open_connection(*limited)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")

    async def trickle() -> None:
        with contextlib.suppress(ConnectionError):
            for _ in range(100):  # one byte every 50 ms: 5 s if nobody stops it
                writer.write(b"x")
                await writer.drain()
                await asyncio.sleep(0.05)

    sender = asyncio.create_task(trickle())
    answer = await _read_all(reader, 4)
    sender.cancel()
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b'"error":"request_timeout"' in answer
    writer.close()


async def test_idle_connections_do_not_pile_up(limited: tuple[str, int]) -> None:
    conns = [await asyncio.open_connection(*limited) for _ in range(50)]
    for reader, writer in conns:
        writer.write(b"GET / HTTP/1.1\r\n")
    closed = await asyncio.gather(*(_read_all(reader, 5) for reader, _ in conns))
    assert all(c.startswith(b"HTTP/1.1 408 ") for c in closed)
    for _, writer in conns:
        writer.close()


async def test_a_header_within_the_limits_is_served_and_keep_alive_works(limited: tuple[str, int]) -> None:
    host, port = limited
    padding = {f"x-pad-{i}": "p" * 300 for i in range(15)}  # ~4.7 KiB in 17 fields
    async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as c:
        for _ in range(3):
            assert (await c.get("/healthz", headers=padding)).status_code == 200
            await asyncio.sleep(LIMITS.timeout_s * 0.6)  # idle between requests does not count against the next


async def test_a_header_too_large_is_a_431(limited: tuple[str, int]) -> None:
    reader, writer = await asyncio.open_connection(*limited)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * LIMITS.max_bytes + b"\r\n\r\n")
    answer = await _read_all(reader, 5)
    assert answer.startswith(b"HTTP/1.1 431 ") and b'"error":"header_too_large"' in answer, answer
    writer.close()


async def test_too_many_header_fields_is_a_431(limited: tuple[str, int]) -> None:
    reader, writer = await asyncio.open_connection(*limited)
    fields = b"".join(b"X-F%d: v\r\n" % i for i in range(LIMITS.max_fields + 1))
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + fields + b"\r\n")
    answer = await _read_all(reader, 5)
    assert answer.startswith(b"HTTP/1.1 431 ") and b"more than 20 fields" in answer, answer
    writer.close()


async def test_an_endless_header_does_not_grow_server_memory(limited: tuple[str, int]) -> None:
    """20 MiB of one unfinished header line: what the server holds stays around the limit."""
    chunk = b"a" * (64 * 1024)
    gc.collect()
    tracemalloc.start()
    try:
        _, writer = await asyncio.open_connection(*limited)
        sent = 0
        with contextlib.suppress(ConnectionError):
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Endless: ")
            while sent < 20 * 1024 * 1024:
                writer.write(chunk)
                await writer.drain()
                sent += len(chunk)
        writer.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, f"peak {peak} bytes traced while sending {sent} bytes"


@pytest.mark.slow
def test_serve_applies_its_header_limits(tmp_path: Path) -> None:
    server = ServerProcess(
        tmp_path / "h.db", ["--no-demo", "--header-timeout", "0.5", "--max-header-bytes", "4096"]
    ).start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as idle:
            idle.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            assert idle.recv(4096).startswith(b"HTTP/1.1 408 ")
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as big:
            big.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 5000 + b"\r\n\r\n")
            assert big.recv(4096).startswith(b"HTTP/1.1 431 ")
        assert httpx.get(f"{server.url}/healthz", headers={"x-fine": "f" * 3000}).status_code == 200
    finally:
        server.stop()


# --- signed links: one spelling each ---------------------------------------------------------------


def _spellings(token: str) -> list[str]:
    """Other spellings of the same bytes that lenient base64 decoding would accept."""
    head, tail = token.split(".")
    raw_head = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    raw_tail = base64.urlsafe_b64decode(tail + "=" * (-len(tail) % 4))
    std_head = base64.b64encode(raw_head).decode().rstrip("=")
    std_tail = base64.b64encode(raw_tail).decode().rstrip("=")
    # The last character of a 43-character MAC carries 2 unused bits: flip one of them.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    spare = alphabet[alphabet.index(tail[-1]) ^ 1]
    return [
        f"{head}.{tail}=",
        f"{head}==.{tail}",
        f"{std_head}.{std_tail}",
        f"{head}.{tail[:-1]}{spare}",
        f"{head[:5]}!{head[5:]}.{tail}",
        f"{head}.{tail[:10]}\n{tail[10:]}",
        f"{head}.{tail}.{tail}",
    ]


def test_a_token_verifies_in_its_canonical_spelling_only() -> None:
    signer = TokenSigner({"k1": "s" * 32}, "k1")
    # Claims chosen so that the standard alphabet differs from the URL-safe one.
    token = signer.mint("run-?>~", "gate", "intr-ÿ?>", 4102444800000, "resolve", subject="bob~~?")
    assert {"-", "_"} & set(token), token
    assert signer.verify(token, 0).subject == "bob~~?"
    for variant in _spellings(token):
        assert variant != token
        with pytest.raises(InterruptNotFoundError):
            signer.verify(variant, 0)


async def test_links_answer_in_their_canonical_spelling_only(client: httpx.AsyncClient, engine: Engine) -> None:
    r = await client.post("/v1/runs", json={"workflowId": "conformance-approval"}, headers=auth("admin"))
    run_id = r.json()["runId"]
    await settle(engine, run_id)
    token = (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()["interrupt"]["interruptToken"]
    # (A '/' would route elsewhere: the unit test above covers those spellings.)
    for variant in [v for v in _spellings(token)[:4] if v != token and "/" not in v]:
        envelope(await client.get(f"/v1/interrupts/{quote(variant, safe='')}"), 404, "interrupt_not_found")
    assert (await client.get(f"/v1/interrupts/{token}")).status_code == 200


# --- a client that hangs up mid-body -------------------------------------------------------------


async def test_a_client_hanging_up_mid_body_is_one_quiet_log_line(
    live: tuple[str, httpx.AsyncClient], caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = live
    host, port = url.removeprefix("http://").split(":")
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addHandler(caplog.handler)
    caplog.set_level(logging.INFO)
    try:
        _, writer = await asyncio.open_connection(host, int(port))
        token = auth("admin")["Authorization"]
        writer.write(
            b"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Authorization: " + token.encode() + b"\r\nContent-Length: 1000\r\n\r\n" + b'{"workflowId": '
        )
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.close()
        for _ in range(200):
            if any(r.name.startswith(("openwop_bridge", "uvicorn")) for r in caplog.records):
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)  # anything else it would log
    finally:
        uvicorn_log.removeHandler(caplog.handler)
    records = [r for r in caplog.records if r.name.startswith(("openwop_bridge", "uvicorn"))]
    assert len(records) == 1, [(r.name, r.levelname, r.getMessage()) for r in records]
    (record,) = records
    assert record.levelno <= logging.INFO and record.exc_info is None
    assert "POST /v1/runs" in record.getMessage() and "hung up" in record.getMessage()


# --- a subject-bound link votes as its subject ------------------------------------------------------


async def _subject_link(client: httpx.AsyncClient, engine: Engine, subject: str) -> tuple[str, str]:
    r = await client.post("/v1/runs", json={"workflowId": "conformance-approval"}, headers=auth("admin"))
    run_id = r.json()["runId"]
    await settle(engine, run_id)
    link = await client.post(
        f"/v1/runs/{run_id}/interrupts/gate/links", json={"subject": subject}, headers=auth("operator")
    )
    assert link.status_code == 201, link.text
    return run_id, link.json()["token"]


async def test_a_link_for_someone_else_posted_with_a_plain_key_is_403(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    run_id, token = await _subject_link(client, engine, "carol")
    accept = {"resumeValue": {"action": "accept"}}
    envelope(await client.post(f"/v1/interrupts/{token}", json=accept, headers=auth("bob")), 403, "forbidden")
    assert (await engine.store.interrupt_at(run_id, "gate")).open
    denied = [e for e in await engine.store.read_events(run_id) if e["type"] == "authorization.decided"]
    assert denied and denied[-1]["payload"]["allowed"] is False and denied[-1]["payload"]["principal"] == "bob"
    assert (await client.post(f"/v1/interrupts/{token}", json=accept)).status_code == 200
    assert (await settle(engine, run_id)).state["outputs"]["gate"]["decidedBy"] == "carol"


@pytest.mark.parametrize("who", ["bob", "operator"])
async def test_a_subject_link_votes_as_its_subject_with_the_subjects_or_an_operators_key(
    client: httpx.AsyncClient, engine: Engine, who: str
) -> None:
    run_id, token = await _subject_link(client, engine, "bob")
    r = await client.post(f"/v1/interrupts/{token}", json={"resumeValue": {"action": "accept"}}, headers=auth(who))
    assert r.status_code == 200, r.text
    assert (await settle(engine, run_id)).state["outputs"]["gate"]["decidedBy"] == "bob"


async def test_a_subject_link_cannot_name_another_voter_even_with_an_operators_key(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    run_id, token = await _subject_link(client, engine, "bob")
    value = {"resumeValue": {"action": "accept", "voter": "dave"}}
    envelope(await client.post(f"/v1/interrupts/{token}", json=value, headers=auth("operator")), 403, "forbidden")
    assert (await engine.store.interrupt_at(run_id, "gate")).open


# --- links are built only for trusted hosts ---------------------------------------------------------


@pytest.mark.slow
def test_serve_answers_only_to_its_own_host_names(tmp_path: Path) -> None:
    key = "key-alice-000001"
    server = ServerProcess(
        tmp_path / "hosts.db", ["--api-key", f"alice={key}+admin", "--allowed-host", "approvals.example.com"]
    ).start()
    h = {"Authorization": f"Bearer {key}"}
    try:
        workflow = httpx.get(f"{server.url}/v1/workflows", headers=h).json()["workflows"][0]["id"]

        def create(host: str) -> httpx.Response:
            return httpx.post(f"{server.url}/v1/runs", json={"workflowId": workflow}, headers={**h, "Host": host})

        forged = create("evil.example")
        problem = envelope(forged, 400, "validation_error")
        assert problem["details"] == {"host": "evil.example"} and "evil.example" not in forged.headers.get(
            "location", ""
        )
        assert create(f"127.0.0.1:{server.port}").headers["location"].startswith(f"http://127.0.0.1:{server.port}/")
        assert create(f"localhost:{server.port}").headers["location"].startswith(f"http://localhost:{server.port}/")
        assert create("APPROVALS.example.com").headers["location"].lower().startswith("http://approvals.example.com/")
        assert httpx.get(f"{server.url}/healthz", headers={"Host": "10.1.2.3:8000"}).status_code == 200
    finally:
        server.stop()


@pytest.mark.slow
def test_serve_with_a_public_url_answers_to_its_host(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "pub.db", ["--no-demo", "--public-url", "https://bridge.example.org/"]).start()
    try:
        ok = httpx.get(f"{server.url}/.well-known/openwop", headers={"Host": "bridge.example.org"})
        assert ok.status_code == 200
        envelope(
            httpx.get(f"{server.url}/.well-known/openwop", headers={"Host": "evil.example"}), 400, "validation_error"
        )
    finally:
        server.stop()


async def test_apps_built_without_allowed_hosts_answer_to_any_host(engine: Engine) -> None:
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://anything.test") as c:
        assert (await c.get("/.well-known/openwop")).status_code == 200


async def test_allowed_hosts_are_matched_on_each_request_whatever_came_before(engine: Engine) -> None:
    allowed = ["approvals.example.com", "::1"]
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False, allowed_hosts=allowed)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://approvals.example.com") as c:
        for _ in range(2):  # the second round meets names already seen
            for host, status in [
                ("approvals.example.com", 200),
                ("APPROVALS.example.com:8443", 200),
                ("[::1]:8000", 200),
                ("evil.example", 400),
                ("approvals.example.com.evil.example", 400),
                ("x" * 300, 400),
            ]:
                r = await c.get("/.well-known/openwop", headers={"Host": host})
                assert r.status_code == status, (host, r.text)
                if status == 400:
                    assert envelope(r, 400, "validation_error")["details"]["host"] == host.lower()
