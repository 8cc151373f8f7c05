"""Persistence: the store contract and its implementations."""

from __future__ import annotations

from bridge.store.base import InterruptRecord, RunRecord, Store
from bridge.store.sqlite import SqliteStore


def open_store(url: str) -> Store:
    """A store for ``--db``: a SQLite path (or ``sqlite:PATH``) or a ``postgresql://`` URL."""
    if url.startswith(("postgresql://", "postgres://")):
        from bridge.errors import ValidationError

        raise ValidationError("PostgreSQL is not available in this build; use a SQLite path")
    if url.startswith("sqlite:"):
        url = url[len("sqlite:") :]
    return SqliteStore(url)


__all__ = ["InterruptRecord", "RunRecord", "SqliteStore", "Store", "open_store"]
