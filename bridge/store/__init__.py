"""Persistence: the store contract and its implementations."""

from __future__ import annotations

from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.store.base import Store
from openwop_bridge.store.sqlite import SqliteStore


def open_store(url: str) -> Store:
    """A store for ``--db``: a SQLite path (or ``sqlite:PATH``) or a ``postgresql://`` URL."""
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from openwop_bridge.store.postgres import PostgresStore
        except ImportError as exc:
            from openwop_bridge.core.errors import ValidationError

            raise ValidationError(
                "PostgreSQL needs psycopg 3 and psycopg-pool: pip install 'openwop-bridge[postgres]'"
            ) from exc
        return PostgresStore(url)
    if url.startswith("sqlite:"):
        url = url[len("sqlite:") :]
    return SqliteStore(url)


__all__ = ["InterruptRecord", "RunRecord", "SqliteStore", "Store", "open_store"]
