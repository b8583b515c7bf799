"""SQLite store (WAL): the default, one file in the data folder."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app.errors import KvwatchError
from app.store.sql import Rows, SqlStore


class SqliteStore(SqlStore):
    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise KvwatchError(f"{path}: cannot open the SQLite store: {exc}") from None

    def _run(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        return self._db.execute(sql, params).fetchall()

    def _delete(self, sql: str, params: Sequence[Any]) -> int:
        return self._db.execute(sql, params).rowcount

    def _run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._db.executemany(sql, rows)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._lock:
            if self._db.in_transaction:  # nested (a migration's backfill): the outer one commits
                yield
                return
            self._db.execute("BEGIN")
            try:
                yield
                self._db.execute("COMMIT")
            except BaseException:
                # A failed COMMIT (disk full) leaves the transaction open; a statement error may
                # have ended it already. Either way the next BEGIN must start clean.
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self._lock:
            self._db.close()
