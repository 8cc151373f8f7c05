"""Databases at an older schema version, for the tests of the migrations after it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from openwop_bridge.store.migrations import POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS
from tests import pg


def sqlite_at(path: Path, version: int) -> sqlite3.Connection:
    """A connection to a new SQLite file holding the schema of ``version``, that version recorded."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for statement in (s for script in SQLITE_MIGRATIONS[:version] for s in script):
        conn.execute(statement)
    conn.execute("INSERT INTO meta VALUES('schema_version', ?)", (str(version),))
    return conn


def postgres_at(url: str, version: int) -> None:
    """The schema of ``version`` in the (empty) PostgreSQL database at ``url``, that version recorded."""
    pg.execute(url, "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for statement in (s for script in POSTGRES_MIGRATIONS[:version] for s in script):
        pg.execute(url, statement)
    pg.execute(url, "INSERT INTO meta VALUES('schema_version', %s)", str(version))
