"""Issue #22, finding 8 (SQLite): an API read never waits behind the collector's write transaction.

A thread holds the store's write transaction open (what a collector's commit of a large catch-up
batch does) while /api/series and /api/hosts are asked through the real app; they answer from the
last committed state at once, and the rows of the open transaction appear once it commits."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from kvwatch.app.main import create_app
from kvwatch.app.store.base import Batch, Sample
from kvwatch.app.store.sqlite import SqliteStore
from kvwatch.app.store.sqlite_readers import READERS, ReaderPool
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


def test_threads_share_a_few_reader_connections(tmp_path: Path) -> None:
    """64 host threads each read their offsets at connect: before, each kept a connection (its schema
    and page cache, 9 MB of SQLite memory at 64 hosts); now they share at most READERS."""
    store = SqliteStore(str(tmp_path / "kvwatch.db"))
    store.commit(Batch("h0", "server_log", "/log", samples=[Sample("token_usage", "", 100.0, 0.5)]))
    answers: list[int] = []
    start = threading.Barrier(64)

    def read() -> None:
        start.wait(10)
        for _ in range(20):
            answers.append(len(store.series("h0", "token_usage")[0]))

    threads = [threading.Thread(target=read) for _ in range(64)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert answers == [1] * 64 * 20
        assert 1 <= store._readers.opened <= READERS
    finally:
        store.close()
    assert store._readers.opened == 0


def test_a_read_waits_for_a_reader_when_all_are_busy(tmp_path: Path) -> None:
    path = str(tmp_path / "kvwatch.db")
    SqliteStore(path).close()  # creates the schema
    pool = ReaderPool(path, size=1)
    got: list[float] = []

    def second_read() -> None:
        with pool.connection() as reader:
            got.append(time.monotonic())
            reader.execute("SELECT 1").fetchall()

    try:
        with pool.connection() as first:
            waiter = threading.Thread(target=second_read)
            waiter.start()
            time.sleep(0.3)
            assert got == [], "the only reader is in use: the second read must wait"
            released = time.monotonic()
            first.execute("SELECT 1").fetchall()
        waiter.join(5)
        assert len(got) == 1 and got[0] >= released
        assert pool.opened == 1
    finally:
        pool.close()
    with pytest.raises(sqlite3.ProgrammingError), pool.connection():
        pass
    with pytest.raises(ValueError, match="at least one"):
        ReaderPool(path, size=0)


def test_a_read_waiting_when_the_store_closes_gets_an_error_not_a_hang(tmp_path: Path) -> None:
    path = str(tmp_path / "kvwatch.db")
    SqliteStore(path).close()
    pool = ReaderPool(path, size=1)
    outcome: list[str] = []

    def waiting_read() -> None:
        try:
            with pool.connection():
                outcome.append("got a connection")
        except sqlite3.ProgrammingError as exc:
            outcome.append(str(exc))

    with pool.connection() as busy:
        waiter = threading.Thread(target=waiting_read, daemon=True)
        waiter.start()
        time.sleep(0.3)
        pool.close()  # the store's close while a read still holds the only connection
        waiter.join(5)
        assert not waiter.is_alive(), "a read waiting for a connection hung after the close"
        assert outcome == ["Cannot operate on a closed database."]
        with pytest.raises(sqlite3.ProgrammingError):
            busy.execute("SELECT 1")
    with pytest.raises(sqlite3.ProgrammingError), pool.connection():  # the returned one was not put back
        pass
