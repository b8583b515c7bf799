"""Benchmark: /api/series?max_points=2000 over a 30-day, 1 Hz series (2,592,000 points).

Side by side: the rollup path (what the API does) against the naive path (read every raw sample,
then MinMaxLTTB), both as the handler's server-side work; plus the full HTTP request in-process.
Usage: python bench/dashboard_series.py [--days 30] [--repeat 7] [--database PATH_OR_URL (reused if filled)]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient

from kvwatch.app.api.points import as_pairs, downsample, read_points
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from kvwatch.app.store import Batch, Sample, Store, open_store

HOST, METRIC, DAY = "gpu1", "token_usage", 86_400
START = 1_780_000_000.0


def fill(store: Store, days: int, first_day: int = 0) -> float:
    started = time.perf_counter()
    rng = np.random.default_rng(first_day)
    for day in range(first_day, days):
        t = START + day * DAY + np.arange(DAY, dtype=np.float64)
        v = np.clip(0.8 + 0.1 * np.sin(t / 5000) + rng.normal(0, 0.02, DAY), 0, 1)
        # An hour's batches, as a collector catching up on a backlog would commit them.
        for hour in range(24):
            part = slice(hour * 3600, (hour + 1) * 3600)
            store.commit(Batch(HOST, "server_log", "/l", [Sample(METRIC, "", a, b) for a, b in
                                                          zip(t[part].tolist(), v[part].tolist(), strict=True)]))
    return time.perf_counter() - started


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    fn()  # warm the page cache and the code paths once
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - started) * 1000)
    return statistics.median(runs), min(runs)


def handler_work(store: Store, use_rollup: bool) -> Callable[[], object]:
    def work() -> object:
        (t, v), _ = read_points(store, HOST, METRIC, max_points=2000, use_rollup=use_rollup)
        return as_pairs(*downsample(t, v, 2000))
    return work


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--database", help="default: a SQLite file in a temp dir; or postgresql://...")
    args = parser.parse_args()
    database = args.database or str(Path(tempfile.mkdtemp(prefix="kvwatch-bench-")) / "kvwatch.db")
    store = open_store(database)
    if store.extent(HOST, METRIC) is None:
        fill_s = fill(store, args.days)
        print(f"store: {database.split('@')[-1]}; {args.days * DAY:,} points inserted in {fill_s:.1f} s")
    else:  # a store filled by an earlier run (pass --database): measure again without refilling
        print(f"store: {database.split('@')[-1]}; reusing {len(store.series(HOST, METRIC)[0]):,} stored points")
    rollup = timed(handler_work(store, True), args.repeat)
    naive = timed(handler_work(store, False), args.repeat)
    config = Config(server=ServerConfig(), hosts=(HostConfig(name=HOST, ssh="local", server_log="/l"),))
    with TestClient(create_app(Services(config=config, store=store), manage_collectors=False)) as client:
        def request() -> object:
            body = client.get("/api/series", params={"host": HOST, "metric": METRIC, "max_points": 2000}).json()
            assert 0 < len(body["points"]) <= 2000
            return body
        http = timed(request, args.repeat)
    print(f"{'path':<34}{'median ms':>10}{'best ms':>10}")
    print(f"{'rollup (handler work)':<34}{rollup[0]:>10.1f}{rollup[1]:>10.1f}")
    print(f"{'naive raw + MinMaxLTTB':<34}{naive[0]:>10.1f}{naive[1]:>10.1f}")
    print(f"{'rollup, full HTTP in-process':<34}{http[0]:>10.1f}{http[1]:>10.1f}")
    print(f"speed-up naive/rollup (median): {naive[0] / rollup[0]:.0f}x")
    store.close()


if __name__ == "__main__":
    main()
