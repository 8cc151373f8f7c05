"""The SQLite writer thread: queued transactions, several per commit (group commit).

Each queued function runs inside its own savepoint of one ``BEGIN IMMEDIATE``
transaction, so one failing does not undo the others; the group is committed
(and, with ``synchronous=FULL``, fsynced) once. A function alone in its
transaction needs no savepoint: if it fails, the transaction is rolled back.
Futures are resolved on the event loop in commit order, a group's all in one
call (one wake-up of the loop per commit).
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from openwop_bridge.store.codec import SQLITE
from openwop_bridge.store.steps import Plan, Sql

T = TypeVar("T")
Outcome = asyncio.Future[Any]
#: A queued transaction function and the future its outcome settles.
Queued = tuple[Callable[[sqlite3.Connection], Any], Outcome]
#: A future, and the value or the error to settle it with.
Settled = tuple[Outcome, Any, BaseException | None]


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
        self._queue: queue.SimpleQueue[Queued | None] = queue.SimpleQueue()
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
    def _settle(outcomes: list[Settled]) -> None:
        """Settle a committed group's futures, in commit order (on the event loop)."""
        for fut, value, error in outcomes:
            if fut.cancelled():
                continue
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(value)

    def _alone(self, conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], Any], fut: Outcome) -> list[Settled]:
        """One transaction function alone in its transaction: if it fails, the transaction is rolled back."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            value = fn(conn)
        except BaseException as exc:
            if conn.in_transaction:  # some errors end the transaction themselves
                conn.execute("ROLLBACK")
            return [(fut, None, exc)]
        conn.execute("COMMIT")
        self.commits += 1
        return [(fut, value, None)]

    def _group(self, conn: sqlite3.Connection, batch: list[Queued]) -> list[Settled]:
        """Several transaction functions, each in its own savepoint of one transaction."""
        outcomes: list[Settled] = []
        conn.execute("BEGIN IMMEDIATE")
        for fn, fut in batch:
            conn.execute("SAVEPOINT tx")
            try:
                value = fn(conn)
            except BaseException as exc:
                conn.execute("ROLLBACK TO tx")
                conn.execute("RELEASE tx")
                outcomes.append((fut, None, exc))
            else:  # released at once: each open savepoint makes every page written after it cost more
                conn.execute("RELEASE tx")
                outcomes.append((fut, value, None))
        conn.execute("COMMIT")
        self.commits += 1
        return outcomes

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
            try:
                outcomes = self._alone(conn, *batch[0]) if len(batch) == 1 else self._group(conn, batch)
            except BaseException as exc:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                outcomes = [(fut, None, exc) for _, fut in batch]
            self._loop.call_soon_threadsafe(self._settle, outcomes)
        conn.close()


#: SQLite's text of each neutral statement run so far (plans build few distinct texts).
_TEXTS: dict[str, str] = {}
_TEXTS_MAX = 1024


def _text(neutral: str) -> str:
    """SQLite's text of a neutral statement, translated once."""
    text = _TEXTS.get(neutral)
    if text is None:
        text = SQLITE.sql(neutral)
        if len(_TEXTS) >= _TEXTS_MAX:
            _TEXTS.clear()
        _TEXTS[neutral] = text
    return text


def run_plan(conn: sqlite3.Connection, steps: Plan[T]) -> T:
    """Run a plan's statements on the writer's connection; its notes need nothing here (one writer)."""
    try:
        step = next(steps)
        while True:
            if type(step) is Sql:
                if step.many:
                    conn.executemany(_text(step.text), step.args)
                    step = steps.send([])
                else:
                    step = steps.send(conn.execute(_text(step.text), step.args).fetchall())
            else:  # notes and announcements: nothing to run here
                step = steps.send([])
    except StopIteration as done:
        result: T = done.value
        return result
