"""How long one alert evaluation takes on a long run, against the 1 s interval it runs at.

A day of SGLang decode lines (one a second: token usage, queue, running, gen throughput) in a real
SqliteStore; then: the first evaluation after a kvwatch start (reads whole series once), and a
steady tick with 1 s of new lines. Run: `python bench/alerts_tick.py [--hours H]`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from kvwatch.app.alerts.engine import AlertEngine
from kvwatch.app.alerts.rules import DEFAULT_RULES
from kvwatch.app.config import HostConfig
from kvwatch.app.store.base import Batch, EventRow, Sample
from kvwatch.app.store.sqlite import SqliteStore

T0 = 1_771_937_354.0
HOST = HostConfig(name="gpu1", ssh="local", server_log="/l", client_log="/c", outputs=("/o/*",))


def fill(store: SqliteStore, seconds: int) -> None:
    rng = np.random.default_rng(1)
    usage = np.clip(0.85 + rng.normal(0, 0.05, seconds), 0, 1)
    store.commit(Batch("gpu1", "server_log", "/l", events=[EventRow("event", T0, 1, {"event": "ready"})]))
    for lo in range(0, seconds, 10_000):
        hi = min(seconds, lo + 10_000)
        samples = []
        for i in range(lo, hi):
            t = T0 + 1 + i
            samples += [
                Sample("token_usage", "", t, float(usage[i])),
                Sample("queue_req", "", t, float(i % 50)),
                Sample("running_req", "", t, 64.0),
                Sample("gen_throughput", "", t, 1000.0 + i % 97),
            ]
        store.commit(Batch("gpu1", "server_log", "/l", samples=samples))


def tick(store: SqliteStore, engine: AlertEngine, t: float) -> float:
    line = [
        Sample("token_usage", "", t, 0.9),
        Sample("queue_req", "", t, 3.0),
        Sample("running_req", "", t, 64.0),
        Sample("gen_throughput", "", t, 1000.0),
    ]
    store.commit(Batch("gpu1", "server_log", "/l", samples=line))
    start = time.perf_counter()
    engine.evaluate()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--ticks", type=int, default=200)
    args = parser.parse_args()
    seconds = int(args.hours * 3600)
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(str(Path(tmp) / "kvwatch.db"))
        fill(store, seconds)
        engine = AlertEngine(store, [HOST], {"gpu1": DEFAULT_RULES})
        start = time.perf_counter()
        engine.evaluate()
        first = time.perf_counter() - start
        times = [tick(store, engine, T0 + seconds + 1 + i) for i in range(args.ticks)]
        store.close()
    steady = statistics.median(times)
    print(f"{args.hours:g} h of decode lines ({seconds * 4} samples), 10 rules, 1 host")
    print(f"first evaluation after start: {first * 1000:.1f} ms")
    print(
        f"steady tick: median {steady * 1000:.2f} ms, p95 {np.percentile(times, 95) * 1000:.2f} ms "
        f"= {steady / 1.0:.4f} of the 1 s evaluation interval"
    )


if __name__ == "__main__":
    main()
