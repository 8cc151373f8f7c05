"""The checkpointer the adapter owns: SQLite beside the host's database, or PostgreSQL.

Graphs run with ``durability="sync"``, so a checkpoint is on disk before the
bridge records anything about it, and a graph paused in one process resumes in
another. The saver opens lazily, on the first graph step, so runs recovered at
start-up never race its opening.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver


def saver_location(db: str) -> str:
    """Where the default saver lives for a host database: a PostgreSQL URL, or a SQLite file beside it."""
    if db.startswith(("postgresql://", "postgres://")):
        return db
    path = Path(db[len("sqlite:") :] if db.startswith("sqlite:") else db)
    return str(path.with_name(path.stem + ".langgraph.db"))


class Checkpoints:
    """Opens, shares and closes one checkpointer, and binds graphs to it."""

    def __init__(self, location: str | None = None, saver: BaseCheckpointSaver[Any] | None = None) -> None:
        if location is None and saver is None:
            raise ValueError("give a database location or a checkpointer")
        self.location = location
        self._saver = saver
        self._owned = saver is None
        self._stack = contextlib.AsyncExitStack()
        self._lock = asyncio.Lock()
        self._bound: dict[int, Any] = {}

    @property
    def postgres(self) -> bool:
        """True when the saver is PostgreSQL."""
        return bool(self.location and self.location.startswith(("postgresql://", "postgres://")))

    async def saver(self) -> BaseCheckpointSaver[Any]:
        """The open checkpointer (opened on first use)."""
        if self._saver is not None:
            return self._saver
        async with self._lock:
            if self._saver is None:
                assert self.location is not None
                if self.postgres:
                    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

                    saver: Any = await self._stack.enter_async_context(
                        AsyncPostgresSaver.from_conn_string(self.location)
                    )
                    await saver.setup()
                else:
                    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

                    Path(self.location).parent.mkdir(parents=True, exist_ok=True)
                    saver = await self._stack.enter_async_context(AsyncSqliteSaver.from_conn_string(self.location))
                self._saver = saver
            return self._saver

    async def bind(self, graph: Any) -> Any:
        """The graph with this checkpointer (a copy; the caller's graph is left alone)."""
        bound = self._bound.get(id(graph))
        if bound is None:
            bound = graph.copy(update={"checkpointer": await self.saver()})
            self._bound[id(graph)] = bound
        return bound

    async def close(self) -> None:
        """Close a checkpointer this object opened."""
        if self._owned:
            await self._stack.aclose()
            self._saver = None
            self._bound.clear()
