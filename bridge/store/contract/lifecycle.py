"""What a store is (one server's or shared), and opening, closing and listening to it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class StoreLifecycle(Protocol):
    """What a store declares about itself, and its life: reserve, open, listen, close."""

    #: One server owns the database; stale leases are reset at start-up.
    single_instance: bool
    #: Exceptions meaning "the database is unreachable for now".
    transient_errors: tuple[type[BaseException], ...]
    #: Where the data lives: a ``postgresql://`` URL or a SQLite file path (``:memory:`` for none), so
    #: that an adapter can keep its own state beside it (LangGraph checkpoints).
    location: str

    @property
    def commits(self) -> int:
        """Durable transactions committed so far (several writes may share one): a cheap counter."""

    def reserve(self) -> None:
        """Claim what only one server may hold before serving (SQLite: its lock file), so a busy
        database is refused in one line before anything starts; a no-op for shared stores.

        Raises :class:`RuntimeError` saying which server holds it.
        """

    async def exists(self) -> bool:
        """Whether the database already holds an openwop-bridge schema; creates nothing."""

    async def open(self) -> None:
        """Connect and migrate."""

    async def close(self) -> None:
        """Release connections and threads."""

    async def listen(
        self,
        instance_id: str,
        on_wake: Callable[[str], None],
        on_events: Callable[[str], None],
        on_deadline: Callable[[int | None], None] | None = None,
    ) -> None:
        """Hear what other instances commit, from now on.

        The store calls ``on_wake(run_id)`` when another instance committed an
        input that woke a run this instance owns (an answer, a cancel, a child
        ending, a new run), ``on_events(run_id)`` when another instance
        committed events of a run, and ``on_deadline(at_ms)`` when another instance
        wrote an interrupt's deadline (None: look at every deadline again). Notifications are sent from inside the
        committing transaction, so they are delivered only for committed work.
        Notices this instance sends carry ``instance_id`` so that it skips its
        own. A single-instance store returns at once and never calls either.
        """
