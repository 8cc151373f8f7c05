"""The SQLite writer thread: queued transactions, several per commit (group commit).

Each queued function runs inside its own savepoint of one ``BEGIN IMMEDIATE``
transaction, so one failing does not undo the others; the group is committed
(and, with ``synchronous=FULL``, fsynced) once. Futures are resolved on the
event loop in commit order.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from bridge.store.codec import SQLITE
from bridge.store.plan import Plan, Rows, Sql

T = TypeVar("T")


def connect(path: str, synchronous: str) -> sqlite3.Connection:
    """A connection in WAL mode with the store's durability and busy timeout."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("PRAGMA busy_timeout=10000")
    conn.execute("PRAGMA foreign_keys=OFF")
    return conn


class Writer(threading.Thread):
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
        #: COMMITs that reached the disk (one per group of queued transactions).
        self.commits = 0

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
            conn = connect(self._path, self._sync)
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
                self.commits += 1
            except BaseException as exc:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                outcomes = [(fut, None, exc) for _, fut in batch]
            for fut, value, error in outcomes:
                self._loop.call_soon_threadsafe(self._settle, fut, value, error)
        conn.close()


def run_plan(conn: sqlite3.Connection, steps: Plan[T]) -> T:
    """Run a plan's statements on the writer's connection; its notes need nothing here (one writer)."""
    try:
        step = next(steps)
        while True:
            rows: Rows = []
            if isinstance(step, Sql):
                sql = SQLITE.sql(step.text)
                if step.many:
                    conn.executemany(sql, step.args)
                else:
                    rows = conn.execute(sql, step.args).fetchall()
            step = steps.send(rows)
    except StopIteration as done:
        result: T = done.value
        return result
