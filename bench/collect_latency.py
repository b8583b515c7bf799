"""Append-to-arrival latency over a real sshd, one host: a line is appended, how long until it is in?

The writer appends an SGLang decode line every 20-80 ms (random). Runs, one after the other in one
process, against one sshd:
- HostFollower modes (collectors/host.py): arrival = the sink has the line (nothing parsed or stored);
  the `tail -F` wake-up stream (default) and plain polling;
- the app's HostCollector (app/pipeline/collector.py, what `kvwatch serve` runs, its default
  interval): arrival = the sample's store commit returned (SQLite; `/api/series` sees it from then).
usage: PYTHONPATH=. python bench/collect_latency.py [N_LINES]
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench._collect import StampSink, WriteStamps, app_collector, app_store
from bench._sshd import pct, throwaway_sshd
from kvwatch.collectors.host import HostFollower, HostOptions, SourceSpec
from kvwatch.collectors.ssh.transport import SshTransport
from tests.fixtures.sshd import Sshd


def paced(log: Path, n: int, stamps: WriteStamps, arrived: Callable[[], int]) -> tuple[float, float]:
    """Append n lines at a random 20-80 ms pace; wall and CPU seconds until all arrived (or 10 s)."""
    cpu0, t0 = time.process_time(), time.monotonic()
    for i in range(1, n + 1):
        stamps.append(log, i)
        time.sleep(random.uniform(0.02, 0.08))
    deadline = time.monotonic() + 10
    while arrived() < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return time.monotonic() - t0, time.process_time() - cpu0


def summary(mode: str, n: int, stamps: WriteStamps, wall: float, cpu: float) -> dict[str, object]:
    ms = [x * 1000 for x in stamps.latencies]
    return {"mode": mode, "lines": n, "arrived": len(ms), "p50_ms": round(pct(ms, 0.5), 2),
            "p95_ms": round(pct(ms, 0.95), 2), "max_ms": round(max(ms), 2),
            "client_cpu_pct": round(100 * cpu / wall, 1), "load_avg": os.getloadavg()[0]}


def follower_run(mode: str, options: HostOptions, n: int, server: Sshd) -> dict[str, object]:
    log = server.dir / f"follower-{len(mode)}-{time.monotonic_ns()}.log"
    log.write_bytes(b"")
    stamps = WriteStamps()
    target = server.target()
    follower = HostFollower("h", lambda: SshTransport(target).connect(),
                            [SourceSpec("server_log", str(log))], StampSink(stamps), options).start()
    time.sleep(1.5)  # connected, watch stream up
    wall, cpu = paced(log, n, stamps, lambda: len(stamps.latencies))
    follower.stop()
    return summary(mode, n, stamps, wall, cpu)


def app_run(n: int, server: Sshd) -> dict[str, object]:
    log = server.dir / f"app-{time.monotonic_ns()}.log"
    log.write_bytes(b"")
    stamps = WriteStamps()
    store = app_store(server.dir / f"app-{time.monotonic_ns()}.db", stamps)
    collector = app_collector("h", server, store, log)
    collector.start()
    time.sleep(1.5)
    wall, cpu = paced(log, n, stamps, lambda: len(stamps.latencies))
    collector.stop()
    stored = len(store.series("h", "running_req")[0])
    store.close()
    return {**summary("app HostCollector -> SQLite commit", n, stamps, wall, cpu), "samples_stored": stored}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    modes = {
        "HostFollower tail -F wake-up (default)": HostOptions(poll_interval=1.0),
        "HostFollower poll every 100 ms, no wake-up": HostOptions(poll_interval=0.1, wake=False),
        "HostFollower poll every 500 ms, no wake-up": HostOptions(poll_interval=0.5, wake=False),
    }
    with throwaway_sshd() as server:
        print(json.dumps(app_run(n, server)), flush=True)
        for mode, options in modes.items():
            print(json.dumps(follower_run(mode, options, n, server)), flush=True)


if __name__ == "__main__":
    main()
