"""Benchmark: what the SQLite store's start-up check and retention cost on a month-long store.

1. Opening the store with and without `PRAGMA quick_check`, at 1M samples and at `--days` (default 30)
   of 1 Hz (best of 3, page cache warm).
2. Retention down to `--keep-days`: batched (what the app runs) against one big DELETE, side by side on
   two copies of the same file, while a collector-like thread commits a small batch every 20 ms; the
   figure that matters is how long such a commit waits.
3. /api/series over a narrow pruned window (10 s rollup) against the same window kept raw.
Usage: python bench/store_maintenance.py [--days 30] [--keep-days 7] [--workdir DIR (reused if filled)]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from bench.dashboard_series import DAY, HOST, METRIC, START, fill
from kvwatch.app.api.points import read_points
from kvwatch.app.pipeline.retention import Retention
from kvwatch.app.store import Batch, Sample, open_store
from kvwatch.app.store import sqlite as sqlite_module
from kvwatch.app.store.sqlite import SqliteStore


def timed_open(path: Path, check_up_to: int) -> float:
    saved = sqlite_module.CHECK_ALWAYS_BYTES
    sqlite_module.CHECK_ALWAYS_BYTES = check_up_to
    try:
        started = time.perf_counter()
        open_store(str(path)).close()
        return time.perf_counter() - started
    finally:
        sqlite_module.CHECK_ALWAYS_BYTES = saved


def report_check(path: Path, label: str) -> None:
    """Opening the closed store file without and with the quick_check, and the check's result."""
    plain = min(timed_open(path, 0) for _ in range(3))
    checked = min(timed_open(path, 2**62) for _ in range(3))
    with closing(sqlite3.connect(path)) as db:
        result = db.execute("PRAGMA quick_check").fetchone()[0]
    mib = path.stat().st_size / 2**20
    print(f"{label:<22}{mib:>6.0f} MiB   open {plain * 1000:>6.1f} ms   open + quick_check {checked * 1000:>7.1f} ms"
          f"   ({(checked - plain) / mib * 1024:.1f} s/GiB; {result})")


def committer(store: SqliteStore, stop: threading.Event, waits: list[float]) -> None:
    """A collector's rhythm: one small commit every 20 ms, each one's latency recorded."""
    t = START + 40 * DAY
    while not stop.is_set():
        started = time.perf_counter()
        store.commit(Batch(HOST, "server_log", "/l", [Sample("queue_req", "", t, 1.0)]))
        waits.append(time.perf_counter() - started)
        t += 1
        stop.wait(0.02)


def pruned_with(path: Path, prune: Callable[[SqliteStore], int]) -> tuple[int, float, list[float]]:
    store = open_store(str(path))
    assert isinstance(store, SqliteStore)
    stop, waits = threading.Event(), list[float]()
    thread = threading.Thread(target=committer, args=(store, stop, waits))
    thread.start()
    time.sleep(0.5)
    started = time.perf_counter()
    deleted = prune(store)
    took = time.perf_counter() - started
    stop.set()
    thread.join()
    store.close()
    return deleted, took, waits


def compare_prune(path: Path, keep_days: int, days: int) -> None:
    copies = [path.with_name(f"{name}.db") for name in ("batched", "single")]
    for copy in copies:
        shutil.copyfile(path, copy)
    keep_s = keep_days * DAY
    before = START + days * DAY - 1 - keep_s
    runs = {
        "batched (app, 5,000)": pruned_with(
            copies[0], lambda s: Retention(s, lambda: [HOST], keep_s).prune_once()),
        "one DELETE": pruned_with(copies[1], lambda s: s.prune(before)),
    }
    print(f"\nretention {days} -> {keep_days} days, a commit every 20 ms alongside:")
    print(f"{'prune':<22}{'deleted':>11}{'total s':>9}{'commits':>9}{'median ms':>11}{'p99 ms':>9}{'max ms':>9}")
    for name, (deleted, took, waits) in runs.items():
        ms = sorted(w * 1000 for w in waits)
        p99 = ms[min(len(ms) - 1, int(0.99 * len(ms)))]
        print(f"{name:<22}{deleted:>11,}{took:>9.1f}{len(ms):>9}{statistics.median(ms):>11.1f}{p99:>9.1f}"
              f"{ms[-1]:>9.1f}")
    serve_pruned_window(copies[0], days)
    for copy in copies:
        copy.unlink()


def serve_pruned_window(path: Path, days: int) -> None:
    store = open_store(str(path))
    windows = {"1 h pruned (10 s rollup)": START + DAY, "1 h kept (raw)": START + (days - 1) * DAY}
    print()
    for name, since in windows.items():
        runs = []
        for _ in range(7):
            started = time.perf_counter()
            (t, _), width = read_points(store, HOST, METRIC, since=since, until=since + 3600)
            runs.append((time.perf_counter() - started) * 1000)
        print(f"/api/series {name:<26} {len(t):>5} points  resolution {width}  median {statistics.median(runs):.1f} ms")
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--keep-days", type=int, default=7)
    parser.add_argument("--workdir", type=Path, help="default: a new temp dir; a filled one is reused")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kvwatch-maint-"))
    workdir.mkdir(parents=True, exist_ok=True)
    path, first = workdir / "month.db", workdir / "1M.db"
    if not path.exists():
        store = open_store(str(path))
        took = fill(store, 12)  # 1,036,800 samples
        store.close()
        shutil.copyfile(path, first)
        store = open_store(str(path))
        took += fill(store, args.days, first_day=12)
        store.close()
        print(f"filled {args.days} days at 1 Hz in {took:.0f} s")
    print(f"load average {os.getloadavg()[0]:.2f}; page cache warm (the file was just written or read)")
    report_check(first, "12 days, 1,036,800")
    report_check(path, f"{args.days} days, {args.days * 86_400:,}")
    compare_prune(path, args.keep_days, args.days)


if __name__ == "__main__":
    main()
