"""A fleet split across `kvwatch collect --only` processes on one SQLite store, against one process.

Every collector thread of one process shares one interpreter lock, and at 256 hosts a line's time is
mostly spent waiting for it (bench/fleet_phases.py). `collect --only` runs a part of the fleet per
process (each with a lock of its own) on a shared store. This bench runs HOSTS hosts (a server log,
an output glob and the GPU loop each, over one real sshd, as bench/collect_process.py) as 1 and as
PROCESSES processes, one after the other in one invocation, and reports for each: the processes' CPU
and RSS summed, and append->visible latency: a line counts as arrived when a
reader of the store sees the server log's stored offset at or past its end (polled every 50 ms, so
up to 50 ms later than the commit).

usage: PYTHONPATH=. python bench/collect_split.py [HOSTS] [SECONDS] [PROCESSES]
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

from bench._appender import appending
from bench._collect import WriteStamps, proc_cpu, status_kb, tree_cpu
from bench._sshd import pct
from bench.collect_process import fleet_on_sshd, hosts_with_rows

CONNECT_TIMEOUT_S = 300.0
WARM_UP_S = 20.0
POLL_S = 0.05


def watch_offsets(db: Path, stamps: WriteStamps, stop: threading.Event) -> None:
    """Report every server log's stored offset as it moves (what any reader of the store sees)."""
    seen: dict[str, int] = {}
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)) as conn:
        while not stop.wait(POLL_S):
            rows = conn.execute("SELECT path, state FROM tail_state WHERE source = 'server_log'").fetchall()
            for path, state in rows:
                offset = int(json.loads(state).get("offset", 0))
                if seen.get(path) != offset:
                    seen[path] = offset
                    stamps.reached(path, offset)


def start(config: Path, names: list[str], processes: int, cwd: Path) -> list[subprocess.Popen[bytes]]:
    parts = [names[i::processes] for i in range(processes)]
    argv = [sys.executable, "-m", "kvwatch.app", "collect", "--config", str(config)]
    procs = []
    for part in parts:
        procs.append(subprocess.Popen(argv + (["--only", ",".join(part)] if processes > 1 else []), cwd=cwd,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(3)  # the first creates the store's schema; the others open it made
    return procs


def measure(hosts: int, seconds: float, processes: int) -> dict[str, object]:
    with fleet_on_sshd(hosts) as (server, dirs, db, config):
        procs = start(config, [f"h{i}" for i in range(hosts)], processes, server.dir)
        stamps, stop = WriteStamps(), threading.Event()
        try:
            t_connect = time.monotonic()
            with appending(dirs, server.dir / "appended.txt") as writes:
                while time.monotonic() - t_connect < CONNECT_TIMEOUT_S:
                    time.sleep(2)
                    if db.exists() and hosts_with_rows(db) == hosts:
                        break
                connect_s = time.monotonic() - t_connect
                threading.Thread(target=watch_offsets, args=(db, stamps, stop), daemon=True).start()
                time.sleep(WARM_UP_S)
                cpu0, sshd0 = sum(proc_cpu(p.pid) for p in procs), tree_cpu(server.proc.pid)
                stamps.reset()
                t0 = time.monotonic()
                time.sleep(seconds)
                t1 = time.monotonic()
                cpu, sshd_cpu = sum(proc_cpu(p.pid) for p in procs) - cpu0, tree_cpu(server.proc.pid) - sshd0
                rss = sum(status_kb("VmRSS:", p.pid) for p in procs)
            time.sleep(10)  # the window's last lines arrive
            stop.set()
            stamps.settle([w for w in writes if w[2] <= t1])
            stored = hosts_with_rows(db)
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
    ms = [x * 1000 for x in stamps.latencies]
    wall = t1 - t0
    return {
        "hosts": hosts, "processes": processes, "seconds": round(wall, 1), "connect_s": round(connect_s, 1),
        "kvwatch_cpu_pct_of_one_core": round(100 * cpu / wall, 1), "rss_mb_sum": round(rss / 1024),
        "server_lines": len(ms), "p50_ms": round(pct(ms, 0.5), 1), "p95_ms": round(pct(ms, 0.95), 1),
        "hosts_with_rows": stored, "sshd_side_cpu_pct_of_one_core": round(100 * sshd_cpu / wall, 1),
        "load_avg": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    hosts = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 30
    processes = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    for count in (1, processes):
        print(json.dumps(measure(hosts, seconds, count)), flush=True)


if __name__ == "__main__":
    main()
