"""PostgreSQL store (psycopg 3): the same SQL as SQLite, for `database = "postgresql://..."`.

Connections come from a psycopg_pool pool that checks each one before handing it out, so a
PostgreSQL restart costs the connections it broke, never the process: the next read or write gets a
new one once the server is back. Writes are serialised by the store's lock on one pooled connection
a transaction; reads take any other, so an API read never waits behind a collector's commit.

A collector's batch that cannot be committed because the server is gone (connection lost, no
connection within the pool's wait) is held: `commit` retries it, waiting 0.5 s doubling to 5 s,
until the server is back (or the store closes), so the host's thread and its tail wait with it and
nothing is lost. A connection lost during COMMIT leaves it unknown whether the batch was stored:
before a retry the stored resume state of the batch's file is compared with the batch's, and a batch
found committed is not stored again. (A batch without a resume state, GPU samples, has no such
check; the window is one COMMIT's round trip.)
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from kvwatch.app.errors import KvwatchError, StoreUnavailable
from kvwatch.app.store.base import Batch, Sample
from kvwatch.app.store.sql import Rows, SqlStore

try:
    import psycopg
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError:  # an optional extra: only who configures a postgresql:// URL needs it
    psycopg = None  # type: ignore[assignment]

log = logging.getLogger(__name__)
MIGRATION_LOCK = 0x6B767761  # the advisory lock key of kvwatch's schema migrations ("kvwa")
POOL_SIZE = 8  # the collectors' writer plus concurrent API reads
WAIT_S = 10.0  # how long a read or write waits for a connection before it fails (or a commit retries)
RETRY_FIRST_S, RETRY_MAX_S = 0.5, 5.0


class PostgresStore(SqlStore):
    dialect = "postgres"

    def __init__(self, url: str) -> None:
        super().__init__()
        if psycopg is None:
            raise KvwatchError(
                "server.database: a postgresql:// URL needs psycopg: pip install 'kvwatch[postgres]'"
            )
        self._current = threading.local()  # the connection of this thread's open transaction
        self._closed = threading.Event()
        self._held: dict[int, float] = {}  # committing thread -> since when its batch is held
        try:
            # Migrate on one connection of its own: the advisory lock belongs to a session.
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
                self._current.conn = conn
                try:
                    self._migrate()
                finally:
                    self._current.conn = None
        except psycopg.Error as exc:
            # Only the first line: the rest of a libpq message repeats the URL's host and user.
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise KvwatchError(f"server.database: cannot open the PostgreSQL store: {reason}") from None
        self._pool = ConnectionPool(
            url, min_size=1, max_size=POOL_SIZE, timeout=WAIT_S, name="kvwatch", open=True,
            kwargs={"autocommit": True, "connect_timeout": 10}, check=ConnectionPool.check_connection,
        )

    def _migrate(self) -> None:
        # Scale-out: several collectors may start at once on one database, and concurrent CREATE TABLE IF
        # NOT EXISTS collide in PostgreSQL's catalog. One process migrates; the others wait, then see it done.
        self._run("SELECT pg_advisory_lock(?)", (MIGRATION_LOCK,))
        try:
            super()._migrate()
        finally:
            self._run("SELECT pg_advisory_unlock(?)", (MIGRATION_LOCK,))

    @contextmanager
    def _cursor(self) -> Iterator[psycopg.Cursor[Any]]:
        conn = getattr(self._current, "conn", None)
        if conn is not None:
            with conn.cursor() as cur:
                yield cur
            return
        with self._pool.connection() as pooled, pooled.cursor() as cur:
            yield cur

    def _run(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        with self._cursor() as cur:
            cur.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []

    def _read(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        try:
            return self._run(sql, params)  # a pooled connection of its own, not the writer's lock
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise StoreUnavailable(f"server.database: PostgreSQL unreachable: {_first_line(exc)}") from None

    def _rows_changed(self, sql: str, params: Sequence[Any]) -> int:
        with self._cursor() as cur:
            cur.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cur.rowcount

    def _run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self._cursor() as cur:
                cur.executemany(sql.replace("?", "%s"), rows)  # type: ignore[arg-type]

    def _insert_samples(self, host: str, samples: Sequence[Sample]) -> None:
        # COPY is several times faster than INSERT for a backlog of thousands of lines.
        statement = "COPY samples (host, metric, rank, t, v) FROM STDIN"
        with self._cursor() as cur, cur.copy(statement) as copy:
            for metric, rank, t, v in samples:
                copy.write_row((host, metric, rank, t, v))

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        conn = getattr(self._current, "conn", None)
        if conn is not None:  # nested (a migration's backfill, a held batch's check): a savepoint
            with conn.transaction():
                yield
            return
        with self._lock, self._pool.connection() as pooled, pooled.transaction():
            self._current.conn = pooled
            try:
                yield
            finally:
                self._current.conn = None

    def commit(self, batch: Batch) -> None:
        """Store the batch; while the server is unreachable, hold it and retry (module docstring)."""
        try:
            self._commit_held(batch)
        finally:  # stored, given up at close, or any other error: this thread holds nothing any more
            self._held.pop(threading.get_ident(), None)

    def _commit_held(self, batch: Batch) -> None:
        delay, held = RETRY_FIRST_S, False
        while True:
            try:
                with self._transaction():
                    if not (held and self._stored(batch)):
                        super().commit(batch)
                if held:
                    log.warning("PostgreSQL is back: the held batch of %s %s is stored", batch.host, batch.path)
                return
            except (psycopg.OperationalError, PoolTimeout) as exc:
                if self._closed.is_set():
                    raise
                if not held:
                    log.warning("PostgreSQL unreachable (%s): holding %s's batch of %s, retrying",
                                _first_line(exc), batch.host, batch.path or batch.source)
                    self._held[threading.get_ident()] = time.time()
                held = True
                self._closed.wait(delay)
                delay = min(delay * 2, RETRY_MAX_S)

    def _stored(self, batch: Batch) -> bool:
        """The batch's resume state is the stored one: its transaction committed before the loss."""
        if batch.state is None:
            return False
        rows = self._run("SELECT state FROM tail_state WHERE host = ? AND source = ? AND path = ?",
                         (batch.host, batch.source, batch.path))
        return bool(rows) and rows[0][0] == json.dumps(batch.state)

    def health(self) -> dict[str, Any]:
        held = list(self._held.values())
        if not held:
            return {"state": "ok"}
        return {"state": "unreachable", "since": min(held), "held_batches": len(held)}

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            self._pool.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
