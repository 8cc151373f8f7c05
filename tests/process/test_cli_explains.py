"""The command line explains itself: every option names its default and variable, `keys` has a
description per action and refuses a database that does not exist, a busy database is one line,
and the banner names every mounted surface and how to stop."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from openwop_bridge.host.cli import build_parser, main
from openwop_bridge.host.options import ENV_PREFIX, env_name
from tests import pg
from tests.server import ServerProcess

ROOT = Path(__file__).resolve().parents[2]


def _serve_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["serve"]


def _options() -> list[argparse.Action]:
    return [a for a in _serve_parser()._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


def test_every_serve_option_names_its_default_and_its_variable() -> None:
    options = _options()
    assert len(options) >= 15
    for action in options:
        text = action.help or ""
        assert f"env {env_name(action)}" in text, (action.option_strings, text)
        assert "default" in text or "off unless given" in text, (action.option_strings, text)


# Values each option's variable is tried with; the first one its parser accepts must show up.
_CANDIDATES = ("1", "48", "12345", "json", "debug", "sentinel-value", "0.25")


@pytest.mark.parametrize("flag", [a.option_strings[-1] for a in _options()])
def test_the_variable_a_help_names_really_sets_the_option(flag: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A flag whose help names a variable the code does not read would send operators astray."""
    action = next(a for a in _options() if a.option_strings[-1] == flag)
    variable = env_name(action)
    assert variable.startswith(ENV_PREFIX)
    baseline = vars(build_parser().parse_args(["serve"]))[action.dest]
    for candidate in _CANDIDATES:
        monkeypatch.setenv(variable, candidate)
        try:
            value = vars(build_parser().parse_args(["serve"]))[action.dest]
        except SystemExit:
            continue
        if value != baseline:
            return
    pytest.fail(f"setting {variable} changes nothing for {flag}")


def test_keys_actions_each_have_a_description(capsys: pytest.CaptureFixture[str]) -> None:
    seen = set()
    for action in ("list", "rotate", "retire"):
        with pytest.raises(SystemExit):
            main(["keys", action, "--help"])
        out = capsys.readouterr().out
        description = out.split("\n\n")[1]
        assert description not in seen and len(description) > 30, out
        seen.add(description)
    with pytest.raises(SystemExit):
        main(["keys", "--help"])
    assert "never create one" in capsys.readouterr().out


def test_keys_on_a_missing_sqlite_file_refuses_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "typo" / "openwop-brdge.db"
    for action in (["list"], ["rotate"], ["retire", "--kid", "k1"]):
        assert main(["keys", *action, "--db", str(typo)]) == 2
        err = capsys.readouterr().err
        assert err.strip() == f"openwop-bridge: no openwop-bridge database at {typo} (check --db; `serve` creates one)"
    assert not typo.parent.exists(), "nothing was created"


def test_keys_on_a_file_that_is_not_a_bridge_database_refuses(tmp_path: Path) -> None:
    other = tmp_path / "notes.db"
    other.write_bytes(b"not a database at all")
    assert main(["keys", "list", "--db", str(other)]) == 2
    assert other.read_bytes() == b"not a database at all"


@pytest.mark.postgres
async def test_keys_on_an_empty_postgres_database_refuses_and_creates_nothing() -> None:
    import psycopg

    name, url = pg.create_database()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "openwop_bridge", "keys", "list", "--db", url],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2
        assert done.stderr.startswith("openwop-bridge: no openwop-bridge database at"), done.stderr
        assert "openwop_ci:openwop_ci@" not in done.stderr, "the password is not printed"
        async with await psycopg.AsyncConnection.connect(url) as conn:
            cur = await conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
            row = await cur.fetchone()
        assert row is not None and row[0] == 0, "no table was created"
    finally:
        pg.drop_database(name)


@pytest.mark.slow
def test_serve_and_the_chat_example_on_a_busy_database_say_so_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "busy.db"
    server = ServerProcess(db).start()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "openwop_bridge", "serve", "--db", str(db), "--port", "0"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2
        assert done.stdout == ""
        assert done.stderr.splitlines() == [
            f"openwop-bridge: another openwop-bridge server is using {db}; SQLite serves one instance "
            "(use PostgreSQL to run several)"
        ]
        keys = subprocess.run(
            [sys.executable, "-m", "openwop_bridge", "keys", "list", "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert keys.returncode == 2 and len(keys.stderr.splitlines()) == 1, keys.stderr
        assert "another openwop-bridge server is using" in keys.stderr
        bundle = ROOT / "examples" / "chat" / "dist" / "chat.js"
        assert bundle.is_file(), "build the chat page first: cd examples/chat && npm ci && npm run build"
        chat = subprocess.run(
            [sys.executable, "examples/chat/serve.py", "--db", str(db), "--port", "0"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
        assert chat.returncode == 1
        assert chat.stderr.splitlines() == [
            f"serve.py: another openwop-bridge server is using {db}; SQLite serves one instance "
            "(use PostgreSQL to run several)"
        ]
    finally:
        server.stop()


@pytest.mark.slow
def test_the_banner_names_every_mounted_surface_and_how_to_stop(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "banner.db").start()
    try:
        out = server.output()
    finally:
        server.stop()
    url = server.url
    for line in (
        f"AG-UI    : {url}/agui/<workflowId>",
        f"LangGraph: {url}/langgraph",
        f"MCP      : {url}/mcp",
        f"A2A      : {url}/a2a",
        "/.well-known/agent-card.json",
        f"inbox    : {url}/ui/",
        "stop     : Ctrl+C",
    ):
        assert line in out, out
    assert re.search(r"v1 at \S+/v1, v2 at", out)


def _serve_once(db: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openwop_bridge", "serve", "--db", db, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_serve_on_a_file_that_is_not_a_database_says_so_in_one_line(tmp_path: Path) -> None:
    """A database that cannot be opened stops ``serve`` before the banner, in one line, with no traceback."""
    other = tmp_path / "notes.db"
    other.write_bytes(b"not a database at all" * 300)
    done = _serve_once(str(other))
    assert done.returncode == 2, done.stderr
    assert done.stdout == "", "nothing is announced"
    assert done.stderr.splitlines() == [
        f"openwop-bridge: cannot open the SQLite database {other}: file is not a database"
    ], done.stderr
    assert other.read_bytes() == b"not a database at all" * 300, "the file is left as it was"


@pytest.mark.postgres
def test_serve_on_postgres_it_cannot_use_says_why_in_one_line() -> None:
    """A wrong password, and a role that may not create the bridge's tables: one line each, no password,
    no traceback, and for the second what to do about it."""
    name, url = pg.create_database()
    try:
        parts = urlsplit(url)
        assert parts.password, "the test's URL carries a password"
        wrong = urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":not-the-password@")))
        done = _serve_once(wrong)
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        [line] = done.stderr.splitlines()
        assert line.startswith(f"openwop-bridge: cannot connect to PostgreSQL at postgresql://{parts.username}:***@")
        assert "password authentication failed" in line, line
        assert "not-the-password" not in line
        # No schema it may create in: here pg_catalog, as a role without CREATE on public meets it.
        denied = url + "?options=-csearch_path%3Dpg_catalog"
        done = _serve_once(denied)
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        [line] = done.stderr.splitlines()
        assert line.startswith(
            f"openwop-bridge: cannot create the bridge's tables in postgresql://{parts.username}:***@"
        ), line
        assert "permission denied for schema pg_catalog" in line, line
        assert "GRANT CREATE ON SCHEMA" in line and "a database the role owns" in line, line
        assert f":{parts.password}@" not in line, "the password is not printed"
    finally:
        pg.drop_database(name)
