"""How a plan's transaction travels to PostgreSQL: its statements bound on the client, sent in few messages.

Most statements of a write transaction return nothing the plan reads. Sent one
by one, each costs a driver call and a message of its own; here they are bound
on the client (psycopg's adapters quote every value) and queued, and
the queue goes to the server as one multi-statement query when the plan needs
rows, together with the statements that read them, and at ``COMMIT``. A
transaction with no read in it (a new run and its first step) is one message;
one that locks and reads its rows first (an answer and the step it wakes) is
two. Rows are the result sets of the statements that read them, taken in order. The events a
plan inserts wait for the next read or ``COMMIT``, and go in as one ``INSERT`` (an answer's and
those of the step it wakes, together): no statement of a plan between them reads events.

A query of the simple protocol is parsed and planned anew each time, so each
statement with parameters is prepared once per connection (``PREPARE``, in the
message that first needs it) and queued as ``EXECUTE name(values)``, its values
quoted one by one (the statement's text is not parsed again for placeholders).

The simple query protocol runs the statements of one message one after the
other and stops at the first error, which leaves the transaction aborted (it
began with ``BEGIN``, so nothing of it commits); the pool's connection context
rolls it back when the error reaches it.
"""

from __future__ import annotations

import itertools
import re
import weakref
from collections.abc import Sequence
from typing import Any, TypeVar

from psycopg import AsyncClientCursor, AsyncConnection
from psycopg.adapt import Transformer

from openwop_bridge.store.codec import INSERT_EVENT
from openwop_bridge.store.pg_tx import Tx
from openwop_bridge.store.steps import Ahead, Note, Plan, Planned, Recorded, Rows, Sql

T = TypeVar("T")


def returns_rows(text: str) -> bool:
    """Whether a plan's statement answers with rows (the plan reads them before it goes on)."""
    return text.startswith("SELECT") or " RETURNING " in text


#: The statements prepared on each connection (plan text -> name). A rollback may deallocate them
#: all (psycopg does when it had prepared statements of its own), and ``PREPARE`` is not undone by
#: one: after an error on a connection (:func:`forget_prepared`) its next batch first deallocates
#: whatever of ours is still there, and prepares afresh.
_PREPARED: weakref.WeakKeyDictionary[AsyncConnection[Any], dict[str, str]] = weakref.WeakKeyDictionary()
_UNSURE: weakref.WeakSet[AsyncConnection[Any]] = weakref.WeakSet()
_PREFIX = "owb_"
_names = itertools.count()
_PLACEHOLDER = re.compile(r"%s")
#: Multi-row ``INSERT``s up to this many rows are prepared (one statement per row count).
PREPARED_ROWS = 8


def forget_prepared(conn: AsyncConnection[Any]) -> None:
    """An error reached ``conn`` (rolled back as it goes back to the pool): what it has prepared is unknown."""
    _PREPARED.pop(conn, None)
    _UNSURE.add(conn)


def _numbered(text: str) -> str:
    """``text`` with its ``%s`` placeholders numbered ``$1``, ``$2``… (for ``PREPARE``)."""
    count = itertools.count(1)
    return _PLACEHOLDER.sub(lambda _: f"${next(count)}", text)


def _one_row(text: str) -> bool:
    """Whether ``text`` is one parenthesised row of values and nothing else."""
    return text.startswith("(") and text.endswith(")") and text.count("(") == 1


class Batch:
    """Statements bound on the client and queued; sent in one message when rows are wanted (see the module)."""

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self._conn = conn
        self._cur = AsyncClientCursor(conn)
        self._tx = Transformer.from_context(conn)
        #: Text quoted here needs no re-encoding (any other client encoding goes through psycopg).
        self._utf8 = self._tx.encoding == "utf-8"
        self._texts: list[str] = []
        self._prepared = _PREPARED.setdefault(conn, {})
        #: Statements this batch prepares, known to the connection once their message succeeded.
        self._preparing: dict[str, str] = {}
        #: The statements queued whose rows are wanted, by their place in the queue.
        self._reads: dict[int, Sql] = {}
        #: Statements queued ahead (:class:`~openwop_bridge.store.steps.Ahead`), until the plan yields them.
        self._ahead: list[Sql] = []
        #: Rows of statements sent, until the plan asks for them.
        self._rows: list[tuple[Sql, Rows]] = []
        #: Event rows the plan inserted, not queued yet: every one up to the next read or ``COMMIT`` in one ``INSERT``.
        self._events: list[tuple[Any, ...]] = []

    def add(self, text: str, args: Any = None, *, read: Sql | None = None) -> None:
        """Queue a statement (with ``read``, one whose rows :meth:`rows` is asked for later)."""
        if self._events and (read is not None or text == "COMMIT"):
            self._add_events()
        if args:
            literal = self._literal
            text = f"EXECUTE {self._prepare(text)}({','.join([literal(arg) for arg in args])})"
        if read is not None:
            self._reads[len(self._texts)] = read
        self._texts.append(text)

    def _literal(self, value: Any) -> str:
        """``value`` as an SQL literal, quoted by psycopg as :meth:`~psycopg.AsyncClientCursor.mogrify` does
        (written here for the types most values have, in psycopg's own form)."""
        kind = type(value)
        if kind is int:
            # psycopg spaces a negative number apart, lest its sign follow another minus (a comment).
            return str(value) if value >= 0 else f" {value}"
        if value is None:
            return "NULL"
        if kind is bool:
            return "true" if value else "false"
        if kind is str and self._utf8 and "\x00" not in value:
            text: str = value
            # libpq's PQescapeLiteral: quotes doubled; backslashes doubled too, and then an E'' string.
            if "\\" in text:
                return " E'" + text.replace("\\", "\\\\").replace("'", "''") + "'"
            return "'" + text.replace("'", "''") + "'"
        return self._tx.as_literal(value).decode(self._tx.encoding)

    def _prepare(self, text: str) -> str:
        """The name ``text`` is prepared as on this connection (queuing its ``PREPARE`` the first time)."""
        name = self._prepared.get(text) or self._preparing.get(text)
        if name is None:
            name = self._preparing[text] = f"{_PREFIX}{next(_names)}"
            self._texts.append(f"PREPARE {name} AS {_numbered(text)}")
        return name

    def ahead(self, step: Sql) -> None:
        """Queue a statement the plan yields later (it is then not queued again)."""
        self.add_step(step)
        self._ahead.append(step)

    def add_step(self, step: Sql) -> None:
        """Queue a plan's statement, unless it was queued ahead (a ``many`` one as one statement per tuple,
        or one multi-row ``INSERT``)."""
        if step in self._ahead:
            self._ahead.remove(step)
            return
        if step.many and step.text == INSERT_EVENT:
            # Nothing the plan writes in between reads events: an answer's and its step's go in together.
            self._events.extend(step.args)
        elif step.many and step.text.startswith("INSERT ") and _one_row(step.text.rpartition(" VALUES ")[2]):
            self._insert_rows(step.text, step.args)
        elif step.many:
            for args in step.args:
                self.add(step.text, args)
        else:
            self.add(step.text, step.args, read=step if returns_rows(step.text) else None)

    def _insert_rows(self, text: str, rows: Sequence[Any]) -> None:
        """Queue one ``INSERT`` of ``rows``, ``text`` being the statement that inserts one of them."""
        head, _, row = text.rpartition(" VALUES ")
        # A parameter tuple per row, and the statement ends with its row: one INSERT of them all.
        if len(rows) <= PREPARED_ROWS:
            self.add(f"{head} VALUES {','.join([row] * len(rows))}", [a for r in rows for a in r])
        else:
            self._texts.append(f"{head} VALUES {','.join(self._cur.mogrify(row, args) for args in rows)}")

    def _add_events(self) -> None:
        """Queue the event rows inserted since the last read, as one ``INSERT``."""
        rows, self._events = self._events, []
        self._insert_rows(INSERT_EVENT, rows)

    async def rows(self, step: Sql) -> Rows:
        """The rows of ``step``, queued before: sends the queue if they are not here yet."""
        rows = self._take(step)
        if rows is None:
            await self.send()
            rows = self._take(step)
        if rows is None:
            raise RuntimeError(f"rows asked for a statement never queued: {step.text[:80]}")
        return rows

    def _take(self, step: Sql) -> Rows | None:
        for i, (sql, rows) in enumerate(self._rows):
            if sql == step:
                del self._rows[i]
                return rows
        return None

    async def send(self) -> None:
        """Send every queued statement in one message and keep the rows of those that read."""
        if self._events:
            self._add_events()
        texts, reads = self._texts, self._reads
        if not texts:
            return
        self._texts, self._reads = [], {}
        cur = self._cur
        if self._conn in _UNSURE:
            await self._deallocate()
        await cur.execute(";".join(texts))
        self._prepared.update(self._preparing)
        self._preparing = {}
        for i in range(len(texts)):
            if i in reads:
                self._rows.append((reads[i], await cur.fetchall()))
            if i + 1 < len(texts) and not cur.nextset():
                raise RuntimeError(f"PostgreSQL answered {i + 1} of {len(texts)} statements")

    async def _deallocate(self) -> None:
        """Deallocate the statements of ours still prepared on an unsure connection (before this batch's ``BEGIN``)."""
        cur = await self._cur.execute("SELECT name FROM pg_prepared_statements WHERE starts_with(name, %s)", (_PREFIX,))
        found = [name for (name,) in await cur.fetchall()]
        if found:
            await self._cur.execute(";".join(f"DEALLOCATE {name}" for name in found))
        self._prepared.clear()
        _UNSURE.discard(self._conn)


async def run_plan(batch: Batch, tx: Tx, steps: Plan[T]) -> T:
    """Queue a plan's statements in ``batch``; its notes become ``tx``'s order and notices.

    The server is waited for only where the plan reads rows; statements the plan announces
    (:class:`~openwop_bridge.store.steps.Ahead`) travel with the first of them. What is still queued at the
    end goes with ``COMMIT``.
    """
    try:
        step = next(steps)
        while True:
            rows: Rows = []
            if isinstance(step, Ahead):
                batch.ahead(step.sql)
            elif isinstance(step, Planned | Recorded):
                pass  # no planners or record signer here: nothing to write
            elif isinstance(step, Note):
                if step.what == "locked":
                    tx.locked(step.run_id)
                elif step.what == "events":
                    tx.events(step.run_id)
                elif step.what == "deadline":
                    tx.deadline(step.run_id, step.at_ms)
                else:
                    tx.wake(step.run_id, step.owner)
            else:
                batch.add_step(step)
                if not step.many and returns_rows(step.text):
                    rows = await batch.rows(step)
            step = steps.send(rows)
    except StopIteration as done:
        result: T = done.value
        return result
