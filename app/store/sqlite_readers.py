"""The SQLite store's read-only connections: a few, shared by every thread that reads.

A read runs on one of these, never on the writer connection, so it sees the last committed batch at
once instead of waiting behind a collector's write transaction (WAL lets both run). There are at most
`size` of them: one per thread (the earlier design) meant a connection, its schema and its page cache
for each of 64 host threads that read its file offsets once at connect, 9 MB of SQLite memory held for
nothing (bench/collect_fleet.py, BENCHMARKS.md). A thread takes an idle one, opens one while fewer than
`size` exist, or waits for one to come back; a read holds it only for its statement and fetch.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Two cores here; API requests, the alert loop and the relay rarely read at the same instant, and a
# read holds its connection for one statement.
READERS = 4
CLOSED_CHECK_S = 0.2  # how soon a thread waiting for a connection notices the store closed


class ReaderPool:
    def __init__(self, path: str, size: int = READERS) -> None:
        if size < 1:
            raise ValueError(f"a reader pool needs at least one connection, not {size}")
        self.path = path
        self.size = size
        self._idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()  # the warmest cache first
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    @property
    def opened(self) -> int:
        return len(self._opened)

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        reader = self._take()
        try:
            yield reader
        finally:
            with self._lock:  # with close(): a connection is either put back or closed, never both
                if self._closed:  # the store closed during this read: the connection is closed already
                    reader.close()
                else:
                    self._idle.put(reader)

    def close(self) -> None:
        """Closes every connection; the caller makes sure no read is running (the store's close)."""
        with self._lock:
            self._closed = True
            for reader in self._opened:
                reader.close()
            self._opened.clear()
            while not self._idle.empty():
                self._idle.get_nowait()

    def _take(self) -> sqlite3.Connection:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            if len(self._opened) < self.size:
                reader = self._open()
                self._opened.append(reader)
                return reader
        while True:  # every connection is out: wait for one, but not past the store's close
            try:
                return self._idle.get(timeout=CLOSED_CHECK_S)
            except queue.Empty:
                with self._lock:
                    if self._closed:
                        raise sqlite3.ProgrammingError("Cannot operate on a closed database.") from None

    def _open(self) -> sqlite3.Connection:
        """Autocommit, so every statement reads the newest committed state."""
        reader = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10)
        reader.execute("PRAGMA query_only=1")
        return reader
