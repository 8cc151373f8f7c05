"""The embedded store: one SQLite file in WAL mode.

Writes go to one writer thread that groups whatever transactions are queued
into a single ``BEGIN IMMEDIATE … COMMIT`` (each inside its own savepoint, so
one failing does not undo the others) and fsyncs once for the group
(``synchronous=FULL``: a 200 means on disk). Reads use a separate connection on
the event loop thread; WAL lets them run beside the writer.

A lock file beside the database keeps a second server off the same file.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from openwop_bridge.core.notices import NoticePlanning
from openwop_bridge.core.records import RunRecord
from openwop_bridge.store import plan
from openwop_bridge.store.base import (
    IDEMPOTENCY_COLS,
    IDEMPOTENCY_PRUNE,
    KV_SCAN_MAX,
    CommitResult,
    IdempotencyRecord,
    RunCommit,
    idempotency_from_row,
)
from openwop_bridge.store.codec import RUN_COLS, SQLITE, TERMINAL_SQL, dumps
from openwop_bridge.store.cursor import decode_cursor as decode_cursor
from openwop_bridge.store.cursor import encode_cursor as encode_cursor
from openwop_bridge.store.migrations import SQLITE_MIGRATIONS, check_version
from openwop_bridge.store.sqlite_reads import SqliteReads
from openwop_bridge.store.sqlite_soon import SoonValues
from openwop_bridge.store.sqlite_writer import Writer, connect, run_plan
from openwop_bridge.store.steps import Plan
from openwop_bridge.store.writes import Writes

T = TypeVar("T")


class SqliteStore(Writes, SqliteReads):
    """The :class:`~openwop_bridge.store.base.Store` on one SQLite file.

    ``notice_planning``: who plans the notices its run commits owe
    (:class:`~openwop_bridge.core.notices.NoticePlanning`;
    an engine's ``engine.notify`` registers on it), an empty one of its own when not given.
    """

    #: The lock file beside the database keeps every other server off it.
    single_instance = True
    #: "database is locked" past the busy timeout, an I/O error: the run waits for recovery.
    transient_errors: tuple[type[BaseException], ...] = (sqlite3.OperationalError,)

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "FULL",
        batch: int = 64,
        notice_planning: NoticePlanning | None = None,
    ) -> None:
        self.notice_planning = notice_planning or NoticePlanning()
        self.path = str(path)
        self.location = self.path
        self._sync = synchronous
        self._batch = batch
        self._writer: Writer | None = None
        self._reader: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self._commits_before = 0
        self._soon = SoonValues()

    @property
    def commits(self) -> int:
        """Durable transactions (COMMITs, each fsynced) since the store was created."""
        return self._commits_before + (self._writer.commits if self._writer is not None else 0)

    @property
    def url(self) -> str:
        """Where the data lives, for logs."""
        return f"sqlite:{self.path}"

    # --- lifecycle ----------------------------------------------------------

    def reserve(self) -> None:
        """Take the lock file beside the database (kept until :meth:`close`)."""
        if self.path == ":memory:" or self._lock_fd is not None:
            return
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(self.path + ".lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(self._lock_fd)
            self._lock_fd = None
            raise RuntimeError(
                f"another openwop-bridge server is using {self.path}; SQLite serves one instance "
                "(use PostgreSQL to run several)"
            ) from exc

    async def exists(self) -> bool:
        """Whether the file is there and holds the bridge's schema (read-only look: nothing is created)."""
        if self.path == ":memory:":
            return False

        def look() -> bool:
            if not Path(self.path).is_file():
                return False
            uri = Path(self.path).resolve().as_uri() + "?mode=ro"
            try:
                conn = sqlite3.connect(uri, uri=True)
                try:
                    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
                finally:
                    conn.close()
            except sqlite3.DatabaseError:
                return False
            return row is not None

        return await asyncio.to_thread(look)

    async def open(self) -> None:
        self.reserve()
        loop = asyncio.get_running_loop()
        self._writer = Writer(self.path, self._sync, loop, self._batch)
        self._writer.start()
        await asyncio.to_thread(self._writer.ready.wait)
        try:
            if self._writer.error is not None:
                raise self._writer.error
            await self._write(self._migrate)
            self._reader = connect(self.path, self._sync)
        except sqlite3.Error as exc:
            raise RuntimeError(f"cannot open the SQLite database {self.path}: {exc}") from exc

    async def close(self) -> None:
        if self._writer is not None and self._soon:
            await self._write(lambda conn: None)  # what is held goes to disk before the writer stops
        if self._writer is not None:
            self._writer.stop()
            await asyncio.to_thread(self._writer.join, 10)
            self._commits_before += self._writer.commits
            self._writer = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    async def listen(
        self,
        instance_id: str,
        on_wake: Callable[[str], None],
        on_events: Callable[[str], None],
        on_deadline: Callable[[int | None], None] | None = None,
    ) -> None:
        """Nothing to hear: no other instance writes to this file."""

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        current = int(row[0]) if row else 0
        check_version(current, len(SQLITE_MIGRATIONS))
        for version, script in enumerate(SQLITE_MIGRATIONS[current:], start=current + 1):
            for statement in script:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO meta(key, value) VALUES('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (str(version),),
            )

    def _submit(self, fn: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        """Queue ``fn`` for the writer now; the future settles once its transaction committed (or failed)."""
        assert self._writer is not None, "store is not open"
        if self._soon:
            fn = self._soon.riding(fn)
        return self._writer.submit(fn)

    async def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._submit(fn)

    # --- adapters' derived state --------------------------------------------

    async def kv_put_soon(self, namespace: str, key: str, value: Any, now_ms: int) -> None:
        """Hold the value for the next transaction (:mod:`openwop_bridge.store.sqlite_soon`); no commit of its own."""
        self._soon.put(namespace, key, value, now_ms)

    async def kv_get(self, namespace: str, key: str) -> Any:
        held, value = self._soon.get(namespace, key)
        return value if held else await super().kv_get(namespace, key)

    async def kv_scan(
        self, namespace: str, prefix: str, *, limit: int, after: str | None = None, descending: bool = True
    ) -> list[tuple[str, Any]]:
        """The committed page, with the values held for the next transaction in their places."""
        page = await super().kv_scan(namespace, prefix, limit=limit, after=after, descending=descending)
        held = self._soon.under(namespace, prefix) if self._soon else {}
        if after is not None:
            held = {k: v for k, v in held.items() if (k < after if descending else k > after)}
        if not held:
            return page
        merged = {**dict(page), **held}
        keys = sorted(merged, reverse=descending)[: min(limit, KV_SCAN_MAX)]
        return [(k, merged[k]) for k in keys]

    # --- signing keys -------------------------------------------------------

    async def add_signing_key(self, kid: str, secret: str, now_ms: int, *, activate: bool) -> None:
        def tx(conn: sqlite3.Connection) -> None:
            if activate:
                conn.execute("UPDATE signing_keys SET active=0")
            conn.execute(
                "INSERT INTO signing_keys(kid, secret, created_at, active) VALUES(?,?,?,?) "
                "ON CONFLICT(kid) DO UPDATE SET active=excluded.active, retired_at=NULL",
                (kid, secret, now_ms, int(activate)),
            )

        await self._write(tx)

    # --- runs ---------------------------------------------------------------

    async def _plan(self, make: Callable[[], Plan[T]]) -> T:
        return await self._write(lambda conn: run_plan(conn, self._planned(make())))

    def commit_soon(self, commit: RunCommit) -> asyncio.Future[CommitResult]:
        # Queued at once: no task between the executor and the writer.
        return self._submit(lambda conn: run_plan(conn, self._planned(plan.commit(SQLITE, commit))))

    async def claim_run(self, run_id: str, owner: str, now_ms: int, lease_ms: int) -> RunRecord | None:
        def tx(conn: sqlite3.Connection) -> RunRecord | None:
            row = conn.execute(
                f"UPDATE runs SET owner=?, lease_until=?, epoch=epoch+1 WHERE run_id=? "
                f"AND status NOT IN {TERMINAL_SQL} "
                f"AND (owner IS NULL OR owner=? OR lease_until < ?) RETURNING {RUN_COLS}",
                (owner, now_ms + lease_ms, run_id, owner, now_ms),
            ).fetchone()
            return SQLITE.run(row) if row else None

        return await self._write(tx)

    async def renew_leases(self, owner: str, run_ids: Sequence[str], now_ms: int, lease_ms: int) -> int:
        ids = list(run_ids)

        def tx(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "UPDATE runs SET lease_until=? WHERE owner=? AND run_id IN (SELECT value FROM json_each(?))",
                (now_ms + lease_ms, owner, dumps(ids)),
            ).rowcount

        return await self._write(tx)

    async def release_owned(self, owner: str) -> list[str]:
        def tx(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute(
                "UPDATE runs SET owner=NULL, lease_until=NULL, needs_work=1 "
                f"WHERE owner=? AND status NOT IN {TERMINAL_SQL} RETURNING run_id",
                (owner,),
            ).fetchall()
            return [str(row[0]) for row in rows]

        return await self._write(tx)

    async def reset_owners(self) -> int:
        # Safe only because the lock file guarantees no other server uses this file.
        def tx(conn: sqlite3.Connection) -> int:
            # Notices a dead server was delivering are due again at once (the attempt it made still counts).
            conn.execute("UPDATE outbox SET lease_owner=NULL, next_attempt=0 WHERE lease_owner IS NOT NULL")
            return conn.execute("UPDATE runs SET owner=NULL, lease_until=NULL WHERE owner IS NOT NULL").rowcount

        return await self._write(tx)

    # --- adapters' state and audit ------------------------------------------

    # --- Idempotency-Key records ---------------------------------------------

    async def idempotency_begin(
        self, key_id: str, digest: str, owner: str, now_ms: int, *, lease_ms: int, ttl_ms: int
    ) -> IdempotencyRecord | None:
        def tx(conn: sqlite3.Connection) -> IdempotencyRecord | None:
            conn.execute(
                "DELETE FROM idempotency WHERE key_id IN "
                "(SELECT key_id FROM idempotency WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)",
                (now_ms, IDEMPOTENCY_PRUNE),
            )
            row = conn.execute(f"SELECT {IDEMPOTENCY_COLS} FROM idempotency WHERE key_id=?", (key_id,)).fetchone()
            found = idempotency_from_row(row) if row else None
            if found is not None and found.expires_at_ms <= now_ms:
                conn.execute("DELETE FROM idempotency WHERE key_id=?", (key_id,))
                found = None
            if found is None:
                conn.execute(
                    "INSERT INTO idempotency(key_id, digest, owner, lease_until, created_at, expires_at) "
                    "VALUES(?,?,?,?,?,?)",
                    (key_id, digest, owner, now_ms + lease_ms, now_ms, now_ms + ttl_ms),
                )
                return None
            stalled = found.pending and (found.lease_until_ms or 0) < now_ms
            if stalled and found.digest == digest:
                conn.execute(
                    "UPDATE idempotency SET owner=?, lease_until=? WHERE key_id=?", (owner, now_ms + lease_ms, key_id)
                )
                return None
            return found

        return await self._write(tx)
