"""SQLite store (WAL): the default, one file in the data folder.

At open, `PRAGMA quick_check` looks for damage inside the file (a torn or overwritten page that the
header and schema reads at open would not touch), so a damaged store stops the start with one line
instead of failing a collector hours later. It reads every page (about 1 s a GiB here, BENCHMARKS.md
"Store maintenance"), so it runs when it is cheap (a store up to CHECK_ALWAYS_BYTES) or when it
matters: after an unclean shutdown, which leaves the write-ahead log behind (a clean close of the last
connection removes it; another process using the store also keeps it, and then the check just runs).

Commits of many hosts at once share a transaction (app/store/group_commit.py). Readers never wait
behind the writer: the collectors' commits hold the writer connection (and its
lock) for a whole batch, while a read (an API request's, an alert evaluation's) runs on one of a few
shared read-only connections on the write-ahead log (app/store/sqlite_readers.py), which sees the last
committed batch.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kvwatch.app.errors import KvwatchError
from kvwatch.app.store.base import Batch
from kvwatch.app.store.group_commit import GroupCommit
from kvwatch.app.store.sql import Rows, SqlStore
from kvwatch.app.store.sqlite_readers import ReaderPool

CHECK_ALWAYS_BYTES = 256 * 2**20


def needs_check(path: str) -> bool:
    """Small enough to check every start, or left behind by a process that did not close it."""
    if path == ":memory:" or not os.path.exists(path):
        return False
    wal = f"{path}-wal"
    return os.path.getsize(path) <= CHECK_ALWAYS_BYTES or (os.path.exists(wal) and os.path.getsize(wal) > 0)


def create_private(path: str) -> None:
    """A new store file is created readable by its owner only; SQLite gives its -wal and -shm files the
    same mode. It holds what the hosts logged (paths, prompts' counts, flags), not for other users."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


class SqliteStore(SqlStore):
    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self._group = GroupCommit(self._lock, self._transaction, self._write_batch)
        self._catalogued = set()
        self._readers = ReaderPool(path)
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            create_private(path)
        check = needs_check(path)  # before connecting: opening creates the write-ahead log
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        except sqlite3.DatabaseError as exc:
            raise KvwatchError(f"{path}: cannot open the SQLite store: {exc}") from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            if check:
                self._quick_check()
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise KvwatchError(f"{path}: cannot open the SQLite store: {exc}") from None

    def _quick_check(self) -> None:
        rows = self._db.execute("PRAGMA quick_check(10)").fetchall()
        problems = [line for row in rows for line in str(row[0]).splitlines() if line.strip()]
        if problems != ["ok"]:
            self._db.close()
            raise KvwatchError(
                f"{self.path}: the SQLite store is damaged (quick_check: {problems[0]}"
                f"{f'; {len(problems) - 1} more' if len(problems) > 1 else ''}); move it aside to start"
                f" a new store, or salvage it: sqlite3 {self.path} .recover | sqlite3 recovered.db"
            )

    def commit(self, batch: Batch) -> None:
        self._group.commit(batch)

    def _run(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        return self._db.execute(sql, params).fetchall()

    def _read(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        if self.path == ":memory:":  # one in-memory database: only the writer connection sees it
            return super()._read(sql, params)
        return self._readers.read(sql, params)

    def _rows_changed(self, sql: str, params: Sequence[Any]) -> int:
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
                self._catalog_pending.clear()
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            if self._catalogued is not None:
                self._catalogued |= self._catalog_pending
            self._catalog_pending.clear()

    def close(self) -> None:
        with self._lock:
            self._readers.close()
            self._db.close()
