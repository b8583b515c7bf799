"""The SQLite store's read-only connections: a few, shared by every thread that reads.

A read runs on one of these, never on the writer connection, so it sees the last committed batch at
once instead of waiting behind a collector's write transaction (WAL lets both run). There are at most
`size` of them: one per thread (the earlier design) meant a connection, its schema and its page cache
for each of 64 host threads that read its file offsets once at connect, 9 MB of SQLite memory held for
nothing (bench/collect_fleet.py, BENCHMARKS.md). A thread takes an idle one, opens one while fewer than
`size` exist, or waits for one to come back; a read holds it only for its statement and fetch.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

# Two cores here; API requests, the alert loop and the relay rarely read at the same instant, and a
# read holds its connection for one statement.
READERS = 4
CLOSED_CHECK_S = 0.2  # how soon a thread waiting for a connection notices the store closed


class ReaderPool:
    """Idle connections on a plain list under one condition: a fleet answer makes ~180 reads a host,
    and a queue's two locks and a context manager cost three times the statement itself."""

    def __init__(self, path: str, size: int = READERS) -> None:
        if size < 1:
            raise ValueError(f"a reader pool needs at least one connection, not {size}")
        self.path = path
        self.size = size
        self._idle: list[sqlite3.Connection] = []  # popped from the end: the warmest cache first
        self._opened: list[sqlite3.Connection] = []
        self._returned = threading.Condition(threading.Lock())
        self._closed = False
        self._waiting = 0  # threads in _take's wait: a read that ends wakes one only if there is one

    @property
    def opened(self) -> int:
        return len(self._opened)

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """One statement's rows, on a connection held only for it."""
        reader = self._take()
        try:
            return reader.execute(sql, params).fetchall()
        finally:
            self._give(reader)

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        reader = self._take()
        try:
            yield reader
        finally:
            self._give(reader)

    def close(self) -> None:
        """Closes every connection; the caller makes sure no read is running (the store's close)."""
        with self._returned:
            self._closed = True
            for reader in self._opened:
                reader.close()
            self._opened.clear()
            self._idle.clear()
            self._returned.notify_all()

    def _give(self, reader: sqlite3.Connection) -> None:
        with self._returned:  # with close(): a connection is either put back or closed, never both
            if self._closed:  # the store closed during this read: the connection is closed already
                reader.close()
                return
            self._idle.append(reader)
            if self._waiting:
                self._returned.notify()

    def _take(self) -> sqlite3.Connection:
        with self._returned:
            while True:
                if self._closed:
                    raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
                if self._idle:
                    return self._idle.pop()
                if len(self._opened) < self.size:
                    reader = self._open()
                    self._opened.append(reader)
                    return reader
                self._waiting += 1  # every connection is out: wait for one to come back
                try:
                    self._returned.wait(CLOSED_CHECK_S)
                finally:
                    self._waiting -= 1

    def _open(self) -> sqlite3.Connection:
        """Autocommit, so every statement reads the newest committed state."""
        reader = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10)
        reader.execute("PRAGMA query_only=1")
        return reader
