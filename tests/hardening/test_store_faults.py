"""The store under faults: a full disk (SQLite's max_page_count, the same SQLITE_FULL a full
filesystem gives) is reported in the host's health and recovered from with every line stored once;
a corrupted store file stops the start with one clear line, whether the damage is in its header or
inside (quick_check: every start for a store up to 256 MiB, after an unclean shutdown beyond)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from kvwatch.app.bus import EventBus
from kvwatch.app.cli import main
from kvwatch.app.config import HostConfig
from kvwatch.app.errors import KvwatchError
from kvwatch.app.pipeline.collector import HostCollector
from kvwatch.app.store import Batch, Sample, open_store
from kvwatch.app.store import sqlite as sqlite_module
from kvwatch.app.store.schema import LATEST_VERSION
from kvwatch.app.store.sqlite import SqliteStore
from tests.app.slice_helpers import append_lines, local_config, wait_until


def stored_lines(store: SqliteStore) -> list[float]:
    _, values = store.series("local", "running_req")[:2]
    return sorted(values)


def test_a_full_disk_is_reported_and_recovered_without_loss(tmp_path: Path) -> None:
    config = local_config(tmp_path)
    append_lines(tmp_path / "server.log", 1, 200)
    store = open_store(str(tmp_path / "kvwatch.db"))
    assert isinstance(store, SqliteStore)
    collector = HostCollector(config.hosts[0], store, EventBus(), HostConfig.open_transport, 0.05)
    collector.start()
    try:
        wait_until(lambda: len(stored_lines(store)) == 200, timeout=30)
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count={pages}")  # the disk is full from now on
        append_lines(tmp_path / "server.log", 201, 5000)
        wait_until(lambda: "full" in (collector.health.last_error or ""), timeout=30)
        assert collector.health.last_error == "store: database or disk is full"
        assert collector.is_alive()
        stuck = stored_lines(store)
        store._db.execute("PRAGMA max_page_count=1073741823")  # space is back
        wait_until(lambda: len(stored_lines(store)) == 5200, timeout=60)
        # recovered: no longer shown as the host's trouble (cleared by the collector's thread just after the
        # commit that a reader here can already see)
        wait_until(lambda: collector.health.last_error is None, timeout=5)
        assert collector.health.recovered_from["error"] == "store: database or disk is full"
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


def damaged_store(db: Path) -> None:
    """A store with data whose header and schema are intact but whose samples table's root page is
    overwritten: the damage a torn write or a bad disk sector leaves, which opening does not read."""
    store = open_store(str(db))
    store.commit(Batch("a", "server_log", "/x", [Sample("running_req", "", float(t), 1.0) for t in range(30_000)]))
    store.close()
    with closing(sqlite3.connect(db)) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'samples'").fetchone()[0]
    with db.open("r+b") as handle:
        handle.seek((root - 1) * page_size)
        handle.write(bytes(range(256)) * (page_size // 256))


def test_damage_inside_the_store_is_found_at_start_by_quick_check(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "kvwatch.db"
    damaged_store(db)
    with closing(sqlite3.connect(db)) as conn:  # what opening reads is fine: without the check it would start
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (LATEST_VERSION,)
    path = tmp_path / "kvwatch.toml"
    path.write_text(f"[server]\ndata_dir = '{tmp_path}'\n[[hosts]]\nname = 'a'\nssh = 'local'\nserver_log = '/x'\n")
    assert main(["collect", "--config", str(path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"{db}: the SQLite store is damaged (quick_check: " in lines[0], lines
    assert f"sqlite3 {db} .recover" in lines[0]


def test_a_large_store_is_checked_after_an_unclean_shutdown_only(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_module, "CHECK_ALWAYS_BYTES", 0)  # every store counts as large
    db = tmp_path / "kvwatch.db"
    damaged_store(db)
    unchecked = open_store(str(db))  # closed cleanly before: not checked, and the damage shows later
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        unchecked.series("a", "running_req")
    unchecked.close()
    # A writer killed with SIGKILL after a commit leaves its write-ahead log behind.
    killed = subprocess.run([sys.executable, "-c", (
        "import os, signal, sqlite3, sys; db = sqlite3.connect(sys.argv[1], isolation_level=None); "
        "db.execute(\"INSERT INTO documents VALUES ('note', 'k', 'a', 1.0, '{}')\"); "
        "os.kill(os.getpid(), signal.SIGKILL)"), str(db)], check=False)
    assert killed.returncode == -signal.SIGKILL and Path(f"{db}-wal").stat().st_size > 0
    with pytest.raises(KvwatchError, match=r"damaged \(quick_check: "):
        open_store(str(db))
