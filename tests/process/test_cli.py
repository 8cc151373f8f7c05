"""The command line: two commands work from nothing; flags parse; keys rotate."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from openwop_bridge import SqliteStore
from openwop_bridge.core.conversation_limits import ConversationLimits
from openwop_bridge.host.cli import build_parser, build_server, main
from tests.server import ServerProcess

pytestmark = pytest.mark.slow


def test_serve_defaults_print_a_dev_key_and_serve_the_demo(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "demo.db").start()
    try:
        out = server.output()
        key = re.search(r"dev API key \(every scope, tenant 'default'\): (\S+)", out)
        assert key, out
        h = {"Authorization": f"Bearer {key.group(1)}"}
        ids = {w["id"] for w in httpx.get(f"{server.url}/v1/workflows", headers=h).json()["workflows"]}
        assert {"demo-expense-approval", "demo-conversation", "demo-clarification"} <= ids
        assert httpx.get(f"{server.url}/.well-known/openwop").json()["fixtures"]
    finally:
        server.stop()
    restarted = ServerProcess(tmp_path / "demo.db").start()
    try:
        assert key.group(1) in restarted.output(), "the dev key is kept in the database across restarts"
    finally:
        restarted.stop()


def test_configured_keys_replace_the_dev_key(tmp_path: Path) -> None:
    shared = Path(__file__).resolve().parents[2] / "bridge" / "spec" / "fixtures"
    server = ServerProcess(
        tmp_path / "k.db", ["--no-demo", "--workflows", str(shared), "--api-key", "ops=ops-key-123456:runs:read@acme"]
    ).start()
    try:
        assert "dev API key" not in server.output()
        r = httpx.get(f"{server.url}/v1/runs", headers={"Authorization": "Bearer ops-key-123456"})
        assert r.status_code == 200
        r = httpx.post(
            f"{server.url}/v1/runs",
            json={"workflowId": "conformance-noop"},
            headers={"Authorization": "Bearer ops-key-123456"},
        )
        assert r.status_code == 403 and r.json()["error"] == "forbidden"
        fixtures = httpx.get(f"{server.url}/.well-known/openwop").json()["fixtures"]
        assert len(fixtures) == 23 and "conformance-approval" in fixtures
    finally:
        server.stop()


def test_flags_and_environment() -> None:
    args = build_parser().parse_args(
        [
            "serve",
            "--port",
            "9001",
            "--workflows",
            "a",
            "--workflows",
            "b",
            "--api-key",
            "k-12345678",
            "--token-secret",
            "kid1:some-long-secret-value",
        ]
    )
    assert (args.port, args.workflows, args.api_key, args.token_secret) == (
        9001,
        ["a", "b"],
        ["k-12345678"],
        ["kid1:some-long-secret-value"],
    )


def test_lease_must_be_a_sensible_duration(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert build_parser().parse_args(["serve", "--lease-ms", "2000"]).lease_ms == 2000
    monkeypatch.setenv("OPENWOP_BRIDGE_LEASE_MS", "4500")
    assert build_parser().parse_args(["serve"]).lease_ms == 4500
    for bad in ("0", "-5", "soon"):
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args(["serve", "--lease-ms", bad])
        assert exit_.value.code == 2
        assert "--lease-ms" in capsys.readouterr().err


def test_idempotency_retention_is_at_least_a_day(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert build_parser().parse_args(["serve"]).idempotency_hours == 24
    monkeypatch.setenv("OPENWOP_BRIDGE_IDEMPOTENCY_HOURS", "48")
    args = build_parser().parse_args(["serve", "--db", str(tmp_path / "i.db")])
    _, engine, _, _ = build_server(args)
    assert engine.config.idempotency_ttl_ms == 48 * 3600 * 1000
    for bad in ("23", "0", "3000", "a day"):
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args(["serve", "--idempotency-hours", bad])
        assert exit_.value.code == 2
        assert "--idempotency-hours" in capsys.readouterr().err


def test_bad_workflow_dir_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--db", str(tmp_path / "x.db"), "--workflows", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err


async def _create(db: str) -> None:
    """A database as `serve` leaves it (the keys command never creates one)."""
    store = SqliteStore(db)
    await store.open()
    await store.close()


def test_keys_rotate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "keys.db")
    asyncio.run(_create(db))
    assert main(["keys", "list", "--db", db]) == 0
    first = capsys.readouterr().out.split()[0]
    assert main(["keys", "rotate", "--db", db]) == 0
    out = capsys.readouterr().out
    assert f"{first}\tverify-only" in out and "active" in out


def test_a_busy_port_fails_in_one_line_before_the_banner(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "openwop_bridge", "serve", "--db", str(tmp_path / "busy.db"), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert result.stdout == "", "nothing is announced before the port is bound"
    assert result.stderr.splitlines() == [
        f"openwop-bridge: cannot listen on 127.0.0.1:{port}: the address is already in use "
        "(another server is running there; choose another --port)"
    ]


def test_conversation_bounds_are_options(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    defaults = ConversationLimits()
    args = build_parser().parse_args(["serve", "--db", str(tmp_path / "c.db")])
    assert build_server(args)[1].config.conversation_limits == defaults
    monkeypatch.setenv("OPENWOP_BRIDGE_CONVERSATION_TURNS", "20")
    args = build_parser().parse_args(
        [
            "serve",
            "--db",
            str(tmp_path / "d.db"),
            "--conversation-message-bytes",
            "4096",
            "--conversation-bytes",
            "65536",
        ]
    )
    _, engine, _, _ = build_server(args)
    assert engine.config.conversation_limits == ConversationLimits(
        message_bytes=4096, conversation_bytes=65536, turns=20
    )
    assert engine.config.snapshot_messages == 50
    args = build_parser().parse_args(["serve", "--db", str(tmp_path / "e.db"), "--snapshot-messages", "8"])
    assert build_server(args)[1].config.snapshot_messages == 8
    for flag in ("--conversation-message-bytes", "--conversation-bytes", "--conversation-turns", "--snapshot-messages"):
        for bad in ("0", "-1", "lots"):
            with pytest.raises(SystemExit) as exit_:
                build_parser().parse_args(["serve", flag, bad])
            assert exit_.value.code == 2
            assert flag in capsys.readouterr().err


def test_a_bad_notify_file_stops_serve_in_one_line_naming_the_field(tmp_path: Path) -> None:
    notify = tmp_path / "notify.json"
    notify.write_text('{"publicBaseUrl": "http://127.0.0.1:8000", "routes": [{"notify": ["alice"]}]}')
    result = subprocess.run(
        [sys.executable, "-m", "openwop_bridge", "serve", "--db", str(tmp_path / "n.db"), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "OPENWOP_BRIDGE_NOTIFY_CONFIG": str(notify)},
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"openwop-bridge: notify file {str(notify)!r}: routes[0].notify[0]: no person 'alice' in people"
    ]
    assert "serving on" not in result.stdout
    assert not (tmp_path / "n.db").exists(), "nothing starts half-configured"


def test_a_notify_file_secret_is_never_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notify = tmp_path / "notify.json"
    secret = "xoxb-do-not-print-me"
    doc = {"channels": {"slack": {"token": secret, "signingSecret": 5}}, "publicBaseUrl": "http://127.0.0.1:1"}
    notify.write_text(json.dumps(doc))
    assert main(["serve", "--db", str(tmp_path / "s.db"), "--notify-config", str(notify)]) == 2
    err = capsys.readouterr().err
    assert "channels.slack.signingSecret: Input should be a valid string" in err and secret not in err


def test_notify_and_webhook_knobs_have_flags_variables_and_bounds(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = build_parser().parse_args(["serve"])
    assert (args.notify_retry_base_ms, args.notify_max_attempts) == (2000, 8)
    assert (args.webhook_retry_base_ms, args.webhook_max_attempts, args.webhook_timeout_ms) == (1000, 8, 10000)
    assert (args.webhook_rotation_overlap_seconds, args.webhook_allow_loopback) == (86400, False)
    monkeypatch.setenv("OPENWOP_BRIDGE_NOTIFY_MAX_ATTEMPTS", "3")
    monkeypatch.setenv("OPENWOP_BRIDGE_WEBHOOK_TIMEOUT_MS", "2500")
    monkeypatch.setenv("OPENWOP_BRIDGE_WEBHOOK_ALLOW_LOOPBACK", "1")
    args = build_parser().parse_args(["serve", "--webhook-retry-base-ms", "10"])
    assert (args.notify_max_attempts, args.webhook_timeout_ms, args.webhook_allow_loopback) == (3, 2500, True)
    assert args.webhook_retry_base_ms == 10
    for flag, bad in (("--webhook-rotation-overlap-seconds", "59"), ("--notify-max-attempts", "0")):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["serve", flag, bad])
        assert flag in capsys.readouterr().err


def _register_loopback_webhook(url: str, key: str) -> httpx.Response:
    return httpx.post(
        f"{url}/webhooks",
        json={"url": "http://127.0.0.1:9/hook", "events": ["run.completed"], "secret": "a-long-random-secret-of-yours"},
        headers={"Authorization": f"Bearer {key}", "OpenWOP-Version": "2.0"},
    )


def test_the_development_server_admits_loopback_webhooks_and_a_keyed_one_does_not(tmp_path: Path) -> None:
    """Without an API key (the development server, its dev key printed), a webhook to a loopback address is
    admitted, as ``--webhook-allow-loopback`` would, and the banner says so; a server with keys refuses it."""
    dev = ServerProcess(tmp_path / "dev.db").start()
    try:
        out = dev.output()
        key = re.search(r"dev API key \(every scope, tenant 'default'\): (\S+)", out)
        assert key, out
        assert "webhooks : loopback URLs admitted" in out, out
        admitted = _register_loopback_webhook(dev.url, key.group(1))
        assert admitted.status_code == 201, admitted.text
        # Private and metadata addresses stay refused.
        private = httpx.post(
            f"{dev.url}/webhooks",
            json={"url": "https://169.254.169.254/x", "events": ["run.completed"], "secret": "a-long-random-secret"},
            headers={"Authorization": f"Bearer {key.group(1)}", "OpenWOP-Version": "2.0"},
        )
        assert private.status_code == 400 and private.json()["error"] == "webhook_url_rejected", private.text
    finally:
        dev.stop()
    keyed = ServerProcess(tmp_path / "keyed.db", ["--api-key", "ops=ops-key-123456:*"]).start()
    try:
        assert "loopback URLs admitted" not in keyed.output()
        refused = _register_loopback_webhook(keyed.url, "ops-key-123456")
        assert refused.status_code == 400 and refused.json()["error"] == "webhook_url_rejected", refused.text
    finally:
        keyed.stop()
