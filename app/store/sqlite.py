"""SQLite store (WAL): the default, one file in the data folder."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from app.errors import KvwatchError
from app.store.base import Batch

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS samples (
        host TEXT NOT NULL, metric TEXT NOT NULL, rank TEXT NOT NULL, t REAL NOT NULL, v REAL NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS samples_series ON samples (host, metric, rank, t)",
    """CREATE TABLE IF NOT EXISTS events (
        id INTEGER PRIMARY KEY, host TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL,
        t REAL NOT NULL, line INTEGER NOT NULL, data TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS events_host_t ON events (host, t)",
    """CREATE TABLE IF NOT EXISTS tail_state (
        host TEXT NOT NULL, source TEXT NOT NULL, path TEXT NOT NULL, state TEXT NOT NULL,
        PRIMARY KEY (host, source, path))""",
    """CREATE TABLE IF NOT EXISTS documents (
        kind TEXT NOT NULL, key TEXT NOT NULL, host TEXT NOT NULL, t REAL NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (kind, key))""",
    "CREATE INDEX IF NOT EXISTS documents_kind_host ON documents (kind, host, t)",
)


class SqliteStore:
    def __init__(self, path: str) -> None:
        self.path = path
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            for statement in SCHEMA:
                self._db.execute(statement)
        except sqlite3.DatabaseError as exc:
            raise KvwatchError(f"{path}: cannot open the SQLite store: {exc}") from None
        self._lock = threading.Lock()

    def commit(self, batch: Batch) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    "INSERT INTO samples (host, metric, rank, t, v) VALUES (?, ?, ?, ?, ?)",
                    [(batch.host, *sample) for sample in batch.samples],
                )
                self._db.executemany(
                    "INSERT INTO events (host, source, kind, t, line, data) VALUES (?, ?, ?, ?, ?, ?)",
                    [(batch.host, batch.source, e.kind, e.t, e.line, json.dumps(e.data)) for e in batch.events],
                )
                if batch.state is not None:
                    self._db.execute(
                        "INSERT OR REPLACE INTO tail_state (host, source, path, state) VALUES (?, ?, ?, ?)",
                        (batch.host, batch.source, batch.path, json.dumps(batch.state)),
                    )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def load_state(self, host: str, source: str, path: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT state FROM tail_state WHERE host = ? AND source = ? AND path = ?", (host, source, path)
            ).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def series(
        self, host: str, metric: str, rank: str = "", since: float | None = None, until: float | None = None
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        sql = "SELECT t, v FROM samples WHERE host = ? AND metric = ? AND rank = ?"
        params: list[Any] = [host, metric, rank]
        if since is not None:
            sql += " AND t > ?"
            params.append(since)
        if until is not None:
            sql += " AND t <= ?"
            params.append(until)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY t", params).fetchall()
        if not rows:
            return np.empty(0), np.empty(0)
        table = np.asarray(rows, dtype=np.float64)
        return np.ascontiguousarray(table[:, 0]), np.ascontiguousarray(table[:, 1])

    def events(
        self, host: str | None = None, kinds: tuple[str, ...] = (), since: float | None = None, limit: int = 1000
    ) -> list[dict[str, Any]]:
        sql = "SELECT host, source, kind, t, line, data FROM events WHERE 1 = 1"
        params: list[Any] = []
        if host is not None:
            sql += " AND host = ?"
            params.append(host)
        if kinds:
            sql += f" AND kind IN ({', '.join('?' for _ in kinds)})"
            params.extend(kinds)
        if since is not None:
            sql += " AND t > ?"
            params.append(since)
        sql += " ORDER BY t DESC, id DESC LIMIT ?"
        params.append(limit)
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        return [
            {"host": h, "source": s, "kind": k, "t": t, "line": line, **json.loads(d)}
            for h, s, k, t, line, d in reversed(rows)
        ]

    def metrics(self, host: str) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT metric FROM samples WHERE host = ?", (host,)).fetchall()
        return sorted(r[0] for r in rows)

    def put_document(self, kind: str, key: str, host: str, t: float, data: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO documents (kind, key, host, t, data) VALUES (?, ?, ?, ?, ?)",
                (kind, key, host, t, json.dumps(data)),
            )

    def documents(self, kind: str, host: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT key, host, t, data FROM documents WHERE kind = ?"
        params: list[Any] = [kind]
        if host is not None:
            sql += " AND host = ?"
            params.append(host)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY t, key", params).fetchall()
        return [{"key": k, "host": h, "t": t, "data": json.loads(d)} for k, h, t, d in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
