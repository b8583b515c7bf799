"""Databases written before migrations existed are adopted and their rollups backfilled."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kvwatch.app.store import open_store
from kvwatch.app.store.schema import LATEST_VERSION

SKELETON_SCHEMA = """
CREATE TABLE samples (host TEXT NOT NULL, metric TEXT NOT NULL, rank TEXT NOT NULL,
    t REAL NOT NULL, v REAL NOT NULL);
CREATE INDEX samples_series ON samples (host, metric, rank, t);
CREATE TABLE events (id INTEGER PRIMARY KEY, host TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL,
    t REAL NOT NULL, line INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE tail_state (host TEXT NOT NULL, source TEXT NOT NULL, path TEXT NOT NULL, state TEXT NOT NULL,
    PRIMARY KEY (host, source, path));
"""


def test_skeleton_database_is_migrated_with_rollups_backfilled(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript(SKELETON_SCHEMA)
        db.executemany("INSERT INTO samples VALUES ('gpu1', 'token_usage', '', ?, ?)",
                       [(float(t), t / 1000) for t in range(1200)])
        db.execute("""INSERT INTO tail_state VALUES ('gpu1', 'server_log', '/l', '{"offset": 7}')""")
    store = open_store(str(path))
    try:
        assert store.schema_version() == LATEST_VERSION  # type: ignore[attr-defined]
        assert store.load_state("gpu1", "server_log", "/l") == {"offset": 7}
        t, v = store.rollup("gpu1", "token_usage", 600)
        assert t.tolist() == [0.0, 599.0, 600.0, 1199.0]
        assert v.tolist() == [0.0, 0.599, 0.6, 1.199]
        store.put_document("run", "r1", "gpu1", 1.0, {})  # the documents table came with version 1
        assert store.metrics("gpu1") == ["token_usage"]
    finally:
        store.close()
