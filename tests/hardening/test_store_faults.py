"""The store under faults: a full disk (SQLite's max_page_count, the same SQLITE_FULL a full
filesystem gives) is reported in the host's health and recovered from with every line stored once;
a corrupted store file stops the start with one clear line."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from app.cli import main
from app.pipeline.collector import HostCollector
from app.pipeline.transports import open_transport
from app.store import open_store
from app.store.sqlite import SqliteStore
from tests.app.slice_helpers import append_lines, local_config, wait_until


def stored_lines(store: SqliteStore) -> list[float]:
    _, values = store.series("local", "running_req")[:2]
    return sorted(values)


def test_a_full_disk_is_reported_and_recovered_without_loss(tmp_path: Path) -> None:
    config = local_config(tmp_path)
    append_lines(tmp_path / "server.log", 1, 200)
    store = open_store(str(tmp_path / "kvwatch.db"))
    assert isinstance(store, SqliteStore)
    collector = HostCollector(config.hosts[0], store, __import__("app.bus").bus.EventBus(), open_transport, 0.05)
    collector.start()
    try:
        wait_until(lambda: len(stored_lines(store)) == 200, timeout=30)
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count={pages}")  # the disk is full from now on
        append_lines(tmp_path / "server.log", 201, 5000)
        wait_until(lambda: "full" in (collector.health.last_error or ""), timeout=30)
        assert collector.health.last_error == "store: database or disk is full"
        assert collector._thread.is_alive()
        stuck = stored_lines(store)
        store._db.execute("PRAGMA max_page_count=1073741823")  # space is back
        wait_until(lambda: len(stored_lines(store)) == 5200, timeout=60)
    finally:
        collector.stop()
    values = stored_lines(store)
    assert values == [float(n) for n in range(1, 5201)]  # 0 lost, 0 duplicated
    assert len(stuck) < 5200
    state = store.load_state("local", "server_log", str(tmp_path / "server.log"))
    assert state is not None and state["offset"] == (tmp_path / "server.log").stat().st_size
    store.close()


@pytest.mark.parametrize("damage", ["garbage", "truncated_header"])
def test_a_corrupted_store_is_one_clear_line_at_start(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      damage: str) -> None:
    db = tmp_path / "kvwatch.db"
    if damage == "garbage":
        db.write_bytes(b"\x8f\x00not a database at all" * 500)
    else:
        sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
        db.write_bytes(db.read_bytes()[:50] + b"\xff" * 50)
    path = tmp_path / "kvwatch.toml"
    path.write_text(f"[server]\ndata_dir = '{tmp_path}'\n[[hosts]]\nname = 'a'\nssh = 'local'\nserver_log = '/x'\n")
    assert main(["collect", "--config", str(path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and str(db) in lines[0] and "cannot open the SQLite store" in lines[0], lines
