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

from bridge.core.errors import BridgeError, InterruptNotFoundError, RunNotFoundError, StaleOwnerError, ValidationError
from bridge.core.events import EventDraft
from bridge.core.records import (
    InterruptDecision,
    InterruptRecord,
    Mutation,
    RunDecision,
    RunRecord,
    cancel_committed,
    has_nul,
)
from bridge.store.base import (
    IDEMPOTENCY_COLS,
    IDEMPOTENCY_PRUNE,
    Claim,
    CommitResult,
    IdempotencyRecord,
    MutationResult,
    RunCommit,
    idempotency_from_row,
)
from bridge.store.cursor import decode_cursor as decode_cursor
from bridge.store.cursor import encode_cursor as encode_cursor
from bridge.store.migrations import SQLITE_MIGRATIONS, check_version
from bridge.store.sqlite_reads import INT_COLS, RUN_COLS, SqliteReads, dumps, interrupt_row, loads, run_row
from bridge.store.sqlite_writer import Writer, connect

T = TypeVar("T")


class SqliteStore(SqliteReads):
    """The :class:`~bridge.store.base.Store` on one SQLite file."""

    #: "database is locked" past the busy timeout, an I/O error: the run waits for recovery.
    transient_errors: tuple[type[BaseException], ...] = (sqlite3.OperationalError,)

    def __init__(self, path: str | Path, *, synchronous: str = "FULL", batch: int = 64) -> None:
        self.path = str(path)
        self._sync = synchronous
        self._batch = batch
        self._writer: Writer | None = None
        self._reader: sqlite3.Connection | None = None
        self._lock_fd: int | None = None

    @property
    def url(self) -> str:
        """Where the data lives, for logs."""
        return f"sqlite:{self.path}"

    # --- lifecycle ----------------------------------------------------------

    async def open(self) -> None:
        if self.path != ":memory:":
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
        loop = asyncio.get_running_loop()
        self._writer = Writer(self.path, self._sync, loop, self._batch)
        self._writer.start()
        await asyncio.to_thread(self._writer.ready.wait)
        if self._writer.error is not None:
            raise self._writer.error
        await self._write(self._migrate)
        self._reader = connect(self.path, self._sync)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.stop()
            await asyncio.to_thread(self._writer.join, 10)
            self._writer = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

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

    async def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        assert self._writer is not None, "store is not open"
        return await self._writer.submit(fn)

    # --- signing keys -------------------------------------------------------

    async def signing_keys(self) -> list[tuple[str, str, bool]]:
        rows = (
            self._read()
            .execute("SELECT kid, secret, active FROM signing_keys WHERE retired_at IS NULL ORDER BY created_at")
            .fetchall()
        )
        return [(r[0], r[1], bool(r[2])) for r in rows]

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

    async def retire_signing_key(self, kid: str, now_ms: int) -> None:
        def tx(conn: sqlite3.Connection) -> None:
            conn.execute("UPDATE signing_keys SET retired_at=?, active=0 WHERE kid=?", (now_ms, kid))

        await self._write(tx)

    # --- runs ---------------------------------------------------------------

    @staticmethod
    def _insert_run(conn: sqlite3.Connection, run: RunRecord) -> None:
        if has_nul((run.run_id, run.tenant, run.workflow_id)):
            raise ValidationError("run identifiers and tenants must not contain U+0000")
        conn.execute(
            f"INSERT INTO runs({RUN_COLS}) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run.run_id,
                run.tenant,
                run.workflow_id,
                run.status,
                run.created_at_ms,
                run.updated_at_ms,
                dumps(run.spec),
                dumps(run.state),
                run.parent_run_id,
                run.parent_node_id,
                run.parent_visit,
                run.child_ordinal,
                run.completed_at_ms,
                0,
                run.owner,
                run.lease_until_ms,
                run.epoch,
                run.wake,
                int(run.needs_work),
                dumps(run.control) if run.control else None,
            ),
        )

    @staticmethod
    def _append(
        conn: sqlite3.Connection, run_id: str, start: int, drafts: Sequence[EventDraft]
    ) -> list[dict[str, Any]]:
        docs = []
        rows = []
        seq = start
        for draft in drafts:
            doc = draft.envelope(run_id, seq)
            act = draft.activation
            rows.append(
                (
                    run_id,
                    seq,
                    draft.type,
                    act[0] if act else draft.node_id,
                    act[1] if act else None,
                    act[2] if act else None,
                    dumps(doc),
                )
            )
            docs.append(doc)
            seq += 1
        if rows:
            conn.executemany(
                "INSERT INTO events(run_id, seq, type, node_id, visit, cmd, doc) VALUES(?,?,?,?,?,?,?)", rows
            )
            conn.execute("UPDATE runs SET next_seq=? WHERE run_id=?", (seq, run_id))
        return docs

    async def create_run(self, run: RunRecord, events: Sequence[EventDraft]) -> list[dict[str, Any]]:
        def tx(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            self._insert_run(conn, run)
            return self._append(conn, run.run_id, 0, events)

        return await self._write(tx)

    async def load_run(self, run_id: str) -> RunRecord | None:
        row = self._read().execute(f"SELECT {RUN_COLS} FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return run_row(row) if row else None

    async def claim_run(self, run_id: str, owner: str, now_ms: int, lease_ms: int) -> RunRecord | None:
        def tx(conn: sqlite3.Connection) -> RunRecord | None:
            row = conn.execute(
                f"UPDATE runs SET owner=?, lease_until=?, epoch=epoch+1 WHERE run_id=? "
                f"AND status NOT IN ('completed','failed','cancelled') "
                f"AND (owner IS NULL OR owner=? OR lease_until < ?) RETURNING {RUN_COLS}",
                (owner, now_ms + lease_ms, run_id, owner, now_ms),
            ).fetchone()
            return run_row(row) if row else None

        return await self._write(tx)

    async def renew_leases(self, owner: str, run_ids: Sequence[str], now_ms: int, lease_ms: int) -> int:
        ids = list(run_ids)

        def tx(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "UPDATE runs SET lease_until=? WHERE owner=? AND run_id IN (SELECT value FROM json_each(?))",
                (now_ms + lease_ms, owner, dumps(ids)),
            ).rowcount

        return await self._write(tx)

    def _insert_interrupt(self, conn: sqlite3.Connection, i: InterruptRecord) -> None:
        conn.execute(
            f"INSERT INTO interrupts({INT_COLS}) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                i.interrupt_id,
                i.run_id,
                i.tenant,
                i.workflow_id,
                i.node_id,
                i.exec_node,
                i.visit,
                i.ordinal,
                i.key,
                i.kind,
                i.status,
                dumps(i.payload),
                i.requested_at_ms,
                i.deadline_ms,
                i.resolved_at_ms,
                int(i.consumed),
                dumps(i.resolution) if i.resolution is not None else None,
                dumps(i.state) if i.state else None,
                i.requested_seq,
            ),
        )

    async def commit(self, commit: RunCommit) -> CommitResult:
        def tx(conn: sqlite3.Connection) -> CommitResult:
            row = conn.execute(
                "SELECT owner, epoch, next_seq, wake, status, control FROM runs WHERE run_id=?", (commit.run_id,)
            ).fetchone()
            if row is None:
                raise RunNotFoundError(f"run {commit.run_id} does not exist")
            if row[0] != commit.owner or row[1] != commit.epoch:
                raise StaleOwnerError(f"run {commit.run_id} is owned by another executor")
            closed_as = cancel_committed(row[4], loads(row[5]))
            docs = self._append(conn, commit.run_id, row[2], commit.events)
            by_event = {d["eventId"]: d["sequence"] for d in docs}
            for intr in commit.new_interrupts:
                if intr.requested_seq is None and intr.requested_event_id in by_event:
                    intr.requested_seq = by_event[intr.requested_event_id]
                if closed_as and intr.open:
                    # The run's cancel committed first: nobody may answer this interrupt.
                    intr.status, intr.resolved_at_ms = closed_as, commit.now_ms
                self._insert_interrupt(conn, intr)
            if closed_as:
                conn.execute(
                    "UPDATE interrupts SET status=?, resolved_at=? WHERE run_id=? AND status='pending'",
                    (closed_as, commit.now_ms, commit.run_id),
                )
            if commit.consume:
                conn.executemany(
                    "UPDATE interrupts SET consumed=1 WHERE interrupt_id=?", [(i,) for i in commit.consume]
                )
            for iid, status in commit.close_interrupts.items():
                conn.execute(
                    "UPDATE interrupts SET status=?, resolved_at=? WHERE interrupt_id=? AND status='pending'",
                    (status, commit.now_ms, iid),
                )
            sets = ["updated_at=?"]
            args: list[Any] = [commit.now_ms]
            if commit.state is not None:
                sets.append("state=?")
                args.append(dumps(commit.state))
            if commit.status is not None and (commit.terminal or not closed_as):
                # A run whose cancel committed stays ``cancelling`` until its executor ends it.
                sets.append("status=?")
                args.append(commit.status)
            if commit.terminal:
                sets += ["completed_at=?", "owner=NULL", "lease_until=NULL", "needs_work=0"]
                args.append(commit.now_ms)
            conn.execute(f"UPDATE runs SET {', '.join(sets)} WHERE run_id=?", (*args, commit.run_id))
            child_events: dict[str, list[dict[str, Any]]] = {}
            for child in commit.children:
                self._insert_run(conn, child.run)
                child_events[child.run.run_id] = self._append(conn, child.run.run_id, 0, child.events)
            if commit.wake_run:
                conn.execute(
                    "UPDATE runs SET wake=wake+1, needs_work=1 WHERE run_id=? "
                    "AND status NOT IN ('completed','failed','cancelled')",
                    (commit.wake_run,),
                )
            released = False
            if commit.release_if_wake is not None and not commit.terminal:
                released = (
                    conn.execute(
                        "UPDATE runs SET owner=NULL, lease_until=NULL, needs_work=0 WHERE run_id=? AND wake=?",
                        (commit.run_id, commit.release_if_wake),
                    ).rowcount
                    == 1
                )
            return CommitResult(docs, released, row[3], child_events)

        return await self._write(tx)

    def _apply(
        self,
        conn: sqlite3.Connection,
        run: RunRecord,
        intr: InterruptRecord | None,
        m: Mutation,
        now_ms: int,
        claim: Claim | None = None,
    ) -> MutationResult:
        if intr is not None and (m.interrupt_status or m.interrupt_state is not None or m.resolution is not None):
            conn.execute(
                "UPDATE interrupts SET status=COALESCE(?, status), state=COALESCE(?, state), "
                "resolution=COALESCE(?, resolution), resolved_at=COALESCE(?, resolved_at) WHERE interrupt_id=?",
                (
                    m.interrupt_status,
                    dumps(m.interrupt_state) if m.interrupt_state is not None else None,
                    dumps(m.resolution) if m.resolution is not None else None,
                    m.resolved_at_ms,
                    intr.interrupt_id,
                ),
            )
        if m.cancel_interrupts:
            conn.execute(
                "UPDATE interrupts SET status=?, resolved_at=? WHERE run_id=? AND status='pending'",
                (m.cancel_interrupts, now_ms, run.run_id),
            )
        seq = conn.execute("SELECT next_seq FROM runs WHERE run_id=?", (run.run_id,)).fetchone()[0]
        docs = self._append(conn, run.run_id, seq, m.events)
        if m.wake or m.run_status or m.control is not None:
            conn.execute(
                "UPDATE runs SET wake=wake+?, needs_work=MAX(needs_work, ?), status=COALESCE(?, status), "
                "control=COALESCE(?, control), updated_at=? WHERE run_id=?",
                (
                    int(m.wake),
                    int(m.wake),
                    m.run_status,
                    dumps(m.control) if m.control is not None else None,
                    now_ms,
                    run.run_id,
                ),
            )
        claimed = False
        if m.wake and claim is not None:
            claimed = (
                conn.execute(
                    "UPDATE runs SET owner=?, lease_until=?, epoch=epoch+1 WHERE run_id=? "
                    "AND status NOT IN ('completed','failed','cancelled') AND (owner IS NULL OR lease_until < ?)",
                    (claim.owner, now_ms + claim.lease_ms, run.run_id, now_ms),
                ).rowcount
                == 1
            )
        for entry in m.audit:
            conn.execute(
                "INSERT INTO audit(tenant, at, principal, action, resource, run_id, details) VALUES(?,?,?,?,?,?,?)",
                (
                    run.tenant,
                    now_ms,
                    entry["principal"],
                    entry["action"],
                    entry["resource"],
                    run.run_id,
                    dumps(entry.get("details", {})),
                ),
            )
        after_run = run_row(conn.execute(f"SELECT {RUN_COLS} FROM runs WHERE run_id=?", (run.run_id,)).fetchone())
        after_int = None
        if intr is not None:
            after_int = interrupt_row(
                conn.execute(f"SELECT {INT_COLS} FROM interrupts WHERE interrupt_id=?", (intr.interrupt_id,)).fetchone()
            )
        return MutationResult(docs, after_run, after_int, m.result, claimed)

    async def mutate_interrupt(
        self,
        decide: InterruptDecision,
        now_ms: int,
        *,
        interrupt_id: str | None = None,
        run_id: str | None = None,
        node_id: str | None = None,
        claim: Claim | None = None,
    ) -> MutationResult:
        errors: list[BridgeError] = []

        def tx(conn: sqlite3.Connection) -> MutationResult:
            if interrupt_id is not None:
                row = conn.execute(
                    f"SELECT {INT_COLS} FROM interrupts WHERE interrupt_id=?", (interrupt_id,)
                ).fetchone()
            else:
                row = conn.execute(
                    f"SELECT {INT_COLS} FROM interrupts WHERE run_id=? AND node_id=? "
                    "ORDER BY requested_at DESC, ordinal DESC LIMIT 1",
                    (run_id, node_id),
                ).fetchone()
            if row is None:
                raise InterruptNotFoundError("no interrupt at this address")
            intr = interrupt_row(row)
            run = run_row(conn.execute(f"SELECT {RUN_COLS} FROM runs WHERE run_id=?", (intr.run_id,)).fetchone())
            m = decide(intr, run)
            if m.error is not None:
                errors.append(m.error)
            return self._apply(conn, run, intr, m, now_ms, claim)

        result = await self._write(tx)
        if errors:
            raise errors[0]
        return result

    async def mutate_run(
        self, run_id: str, decide: RunDecision, now_ms: int, *, claim: Claim | None = None
    ) -> MutationResult:
        errors: list[BridgeError] = []

        def tx(conn: sqlite3.Connection) -> MutationResult:
            row = conn.execute(f"SELECT {RUN_COLS} FROM runs WHERE run_id=?", (run_id,)).fetchone()
            if row is None:
                raise RunNotFoundError(f"run {run_id} does not exist")
            run = run_row(row)
            open_rows = conn.execute(
                f"SELECT {INT_COLS} FROM interrupts WHERE run_id=? AND status='pending' ORDER BY requested_at",
                (run_id,),
            ).fetchall()
            m = decide(run, [interrupt_row(r) for r in open_rows])
            if m.error is not None:
                errors.append(m.error)
            return self._apply(conn, run, None, m, now_ms, claim)

        result = await self._write(tx)
        if errors:
            raise errors[0]
        return result

    async def reset_owners(self) -> int:
        # Safe only because the lock file guarantees no other server uses this file.
        def tx(conn: sqlite3.Connection) -> int:
            return conn.execute("UPDATE runs SET owner=NULL, lease_until=NULL WHERE owner IS NOT NULL").rowcount

        return await self._write(tx)

    # --- adapters' state and audit ------------------------------------------

    async def kv_put(self, namespace: str, key: str, value: Any, now_ms: int, *, only_if_absent: bool = False) -> bool:
        if has_nul((namespace, key)):
            raise ValidationError("a stored key must not contain U+0000")

        def tx(conn: sqlite3.Connection) -> bool:
            if only_if_absent:
                cur = conn.execute(
                    "INSERT INTO kv(namespace, key, value, updated_at) VALUES(?,?,?,?) ON CONFLICT DO NOTHING",
                    (namespace, key, dumps(value), now_ms),
                )
                return cur.rowcount == 1
            conn.execute(
                "INSERT INTO kv(namespace, key, value, updated_at) VALUES(?,?,?,?) "
                "ON CONFLICT(namespace, key) DO UPDATE SET value=excluded.value, updated_at=excluded.updated_at",
                (namespace, key, dumps(value), now_ms),
            )
            return True

        return await self._write(tx)

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

    async def idempotency_finish(
        self, key_id: str, owner: str, status: int, headers: dict[str, str], body: str
    ) -> bool:
        def tx(conn: sqlite3.Connection) -> bool:
            return (
                conn.execute(
                    "UPDATE idempotency SET status=?, headers=?, body=?, owner=NULL, lease_until=NULL "
                    "WHERE key_id=? AND owner=? AND status IS NULL",
                    (status, dumps(headers), body, key_id, owner),
                ).rowcount
                == 1
            )

        return await self._write(tx)

    async def idempotency_release(self, key_id: str, owner: str) -> None:
        def tx(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM idempotency WHERE key_id=? AND owner=? AND status IS NULL", (key_id, owner))

        await self._write(tx)
