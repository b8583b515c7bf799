"""Issue #22, finding 8 (SQLite): an API read never waits behind the collector's write transaction.

A thread holds the store's write transaction open (what a collector's commit of a large catch-up
batch does) while /api/series and /api/hosts are asked through the real app; they answer from the
last committed state at once, and the rows of the open transaction appear once it commits."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from fastapi.testclient import TestClient

from kvwatch.app.main import create_app
from kvwatch.app.store.base import Batch, Sample
from kvwatch.app.store.sqlite import SqliteStore
from tests.app.slice_helpers import start_services

HOLD_S = 3.0


def test_an_api_read_is_not_blocked_by_a_long_write_transaction(tmp_path: Path) -> None:
    services = start_services(tmp_path)
    store = services.store
    assert isinstance(store, SqliteStore)
    store.commit(Batch("local", "server_log", "/log", samples=[Sample("token_usage", "", 100.0 + i, 0.5)
                                                                for i in range(10)]))
    inside, release = threading.Event(), threading.Event()

    def long_write() -> None:
        with store._transaction():  # the collector's commit path: the writer connection and its lock
            store._run("INSERT INTO samples (host, metric, rank, t, v) VALUES ('local', 'token_usage', '', 500, 0.9)")
            inside.set()
            release.wait(HOLD_S)

    writer = threading.Thread(target=long_write)
    try:
        with TestClient(create_app(services, manage_collectors=False)) as client:
            writer.start()
            assert inside.wait(5)
            started = time.monotonic()
            points = client.get("/api/series", params={"host": "local", "metric": "token_usage"}).json()["points"]
            hosts = client.get("/api/hosts").json()
            elapsed = time.monotonic() - started
            assert writer.is_alive(), "the write transaction must still be open during the reads"
            assert elapsed < 1.0, f"reads waited {elapsed:.2f} s behind the writer"
            assert len(points) == 10 and hosts[0]["name"] == "local"  # the committed state, not the open one
            release.set()
            writer.join(5)
            points = client.get("/api/series", params={"host": "local", "metric": "token_usage"}).json()["points"]
            assert len(points) == 11 and points[-1] == [500.0, 0.9]
    finally:
        release.set()
        writer.join(5)
        store.close()  # collectors were never started: the store is all there is to close
