"""Which turn an answer that names none is for: the one open when the answer arrived.

An answer to a conversation that does not name its turn (no ``turn.messageId``, no
``turn.turnIndex``) is for the turn open when it arrived. Reading the run does not always say
which that was: another answer to that turn may be committing at the same moment, in one
transaction with the step that opens the next turn, and a read made after that commit finds the
next turn, which the answer's sender never saw. That holds for an answer by run-scoped address
as for one by id that a surface (AG-UI, the LangGraph API, MCP) read for its request.

:class:`Arrivals` keeps the answers being applied on this instance and the interrupts they
settled since the oldest of them arrived. An answer that finds a turn settled since it arrived,
by another answer, earlier in the same conversation than the turn it read, is decided on that
earlier turn: the turn open when it arrived, now taken (``409 interrupt_already_resolved``,
nothing changes). An answer counts as having taken its turn once its commit returned here; an
answer arriving after that finds the next prompt and answers it. Answers arriving at different
instances sharing a database are ordered by the database: what one instance reads after
another's commit comes after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from openwop_bridge.core import kinds
from openwop_bridge.core.decisions.exchange import exchange_index
from openwop_bridge.core.records import InterruptRecord


@dataclass(eq=False)
class Answering:
    """One answer being applied on this instance, from its arrival until it returns."""

    #: When it arrived, on the instance's count of arrivals and settles.
    arrived: int
    #: The interrupt it is decided on, once read.
    target: InterruptRecord | None = None
    #: Set when it returned (answered, refused or failed).
    done: asyncio.Event = field(default_factory=asyncio.Event)


def _earlier_turn(before: InterruptRecord, found: InterruptRecord) -> bool:
    """Whether ``before`` is an earlier turn of ``found``'s conversation, at the same address."""
    if before.interrupt_id == found.interrupt_id or (before.run_id, before.node_id) != (found.run_id, found.node_id):
        return False
    if not (kinds.kind_of(before.kind).turn and kinds.kind_of(found.kind).turn):
        return False
    cid = found.payload.get("data", {}).get("conversationId")
    if before.payload.get("data", {}).get("conversationId") != cid:
        return False
    return exchange_index(before) < exchange_index(found)


class Arrivals:
    """The answers being applied on this instance (see the module docstring)."""

    def __init__(self) -> None:
        self._ticks = itertools.count()
        #: Every answer in flight, oldest arrival first.
        self._in_flight: dict[Answering, None] = {}
        #: The answers in flight that read their interrupt, by run.
        self._targeting: dict[str, set[Answering]] = {}
        #: ``(tick, interrupt as its answer read it)`` of each interrupt settled since the oldest arrival in flight.
        self._settled: deque[tuple[int, InterruptRecord]] = deque()

    @contextlib.contextmanager
    def answering(self) -> Iterator[Answering]:
        """An answer arriving now, until it returns. Enter it before the answer reads anything."""
        me = Answering(next(self._ticks))
        self._in_flight[me] = None
        try:
            yield me
        finally:
            me.done.set()
            del self._in_flight[me]
            if me.target is not None:
                self._untarget(me, me.target.run_id)
            oldest = next(iter(self._in_flight), None)
            while self._settled and (oldest is None or self._settled[0][0] < oldest.arrived):
                self._settled.popleft()

    def targets(self, me: Answering, record: InterruptRecord) -> None:
        """``me`` is decided on ``record`` (as read): call it before the answer commits."""
        if me.target is not None:
            self._untarget(me, me.target.run_id)
        me.target = record
        self._targeting.setdefault(record.run_id, set()).add(me)

    def settled(self, me: Answering) -> None:
        """``me``'s commit returned: it settled the interrupt it targets."""
        assert me.target is not None
        self._settled.append((next(self._ticks), me.target))

    async def open_when_arrived(self, me: Answering, found: InterruptRecord) -> InterruptRecord | None:
        """The turn open when ``me`` arrived, if an answer settled it since and ``found`` (the turn
        ``me`` read) came after it; None when ``found`` was already open then."""
        # Answers that read an earlier turn open and may still settle it: their commit may be the one
        # ``me`` read. An answer yet to read, or reading now, commits after ``me``'s read.
        for other in list(self._targeting.get(found.run_id, ())):
            if (
                other is not me
                and other.target is not None
                and other.target.open
                and _earlier_turn(other.target, found)
            ):
                await other.done.wait()
        taken = [record for tick, record in self._settled if tick > me.arrived and _earlier_turn(record, found)]
        return min(taken, key=exchange_index) if taken else None

    def _untarget(self, me: Answering, run_id: str) -> None:
        answering = self._targeting.get(run_id)
        if answering is not None:
            answering.discard(me)
            if not answering:
                del self._targeting[run_id]
