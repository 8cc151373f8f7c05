"""Which turn an answer that names none is for: the one open when the answer arrived.

An answer posted to a conversation's run-scoped address without naming its turn (no
``turn.messageId``, no ``turn.turnIndex``) is for the turn open when it arrived. Reading the
address does not always say which that was: another answer to that turn may be committing at
the same moment, in one transaction with the step that opens the next turn, and a read made
after that commit finds the next turn, which the answer's sender never saw.

:class:`Arrivals` keeps, per run, the answers being applied on this instance and, while an
answer by address is in flight, the interrupts answers settled. An answer by address that finds
a turn at its address settled since it arrived, by another answer, earlier in the same
conversation than the turn it read, is decided on that earlier turn: the turn open when it
arrived, now taken (``409 interrupt_already_resolved``, nothing changes). An answer counts as
having taken its turn once its commit returned here; an answer arriving after that finds the
next prompt and answers it. Answers arriving at different instances sharing a database are
ordered by the database: what one instance reads after another's commit comes after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from bridge.core import kinds
from bridge.core.decisions.exchange import exchange_index
from bridge.core.records import InterruptRecord


@dataclass(eq=False)
class Answering:
    """One answer being applied on this instance, from its arrival until it returns."""

    #: When it arrived, on the instance's count of arrivals and settles.
    arrived: int
    #: The run whose address it was posted to (None for an answer to an interrupt by id or link).
    address_run: str | None = None
    #: The interrupt it is decided on, once read.
    target: InterruptRecord | None = None
    #: Set when it returned (answered, refused or failed).
    done: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(eq=False)
class _RunAnswers:
    """The answers to one run in flight here, and what they settled while an answer by address waited."""

    answering: set[Answering] = field(default_factory=set)
    by_address: int = 0
    #: ``(tick, interrupt as its answer read it)`` of each interrupt an answer settled.
    settled: list[tuple[int, InterruptRecord]] = field(default_factory=list)


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
        self._runs: dict[str, _RunAnswers] = {}
        self._ticks = itertools.count()

    @contextlib.contextmanager
    def answering(self, address_run: str | None = None) -> Iterator[Answering]:
        """An answer arriving now, until it returns; ``address_run`` is the run of its address, if it has one.

        Enter it before the answer reads anything.
        """
        me = Answering(next(self._ticks), address_run)
        if address_run is not None:
            self._runs.setdefault(address_run, _RunAnswers()).by_address += 1
        try:
            yield me
        finally:
            me.done.set()
            runs = set()
            if me.target is not None:
                self._runs[me.target.run_id].answering.discard(me)
                runs.add(me.target.run_id)
            if address_run is not None:
                self._runs[address_run].by_address -= 1
                runs.add(address_run)
            for run_id in runs:
                self._forget(run_id)

    def targets(self, me: Answering, record: InterruptRecord) -> None:
        """``me`` is decided on ``record`` (as read): call it before the answer commits."""
        if me.target is not None:
            self._runs[me.target.run_id].answering.discard(me)
            self._forget(me.target.run_id)
        me.target = record
        self._runs.setdefault(record.run_id, _RunAnswers()).answering.add(me)

    def settled(self, me: Answering) -> None:
        """``me``'s commit returned: it settled the interrupt it targets."""
        assert me.target is not None
        self._runs[me.target.run_id].settled.append((next(self._ticks), me.target))

    async def open_when_arrived(self, me: Answering, found: InterruptRecord) -> InterruptRecord | None:
        """The turn open when ``me`` arrived, if an answer settled it since and ``found`` (the turn
        ``me`` read at its address) came after it; None when ``found`` was already open then."""
        run = self._runs.get(found.run_id)
        if run is None:
            return None
        # Answers that read an earlier turn open and may still settle it: their commit may be the one
        # ``me`` read. An answer yet to read, or reading now, commits after ``me``'s read.
        for other in [a for a in run.answering if a is not me and a.target is not None]:
            if other.target is not None and other.target.open and _earlier_turn(other.target, found):
                await other.done.wait()
        taken = [record for tick, record in run.settled if tick > me.arrived and _earlier_turn(record, found)]
        return min(taken, key=exchange_index) if taken else None

    def _forget(self, run_id: str) -> None:
        run = self._runs.get(run_id)
        if run is not None and not run.answering and run.by_address <= 0:
            del self._runs[run_id]
