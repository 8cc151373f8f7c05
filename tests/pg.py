"""A fresh PostgreSQL database per test, from the admin URL in ``BRIDGE_TEST_PG_URL``.

Tests that need PostgreSQL fail (never skip) when the variable is missing:
a suite that silently leaves out the shared store proves nothing about it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

ENV = "BRIDGE_TEST_PG_URL"
HOW = (
    f"{ENV} is not set: these tests need a PostgreSQL server. Point it at a role that may CREATE DATABASE, "
    f"e.g. {ENV}=postgresql://bridge:bridge@127.0.0.1:5432/postgres "
    "(.ci/run installs PostgreSQL from Debian packages and sets it; see docs/operate/postgresql.md)."
)
PREFIX = "owb_test_"
_counter = itertools.count()


def admin_url() -> str:
    """The admin URL, or a test failure that says how to provide one."""
    url = os.environ.get(ENV, "").strip()
    if not url:
        pytest.fail(HOW, pytrace=False)
    if not url.startswith(("postgresql://", "postgres://")):
        pytest.fail(f"{ENV} must be a postgresql:// URL, got {url!r}", pytrace=False)
    return url


def database_url(admin: str, name: str) -> str:
    """``admin`` pointing at database ``name`` instead."""
    parts = urlsplit(admin)
    return urlunsplit(parts._replace(path="/" + name))


def create_database() -> tuple[str, str]:
    """Create an empty database with a unique name; returns ``(name, url)``."""
    admin = admin_url()
    name = f"{PREFIX}{os.getpid()}_{next(_counter)}_{secrets.token_hex(3)}"
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.OperationalError as exc:
        pytest.fail(f"cannot reach PostgreSQL through {ENV}: {exc}", pytrace=False)
    return name, database_url(admin, name)


def _drop(admin: str, name: str) -> None:
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    except psycopg.Error as exc:
        print(f"tests/pg.py: could not drop test database {name}: {exc}", file=sys.stderr)


# DROP DATABASE waits for a checkpoint (a quarter of a second here): tests hand their
# databases to these threads and go on; drops running together share checkpoints,
# and the interpreter waits for the last ones before it exits.
_dropper = ThreadPoolExecutor(max_workers=4, thread_name_prefix="drop-test-db")


def drop_database(name: str) -> None:
    """Drop a test database soon, ending any connection still open to it."""
    _dropper.submit(_drop, admin_url(), name)


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    """A new, empty database for the duration of the block; yields its URL."""
    name, url = create_database()
    try:
        yield url
    finally:
        drop_database(name)


def execute(url: str, statement: str, *args: object) -> list[tuple]:
    """Run one statement on ``url`` (autocommit); returns its rows, if any."""
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, args or None)
        return cur.fetchall() if cur.description else []
