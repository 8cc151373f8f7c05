"""``openwop-bridge audit export`` and ``audit verify``: an auditor's copy of the decision record, checked offline.

The export is written from a real database file, the keys read from a file or fetched from a running host,
and a byte changed in the database, a record removed or two swapped are each named by ``verify``.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from openwop_bridge import Engine, SqliteStore
from openwop_bridge.core.auth import KeyRing, Principal
from openwop_bridge.host.app import create_app
from tests.conftest import KEYS, fixture_workflows
from tests.helpers import settle
from tests.server import uvicorn_server

BOB = Principal("bob", roles=frozenset({"operator"}))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openwop_bridge", *args], capture_output=True, text=True, timeout=120, check=False
    )


async def _decide(engine: Engine, count: int) -> None:
    for _ in range(count):
        run = await engine.create_run(BOB, "conformance-approval")
        await settle(engine, run.run_id)
        await engine.resolve(BOB, {"action": "accept"}, run_id=run.run_id, node_id="gate")


@pytest.fixture
def database(tmp_path: Path) -> tuple[Path, Path]:
    """A database holding five decisions, and its keys saved to a file."""
    db, keys = tmp_path / "bridge.db", tmp_path / "keys.json"

    async def build() -> None:
        async with Engine(SqliteStore(db), workflows=fixture_workflows()) as engine:
            await _decide(engine, 5)
            keys.write_text(json.dumps(await engine.decision_record_keys()))

    asyncio.run(build())
    return db, keys


def _export(db: Path, out: Path) -> None:
    result = _cli("audit", "export", "--db", str(db), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == f"exported {len(out.read_bytes().splitlines())} record(s)"


def test_an_export_of_a_database_verifies(database: tuple[Path, Path], tmp_path: Path) -> None:
    db, keys = database
    out = tmp_path / "record.jsonl"
    _export(db, out)
    assert len(out.read_bytes().splitlines()) == 5
    result = _cli("audit", "verify", str(out), "--keys", str(keys))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("OK: 5 record(s) hold (last record per tenant: default: 5); signed by 1 key(s)")
    piped = subprocess.run(
        [sys.executable, "-m", "openwop_bridge", "audit", "verify", "-", "--keys", str(keys)],
        input=out.read_text(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr
    part = tmp_path / "part.jsonl"
    part.write_bytes(b"".join(out.read_bytes().splitlines(keepends=True)[2:4]))
    whole = _cli("audit", "verify", str(part), "--keys", str(keys))
    assert whole.returncode == 1 and "record 1 of tenant 'default': missing" in whole.stderr, whole.stderr
    partial = _cli("audit", "verify", str(part), "--keys", str(keys), "--partial")
    assert partial.returncode == 0 and partial.stdout.startswith("OK: 2 record(s) hold"), partial.stderr
    one = _cli("audit", "export", "--db", str(db), "--tenant", "elsewhere")
    assert one.returncode == 0 and one.stdout == "" and "exported 0 record(s)" in one.stderr


@pytest.mark.parametrize(
    ("tamper", "seq", "why"),
    [
        ("UPDATE decision_records SET body=REPLACE(body, '\"bob\"', '\"bop\"') WHERE seq=2", 2, "edited"),
        ("DELETE FROM decision_records WHERE seq=3", 3, "missing"),
        (
            "UPDATE decision_records SET seq=-4 WHERE seq=4; UPDATE decision_records SET seq=4 WHERE seq=5; "
            "UPDATE decision_records SET seq=5 WHERE seq=-4",
            4,
            "missing",
        ),
    ],
    ids=["one-byte", "deleted", "swapped"],
)
def test_verify_names_the_first_broken_record(
    database: tuple[Path, Path], tmp_path: Path, tamper: str, seq: int, why: str
) -> None:
    db, keys = database
    with sqlite3.connect(db) as conn:
        conn.executescript(tamper)
    out = tmp_path / "record.jsonl"
    _export(db, out)
    result = _cli("audit", "verify", str(out), "--keys", str(keys))
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert f"record {seq} of tenant 'default': {why}" in result.stderr, result.stderr
    assert result.stdout == ""


def test_an_exported_line_edited_is_named(database: tuple[Path, Path], tmp_path: Path) -> None:
    db, keys = database
    out = tmp_path / "record.jsonl"
    _export(db, out)
    lines = out.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b'"accept"', b'"reject"', 1)
    out.write_bytes(b"".join(lines))
    result = _cli("audit", "verify", str(out), "--keys", str(keys))
    assert result.returncode == 1 and "line 4: record 4 of tenant 'default': edited" in result.stderr, result.stderr


async def test_verify_fetches_the_keys_from_a_running_host(tmp_path: Path) -> None:
    engine = Engine(SqliteStore(tmp_path / "live.db"), workflows=fixture_workflows())
    app = create_app(engine, KeyRing(KEYS.values()), keepalive_s=0.2)
    async with uvicorn_server(app) as url:
        await _decide(engine, 2)
        out = tmp_path / "record.jsonl"
        async with httpx.AsyncClient(base_url=url) as client:
            r = await client.get(
                "/v1/audit/decisions",
                headers={"Authorization": "Bearer key-admin-0001", "Accept": "application/x-ndjson"},
            )
            assert r.status_code == 200, r.text
            out.write_bytes(r.content)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "openwop_bridge",
            "audit",
            "verify",
            str(out),
            "--keys",
            f"{url}/v1/audit/keys",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, stderr.decode()
    assert stdout.decode().startswith("OK: 2 record(s) hold")


def test_bad_inputs_get_one_line_and_exit_2(database: tuple[Path, Path], tmp_path: Path) -> None:
    db, keys = database
    out = tmp_path / "record.jsonl"
    _export(db, out)
    garbage = tmp_path / "garbage.json"
    garbage.write_text("not json")
    cases = [
        (("audit", "export", "--db", str(tmp_path / "none.db")), "no openwop-bridge database at"),
        (("audit", "verify", str(out), "--keys", str(garbage)), "are not JSON"),
        (("audit", "verify", str(out), "--keys", str(tmp_path / "missing.json")), "cannot read the keys file"),
        (("audit", "verify", str(tmp_path / "missing.jsonl"), "--keys", str(keys)), "cannot read"),
        (("audit", "verify", str(out), "--keys", "http://127.0.0.1:9/v1/audit/keys"), "cannot fetch the keys"),
        (("audit", "verify", str(out)), "--keys"),
    ]
    for args, said in cases:
        result = _cli(*args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert said in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)
