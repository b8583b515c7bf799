"""PostgreSQL store (psycopg 3): the same SQL as SQLite, for `database = "postgresql://..."`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from kvwatch.app.errors import KvwatchError
from kvwatch.app.store.base import Sample
from kvwatch.app.store.sql import Rows, SqlStore

try:
    import psycopg
except ImportError:  # an optional extra: only who configures a postgresql:// URL needs it
    psycopg = None  # type: ignore[assignment]

MIGRATION_LOCK = 0x6B767761  # the advisory lock key of kvwatch's schema migrations ("kvwa")


class PostgresStore(SqlStore):
    dialect = "postgres"

    def __init__(self, url: str) -> None:
        super().__init__()
        if psycopg is None:
            raise KvwatchError(
                "server.database: a postgresql:// URL needs psycopg: pip install 'kvwatch[postgres]'"
            )
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
            self._migrate()
        except psycopg.Error as exc:
            # Only the first line: the rest of a libpq message repeats the URL's host and user.
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise KvwatchError(f"server.database: cannot open the PostgreSQL store: {reason}") from None

    def _migrate(self) -> None:
        # Scale-out: several collectors may start at once on one database, and concurrent CREATE TABLE IF
        # NOT EXISTS collide in PostgreSQL's catalog. One process migrates; the others wait, then see it done.
        self._run("SELECT pg_advisory_lock(?)", (MIGRATION_LOCK,))
        try:
            super()._migrate()
        finally:
            self._run("SELECT pg_advisory_unlock(?)", (MIGRATION_LOCK,))

    def _run(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        with self._conn.cursor() as cur:
            cur.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []

    def _rows_changed(self, sql: str, params: Sequence[Any]) -> int:
        with self._conn.cursor() as cur:
            cur.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cur.rowcount

    def _run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self._conn.cursor() as cur:
                cur.executemany(sql.replace("?", "%s"), rows)  # type: ignore[arg-type]

    def _insert_samples(self, host: str, samples: Sequence[Sample]) -> None:
        # COPY is several times faster than INSERT for a backlog of thousands of lines.
        statement = "COPY samples (host, metric, rank, t, v) FROM STDIN"
        with self._conn.cursor() as cur, cur.copy(statement) as copy:
            for metric, rank, t, v in samples:
                copy.write_row((host, metric, rank, t, v))

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._lock, self._conn.transaction():
            yield

    def close(self) -> None:
        with self._lock:
            self._conn.close()
