"""Sinks as the pipeline must be: lines and TailState stored in one transaction (SQLite here)."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

from kvwatch.collectors.base import Line
from kvwatch.collectors.lines import TailState


class SqliteSink:
    """Duplicates are not silently absorbed: a line whose key exists is counted in `dups`."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.lock = threading.Lock()
        self.db.executescript(
            """PRAGMA journal_mode=WAL;
            CREATE TABLE IF NOT EXISTS lines(host, kind, path, generation, offset, text,
                                             UNIQUE(host, path, generation, offset));
            CREATE TABLE IF NOT EXISTS states(host, kind, path, state, PRIMARY KEY(host, path));
            CREATE TABLE IF NOT EXISTS dups(n);"""
        )

    def load_state(self, host: str, kind: str, path: str) -> TailState | None:
        with self.lock:
            row = self.db.execute("SELECT state FROM states WHERE host=? AND path=?", (host, path)).fetchone()
        return TailState.from_dict(json.loads(row[0])) if row else None

    def deliver(self, host: str, kind: str, path: str, lines: list[Line], state: TailState | None) -> None:
        rows = [(host, kind, path, ln.generation, ln.offset, ln.text) for ln in lines]
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            before = self.db.total_changes
            self.db.executemany("INSERT OR IGNORE INTO lines VALUES (?,?,?,?,?,?)", rows)
            dups = len(rows) - (self.db.total_changes - before)
            if dups:
                self.db.execute("INSERT INTO dups VALUES (?)", (dups,))
            if state is not None:
                self.db.execute("INSERT OR REPLACE INTO states VALUES (?,?,?,?)",
                                (host, kind, path, json.dumps(state.as_dict())))
            self.db.execute("COMMIT")

    def idle(self, host: str, kind: str, path: str) -> None:
        return None  # raw lines: nothing is held back

    def texts(self, kind: str | None = None) -> list[str]:
        with self.lock:
            if kind is None:
                return [r[0] for r in self.db.execute("SELECT text FROM lines")]
            return [r[0] for r in self.db.execute("SELECT text FROM lines WHERE kind=?", (kind,))]

    def seqs(self, kind: str = "server_log") -> list[int]:
        return sorted(int(t.split(" ", 1)[0]) for t in self.texts(kind))

    def dups(self) -> int:
        with self.lock:
            return int(self.db.execute("SELECT COALESCE(SUM(n), 0) FROM dups").fetchone()[0])
