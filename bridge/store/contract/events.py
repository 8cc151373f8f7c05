"""A run's logs in a store: its events, and its audit entries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class RunLogStore(Protocol):
    """A run's committed events (read in order, by page, by type) and its audit entries."""

    async def read_events(self, run_id: str, after_seq: int = -1, limit: int = 1000) -> list[dict[str, Any]]:
        """Event documents with ``sequence > after_seq``, in order."""

    async def event_sizes(self, run_id: str, after_seq: int, limit: int) -> list[int]:
        """The stored sizes (bytes) of the first ``limit`` event documents with ``sequence > after_seq``, in order."""

    async def read_event_page(
        self, run_id: str, after_seq: int, limit: int, max_bytes: int
    ) -> tuple[list[dict[str, Any]], bool]:
        """Up to ``limit`` event documents with ``sequence > after_seq`` whose stored sizes fit in ``max_bytes``
        (at least one, however large), in order, and whether the store may hold more after them (False:
        these were the last when read). No document beyond the page is held."""

    async def activation_events(self, run_id: str, node_id: str, visit: int) -> list[dict[str, Any]]:
        """Node-issued events of one activation, in command order."""

    async def events_of_types(self, run_id: str, types: Sequence[str]) -> list[dict[str, Any]]:
        """Event documents of the given types, in order."""

    async def audit(self, run_id: str) -> list[dict[str, Any]]:
        """Audit entries of a run, oldest first."""

    async def audit_page(self, run_id: str, after_id: int, limit: int) -> list[tuple[int, dict[str, Any]]]:
        """Up to ``limit`` audit entries of a run after the one numbered ``after_id``, oldest first, numbered."""
