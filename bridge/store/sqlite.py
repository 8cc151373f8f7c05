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
import base64
import fcntl
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import orjson

from bridge.errors import BridgeError, InterruptNotFoundError, RunNotFoundError, StaleOwnerError
from bridge.events import EventDraft
from bridge.store.base import (
    CommitResult,
    InboxPage,
    InterruptDecision,
    InterruptRecord,
    Mutation,
    MutationResult,
    RunCommit,
    RunDecision,
    RunRecord,
)
from bridge.store.migrations import SQLITE_MIGRATIONS, check_version

T = TypeVar("T")

_RUN_COLS = (
    "run_id, tenant, workflow_id, status, created_at, updated_at, spec, state, parent_run_id, "
    "parent_node_id, parent_visit, child_ordinal, completed_at, next_seq, owner, lease_until, epoch, "
    "wake, needs_work, control"
)
_INT_COLS = (
    "interrupt_id, run_id, tenant, workflow_id, node_id, exec_node, visit, ordinal, key, kind, status, "
    "payload, requested_at, deadline, resolved_at, consumed, resolution, state, requested_seq"
)


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode("utf-8")


def _loads(text: str | bytes | None) -> Any:
    return None if text is None else orjson.loads(text)


def _run(row: Sequence[Any]) -> RunRecord:
    return RunRecord(
        run_id=row[0],
        tenant=row[1],
        workflow_id=row[2],
        status=row[3],
        created_at_ms=row[4],
        updated_at_ms=row[5],
        spec=_loads(row[6]),
        state=_loads(row[7]),
        parent_run_id=row[8],
        parent_node_id=row[9],
        parent_visit=row[10],
        child_ordinal=row[11],
        completed_at_ms=row[12],
        next_seq=row[13],
        owner=row[14],
        lease_until_ms=row[15],
        epoch=row[16],
        wake=row[17],
        needs_work=bool(row[18]),
        control=_loads(row[19]),
    )


def _interrupt(row: Sequence[Any]) -> InterruptRecord:
    return InterruptRecord(
        interrupt_id=row[0],
        run_id=row[1],
        tenant=row[2],
        workflow_id=row[3],
        node_id=row[4],
        exec_node=row[5],
        visit=row[6],
        ordinal=row[7],
        key=row[8],
        kind=row[9],
        status=row[10],
        payload=_loads(row[11]),
        requested_at_ms=row[12],
        deadline_ms=row[13],
        resolved_at_ms=row[14],
        consumed=bool(row[15]),
        resolution=_loads(row[16]),
        state=_loads(row[17]) or {},
        requested_seq=row[18],
    )


def encode_cursor(*parts: Any) -> str:
    """An opaque pagination cursor."""
    return base64.urlsafe_b64encode(orjson.dumps(list(parts))).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> list[Any]:
    """The parts of a cursor made by :func:`encode_cursor`."""
    from bridge.errors import ValidationError

    try:
        parts = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, orjson.JSONDecodeError) as exc:
        raise ValidationError("malformed cursor") from exc
    if not isinstance(parts, list):
        raise ValidationError("malformed cursor")
    return parts


def _connect(path: str, synchronous: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("PRAGMA busy_timeout=10000")
    conn.execute("PRAGMA foreign_keys=OFF")
    return conn


class _Writer(threading.Thread):
    """Runs queued transaction functions, several per commit."""

    def __init__(self, path: str, synchronous: str, loop: asyncio.AbstractEventLoop, batch: int) -> None:
        super().__init__(name="openwop-bridge-sqlite-writer", daemon=True)
        self._path = path
        self._sync = synchronous
        self._loop = loop
        self._batch = batch
        self._queue: queue.SimpleQueue[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]] | None] = (
            queue.SimpleQueue()
        )
        self.ready = threading.Event()
        self.error: BaseException | None = None

    def submit(self, fn: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        fut: asyncio.Future[T] = self._loop.create_future()
        self._queue.put((fn, fut))
        return fut

    def stop(self) -> None:
        self._queue.put(None)

    @staticmethod
    def _settle(fut: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
        if fut.cancelled():
            return
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(value)

    def run(self) -> None:
        try:
            conn = _connect(self._path, self._sync)
        except BaseException as exc:  # reported by open()
            self.error = exc
            self.ready.set()
            return
        self.ready.set()
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is None:
                break
            batch = [first]
            while len(batch) < self._batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stopping = True
                    break
                batch.append(nxt)
            outcomes: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
            try:
                conn.execute("BEGIN IMMEDIATE")
                for fn, fut in batch:
                    conn.execute("SAVEPOINT tx")
                    try:
                        value = fn(conn)
                    except BaseException as exc:
                        conn.execute("ROLLBACK TO tx")
                        conn.execute("RELEASE tx")
                        outcomes.append((fut, None, exc))
                    else:
                        conn.execute("RELEASE tx")
                        outcomes.append((fut, value, None))
                conn.execute("COMMIT")
            except BaseException as exc:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                outcomes = [(fut, None, exc) for _, fut in batch]
            for fut, value, error in outcomes:
                self._loop.call_soon_threadsafe(self._settle, fut, value, error)
        conn.close()


class SqliteStore:
    """The :class:`~bridge.store.base.Store` on one SQLite file."""

    def __init__(self, path: str | Path, *, synchronous: str = "FULL", batch: int = 64) -> None:
        self.path = str(path)
        self._sync = synchronous
        self._batch = batch
        self._writer: _Writer | None = None
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
        self._writer = _Writer(self.path, self._sync, loop, self._batch)
        self._writer.start()
        await asyncio.to_thread(self._writer.ready.wait)
        if self._writer.error is not None:
            raise self._writer.error
        await self._write(self._migrate)
        self._reader = _connect(self.path, self._sync)

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

    def _read(self) -> sqlite3.Connection:
        assert self._reader is not None, "store is not open"
        return self._reader

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
        conn.execute(
            f"INSERT INTO runs({_RUN_COLS}) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run.run_id,
                run.tenant,
                run.workflow_id,
                run.status,
                run.created_at_ms,
                run.updated_at_ms,
                _dumps(run.spec),
                _dumps(run.state),
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
                _dumps(run.control) if run.control else None,
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
                    _dumps(doc),
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
        row = self._read().execute(f"SELECT {_RUN_COLS} FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return _run(row) if row else None

    async def claim_run(self, run_id: str, owner: str, now_ms: int, lease_ms: int) -> RunRecord | None:
        def tx(conn: sqlite3.Connection) -> RunRecord | None:
            row = conn.execute(
                f"UPDATE runs SET owner=?, lease_until=?, epoch=epoch+1 WHERE run_id=? "
                f"AND status NOT IN ('completed','failed','cancelled') "
                f"AND (owner IS NULL OR owner=? OR lease_until < ?) RETURNING {_RUN_COLS}",
                (owner, now_ms + lease_ms, run_id, owner, now_ms),
            ).fetchone()
            return _run(row) if row else None

        return await self._write(tx)

    async def renew_leases(self, owner: str, now_ms: int, lease_ms: int) -> int:
        def tx(conn: sqlite3.Connection) -> int:
            return conn.execute("UPDATE runs SET lease_until=? WHERE owner=?", (now_ms + lease_ms, owner)).rowcount

        return await self._write(tx)

    def _insert_interrupt(self, conn: sqlite3.Connection, i: InterruptRecord) -> None:
        conn.execute(
            f"INSERT INTO interrupts({_INT_COLS}) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
                _dumps(i.payload),
                i.requested_at_ms,
                i.deadline_ms,
                i.resolved_at_ms,
                int(i.consumed),
                _dumps(i.resolution) if i.resolution is not None else None,
                _dumps(i.state) if i.state else None,
                i.requested_seq,
            ),
        )

    async def commit(self, commit: RunCommit) -> CommitResult:
        def tx(conn: sqlite3.Connection) -> CommitResult:
            row = conn.execute(
                "SELECT owner, epoch, next_seq, wake FROM runs WHERE run_id=?", (commit.run_id,)
            ).fetchone()
            if row is None:
                raise RunNotFoundError(f"run {commit.run_id} does not exist")
            if row[0] != commit.owner or row[1] != commit.epoch:
                raise StaleOwnerError(f"run {commit.run_id} is owned by another executor")
            docs = self._append(conn, commit.run_id, row[2], commit.events)
            by_event = {d["eventId"]: d["sequence"] for d in docs}
            for intr in commit.new_interrupts:
                if intr.requested_seq is None and intr.requested_event_id in by_event:
                    intr.requested_seq = by_event[intr.requested_event_id]
                self._insert_interrupt(conn, intr)
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
                args.append(_dumps(commit.state))
            if commit.status is not None:
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
        self, conn: sqlite3.Connection, run: RunRecord, intr: InterruptRecord | None, m: Mutation, now_ms: int
    ) -> MutationResult:
        if intr is not None and (m.interrupt_status or m.interrupt_state is not None or m.resolution is not None):
            conn.execute(
                "UPDATE interrupts SET status=COALESCE(?, status), state=COALESCE(?, state), "
                "resolution=COALESCE(?, resolution), resolved_at=COALESCE(?, resolved_at) WHERE interrupt_id=?",
                (
                    m.interrupt_status,
                    _dumps(m.interrupt_state) if m.interrupt_state is not None else None,
                    _dumps(m.resolution) if m.resolution is not None else None,
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
                    _dumps(m.control) if m.control is not None else None,
                    now_ms,
                    run.run_id,
                ),
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
                    _dumps(entry.get("details", {})),
                ),
            )
        after_run = _run(conn.execute(f"SELECT {_RUN_COLS} FROM runs WHERE run_id=?", (run.run_id,)).fetchone())
        after_int = None
        if intr is not None:
            after_int = _interrupt(
                conn.execute(
                    f"SELECT {_INT_COLS} FROM interrupts WHERE interrupt_id=?", (intr.interrupt_id,)
                ).fetchone()
            )
        return MutationResult(docs, after_run, after_int, m.result)

    async def mutate_interrupt(
        self,
        decide: InterruptDecision,
        now_ms: int,
        *,
        interrupt_id: str | None = None,
        run_id: str | None = None,
        node_id: str | None = None,
    ) -> MutationResult:
        errors: list[BridgeError] = []

        def tx(conn: sqlite3.Connection) -> MutationResult:
            if interrupt_id is not None:
                row = conn.execute(
                    f"SELECT {_INT_COLS} FROM interrupts WHERE interrupt_id=?", (interrupt_id,)
                ).fetchone()
            else:
                row = conn.execute(
                    f"SELECT {_INT_COLS} FROM interrupts WHERE run_id=? AND node_id=? "
                    "ORDER BY requested_at DESC, ordinal DESC LIMIT 1",
                    (run_id, node_id),
                ).fetchone()
            if row is None:
                raise InterruptNotFoundError("no interrupt at this address")
            intr = _interrupt(row)
            run = _run(conn.execute(f"SELECT {_RUN_COLS} FROM runs WHERE run_id=?", (intr.run_id,)).fetchone())
            m = decide(intr, run)
            if m.error is not None:
                errors.append(m.error)
            return self._apply(conn, run, intr, m, now_ms)

        result = await self._write(tx)
        if errors:
            raise errors[0]
        return result

    async def mutate_run(self, run_id: str, decide: RunDecision, now_ms: int) -> MutationResult:
        errors: list[BridgeError] = []

        def tx(conn: sqlite3.Connection) -> MutationResult:
            row = conn.execute(f"SELECT {_RUN_COLS} FROM runs WHERE run_id=?", (run_id,)).fetchone()
            if row is None:
                raise RunNotFoundError(f"run {run_id} does not exist")
            run = _run(row)
            open_rows = conn.execute(
                f"SELECT {_INT_COLS} FROM interrupts WHERE run_id=? AND status='pending' ORDER BY requested_at",
                (run_id,),
            ).fetchall()
            m = decide(run, [_interrupt(r) for r in open_rows])
            if m.error is not None:
                errors.append(m.error)
            return self._apply(conn, run, None, m, now_ms)

        result = await self._write(tx)
        if errors:
            raise errors[0]
        return result

    async def runs_needing_work(self, now_ms: int, limit: int = 500) -> list[str]:
        rows = (
            self._read()
            .execute(
                "SELECT run_id FROM runs WHERE needs_work=1 AND (owner IS NULL OR lease_until < ?) "
                "ORDER BY updated_at LIMIT ?",
                (now_ms, limit),
            )
            .fetchall()
        )
        return [r[0] for r in rows]

    async def child_runs(self, parent_run_id: str) -> list[RunRecord]:
        rows = (
            self._read()
            .execute(
                f"SELECT {_RUN_COLS} FROM runs WHERE parent_run_id=? ORDER BY created_at, child_ordinal",
                (parent_run_id,),
            )
            .fetchall()
        )
        return [_run(r) for r in rows]

    async def find_child(self, parent_run_id: str, node_id: str, visit: int, ordinal: int) -> str | None:
        row = (
            self._read()
            .execute(
                "SELECT run_id FROM runs WHERE parent_run_id=? AND parent_node_id=? "
                "AND parent_visit=? AND child_ordinal=?",
                (parent_run_id, node_id, visit, ordinal),
            )
            .fetchone()
        )
        return row[0] if row else None

    async def reset_owners(self) -> int:
        # Safe only because the lock file guarantees no other server uses this file.
        def tx(conn: sqlite3.Connection) -> int:
            return conn.execute("UPDATE runs SET owner=NULL, lease_until=NULL WHERE owner IS NOT NULL").rowcount

        return await self._write(tx)

    async def list_runs(
        self, tenant: str, *, workflow_id: str | None, status: str | None, limit: int, cursor: str | None
    ) -> tuple[list[RunRecord], str | None]:
        where = ["tenant=?"]
        args: list[Any] = [tenant]
        if workflow_id:
            where.append("workflow_id=?")
            args.append(workflow_id)
        if status:
            where.append("status=?")
            args.append(status)
        if cursor:
            created, rid = decode_cursor(cursor)
            where.append("(created_at < ? OR (created_at = ? AND run_id < ?))")
            args += [created, created, rid]
        rows = (
            self._read()
            .execute(
                f"SELECT {_RUN_COLS} FROM runs WHERE {' AND '.join(where)} "
                "ORDER BY created_at DESC, run_id DESC LIMIT ?",
                (*args, limit + 1),
            )
            .fetchall()
        )
        runs = [_run(r) for r in rows[:limit]]
        nxt = encode_cursor(runs[-1].created_at_ms, runs[-1].run_id) if len(rows) > limit else None
        return runs, nxt

    # --- events -------------------------------------------------------------

    async def read_events(self, run_id: str, after_seq: int = -1, limit: int = 1000) -> list[dict[str, Any]]:
        rows = (
            self._read()
            .execute("SELECT doc FROM events WHERE run_id=? AND seq>? ORDER BY seq LIMIT ?", (run_id, after_seq, limit))
            .fetchall()
        )
        return [orjson.loads(r[0]) for r in rows]

    async def activation_events(self, run_id: str, node_id: str, visit: int) -> list[dict[str, Any]]:
        rows = (
            self._read()
            .execute(
                "SELECT doc FROM events WHERE run_id=? AND node_id=? AND visit=? AND cmd IS NOT NULL ORDER BY cmd",
                (run_id, node_id, visit),
            )
            .fetchall()
        )
        return [orjson.loads(r[0]) for r in rows]

    async def events_of_types(self, run_id: str, types: Sequence[str]) -> list[dict[str, Any]]:
        marks = ",".join("?" for _ in types)
        rows = (
            self._read()
            .execute(f"SELECT doc FROM events WHERE run_id=? AND type IN ({marks}) ORDER BY seq", (run_id, *types))
            .fetchall()
        )
        return [orjson.loads(r[0]) for r in rows]

    # --- interrupts ---------------------------------------------------------

    async def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        row = (
            self._read().execute(f"SELECT {_INT_COLS} FROM interrupts WHERE interrupt_id=?", (interrupt_id,)).fetchone()
        )
        return _interrupt(row) if row else None

    async def interrupt_at(self, run_id: str, node_id: str) -> InterruptRecord | None:
        row = (
            self._read()
            .execute(
                f"SELECT {_INT_COLS} FROM interrupts WHERE run_id=? AND node_id=? "
                "ORDER BY requested_at DESC, ordinal DESC LIMIT 1",
                (run_id, node_id),
            )
            .fetchone()
        )
        return _interrupt(row) if row else None

    async def interrupt_by_key(self, run_id: str, key: str) -> InterruptRecord | None:
        row = (
            self._read()
            .execute(f"SELECT {_INT_COLS} FROM interrupts WHERE run_id=? AND key=?", (run_id, key))
            .fetchone()
        )
        return _interrupt(row) if row else None

    async def interrupt_at_slot(self, run_id: str, exec_node: str, visit: int, ordinal: int) -> InterruptRecord | None:
        row = (
            self._read()
            .execute(
                f"SELECT {_INT_COLS} FROM interrupts WHERE run_id=? AND exec_node=? AND visit=? AND ordinal=?",
                (run_id, exec_node, visit, ordinal),
            )
            .fetchone()
        )
        return _interrupt(row) if row else None

    async def node_interrupts(self, run_id: str, exec_node: str) -> list[InterruptRecord]:
        rows = (
            self._read()
            .execute(
                f"SELECT {_INT_COLS} FROM interrupts WHERE run_id=? AND exec_node=? ORDER BY visit, ordinal",
                (run_id, exec_node),
            )
            .fetchall()
        )
        return [_interrupt(r) for r in rows]

    async def run_interrupts(self, run_id: str, *, open_only: bool) -> list[InterruptRecord]:
        sql = f"SELECT {_INT_COLS} FROM interrupts WHERE run_id=?"
        if open_only:
            sql += " AND status='pending'"
        rows = self._read().execute(sql + " ORDER BY requested_at, ordinal", (run_id,)).fetchall()
        return [_interrupt(r) for r in rows]

    async def unconsumed(self, run_id: str) -> list[InterruptRecord]:
        rows = (
            self._read()
            .execute(
                f"SELECT {_INT_COLS} FROM interrupts WHERE run_id=? AND consumed=0 AND status!='pending' "
                "ORDER BY requested_at",
                (run_id,),
            )
            .fetchall()
        )
        return [_interrupt(r) for r in rows]

    async def inbox(self, tenant: str, *, kind: str | None, status: str, limit: int, cursor: str | None) -> InboxPage:
        where = ["tenant=?", "status=?"]
        args: list[Any] = [tenant, status]
        if kind:
            where.append("kind=?")
            args.append(kind)
        else:
            where.append("kind NOT IN ('conversation.start','conversation.close')")
        if cursor:
            at, iid = decode_cursor(cursor)
            where.append("(requested_at > ? OR (requested_at = ? AND interrupt_id > ?))")
            args += [at, at, iid]
        rows = (
            self._read()
            .execute(
                f"SELECT {_INT_COLS} FROM interrupts WHERE {' AND '.join(where)} "
                "ORDER BY requested_at, interrupt_id LIMIT ?",
                (*args, limit + 1),
            )
            .fetchall()
        )
        items = [_interrupt(r) for r in rows[:limit]]
        nxt = encode_cursor(items[-1].requested_at_ms, items[-1].interrupt_id) if len(rows) > limit else None
        return InboxPage(items, nxt)

    async def next_deadline(self) -> int | None:
        row = (
            self._read()
            .execute("SELECT MIN(deadline) FROM interrupts WHERE status='pending' AND deadline IS NOT NULL")
            .fetchone()
        )
        return int(row[0]) if row and row[0] is not None else None

    async def due_interrupts(self, now_ms: int, limit: int = 200) -> list[str]:
        rows = (
            self._read()
            .execute(
                "SELECT interrupt_id FROM interrupts WHERE status='pending' AND deadline IS NOT NULL "
                "AND deadline <= ? ORDER BY deadline LIMIT ?",
                (now_ms, limit),
            )
            .fetchall()
        )
        return [r[0] for r in rows]

    # --- adapters' state and audit ------------------------------------------

    async def kv_get(self, namespace: str, key: str) -> Any:
        row = self._read().execute("SELECT value FROM kv WHERE namespace=? AND key=?", (namespace, key)).fetchone()
        return orjson.loads(row[0]) if row else None

    async def kv_put(self, namespace: str, key: str, value: Any, now_ms: int, *, only_if_absent: bool = False) -> bool:
        def tx(conn: sqlite3.Connection) -> bool:
            if only_if_absent:
                cur = conn.execute(
                    "INSERT INTO kv(namespace, key, value, updated_at) VALUES(?,?,?,?) ON CONFLICT DO NOTHING",
                    (namespace, key, _dumps(value), now_ms),
                )
                return cur.rowcount == 1
            conn.execute(
                "INSERT INTO kv(namespace, key, value, updated_at) VALUES(?,?,?,?) "
                "ON CONFLICT(namespace, key) DO UPDATE SET value=excluded.value, updated_at=excluded.updated_at",
                (namespace, key, _dumps(value), now_ms),
            )
            return True

        return await self._write(tx)

    async def audit(self, run_id: str) -> list[dict[str, Any]]:
        rows = (
            self._read()
            .execute("SELECT at, principal, action, resource, details FROM audit WHERE run_id=? ORDER BY id", (run_id,))
            .fetchall()
        )
        return [
            {"at": r[0], "principal": r[1], "action": r[2], "resource": r[3], "details": orjson.loads(r[4])}
            for r in rows
        ]
