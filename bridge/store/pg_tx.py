"""Transaction plumbing of the PostgreSQL store: return order, notices, lost cancellations.

Nothing here touches the database; :mod:`openwop_bridge.store.postgres` runs the
transactions and uses these to keep SQLite's guarantees on many connections.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit, urlunsplit

from openwop_bridge.store import pg_sql as q


def reraise_lost_cancellation() -> None:
    """Raise the cancellation a pool checkout may have swallowed.

    The pool waits for a free connection with ``asyncio.wait_for``, which on
    Python 3.11 drops a cancellation arriving just as a connection is handed
    over; the task would then carry on as if never cancelled (and, e.g., an
    engine stopping would wait for it forever). ``Task.cancelling()`` still
    remembers the request.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class ReturnOrder:
    """Callers of transactions on one run resume in the order those held the run's row lock.

    The engine counts on it (SQLite's single writer gives it for free): when an
    executor's release commits before an answer, the executor has left the
    registry by the time the answer's caller looks, so the answer starts a new
    executor instead of notifying one that is exiting. Transactions on separate
    connections finish in any order, so each one takes a ticket per run as its
    row lock is granted, and returns only once every earlier ticket's caller
    has resumed. Ordering is per instance; other instances learn of commits
    through notices, which the database delivers in commit order.
    """

    def __init__(self) -> None:
        self._runs: dict[str, dict[int, asyncio.Future[None] | None]] = {}
        self._next = 0

    def take(self, run_id: str) -> int:
        """A ticket behind every transaction that locked ``run_id`` before."""
        self._next += 1
        self._runs.setdefault(run_id, {})[self._next] = None
        return self._next

    async def turn(self, run_id: str, ticket: int) -> None:
        """Wait until every earlier ticket of ``run_id`` is done."""
        queue = self._runs[run_id]
        if next(iter(queue)) != ticket:
            waiter = asyncio.get_running_loop().create_future()
            queue[ticket] = waiter
            await waiter

    def done(self, run_id: str, ticket: int) -> None:
        """Let the next ticket of ``run_id`` go; its caller resumes after ours."""
        queue = self._runs[run_id]
        del queue[ticket]
        if not queue:
            del self._runs[run_id]
            return
        waiter = queue[next(iter(queue))]
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class Tx:
    """What a transaction leaves besides its rows: notices to send, and its place in each run's order."""

    def __init__(self, order: ReturnOrder, *, held_back: bool = False) -> None:
        self.outbox = q.Outbox()
        self.tickets: list[tuple[str, int]] = []
        self._order = order
        #: With ``held_back``, the runs noted locked before the server granted the locks (see :meth:`granted`).
        self._noted: list[str] | None = [] if held_back else None

    def locked(self, run_id: str) -> None:
        """The row of ``run_id`` is now locked by this transaction (once per run is enough)."""
        if self._noted is not None:
            self._noted.append(run_id)
        elif all(held != run_id for held, _ in self.tickets):
            self.tickets.append((run_id, self._order.take(run_id)))

    def granted(self) -> None:
        """The transaction's messages were answered: every lock noted is held, and takes its ticket now.

        A plan whose locks are taken in the same message as its writes notes them as it queues them,
        before the server granted them; its tickets wait for the answer, or a transaction that held a
        lock before this one could be given a later ticket.
        """
        noted, self._noted = self._noted, None
        for run_id in noted or ():
            self.locked(run_id)

    def events(self, run_id: str) -> None:
        """Events of ``run_id`` were appended."""
        self.outbox.events(run_id)

    def wake(self, run_id: str, owner: str | None) -> None:
        """``run_id`` was woken; its owner, if any, is told."""
        self.outbox.wake(run_id, owner)

    def deadline(self, run_id: str, at_ms: int | None) -> None:
        """A deadline of ``run_id`` was written: every instance's timer is told."""
        self.outbox.deadline(run_id, at_ms)

    def release(self) -> None:
        """Give up every ticket: the caller is about to resume, or the transaction failed."""
        for run_id, ticket in self.tickets:
            self._order.done(run_id, ticket)
        self.tickets = []


def redact(url: str) -> str:
    """The URL without its password, for logs and messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://…"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))
