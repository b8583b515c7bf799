"""Where records end up: one small interface (`Store`), SQLite by default, PostgreSQL by URL."""

from __future__ import annotations

from kvwatch.app.store.base import Batch, EventRow, Sample, Store
from kvwatch.app.store.sqlite import SqliteStore


def open_store(database: str) -> Store:
    """`database` is a SQLite path, or a postgresql:// URL."""
    if database.startswith(("postgresql://", "postgres://")):
        from kvwatch.app.store.postgres import PostgresStore  # imported lazily: psycopg is an optional extra

        store: Store = PostgresStore(database)
        return store
    return SqliteStore(database)


__all__ = ["Batch", "EventRow", "Sample", "Store", "open_store"]
