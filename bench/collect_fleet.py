"""Many hosts from one process: N collectors (own SSH connection each) to one real sshd, each
following a server log, an output-file glob and the GPU loop (a fake nvidia-smi: no GPU here).

usage: PYTHONPATH=. python bench/collect_fleet.py [HOSTS] [SECONDS] [both|follower|app] [GPU_INTERVAL_S]
`follower` = collectors.host.HostFollower with a sink that keeps nothing (arrival = delivered);
`app` = app.pipeline.collector.HostCollector as `kvwatch serve` runs it, all hosts into one SQLite
store (arrival = the commit returned). `both` (default) runs each in its own process, back to back,
so RSS and CPU are each collector's own. Reports kvwatch's CPU (% of one core, per host), RSS, and
append-to-arrival p50/p95 for the server-log lines; the sshd side (all sessions and their
tail/nvidia-smi children) is reported separately because on a real fleet it runs on the GPU hosts.
GPU_INTERVAL_S is every host's `gpu_interval` (the nvidia-smi loop's interval); `auto` (the default) leaves
it unset, as a kvwatch.toml that does not name it: 1 s, or 5 s in a process collecting more than 64 hosts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from bench._appender import appending
from bench._collect import (
    StampSink,
    WriteStamps,
    app_collector,
    app_store,
    install_fake_nvidia_smi,
    machine_busy_s,
    status_kb,
    tree_cpu,
)
from bench._sshd import pct, throwaway_sshd
from kvwatch.collectors.host import HostFollower, HostOptions, SourceSpec
from kvwatch.collectors.ssh.transport import SshTransport
from tests.fixtures.sshd import Sshd


class Collector(Protocol):
    health: Any

    def stop(self, timeout: float = ...) -> None: ...


def host_dirs(server: Sshd, hosts: int) -> list[Path]:
    dirs = []
    for i in range(hosts):
        d = server.dir / f"host{i}"
        (d / "out").mkdir(parents=True)
        (d / "server.log").touch()
        (d / "out" / "raw_responses.jsonl").touch()
        dirs.append(d)
    return dirs


GPU_INTERVAL_S = float(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] != "auto" else None


def follower_gpu_s(hosts: int) -> float:
    """The follower has no config: the interval the app would pick (app/pipeline/collector.gpu_sample_s)."""
    return GPU_INTERVAL_S if GPU_INTERVAL_S is not None else (5.0 if hosts > 64 else 1.0)


def start_followers(server: Sshd, dirs: list[Path], stamps: WriteStamps) -> tuple[list[Collector], Any]:
    sink, target = StampSink(stamps), server.target()
    followers: list[Collector] = []
    for i, d in enumerate(dirs):
        sources = [SourceSpec("server_log", str(d / "server.log")),
                   SourceSpec("outputs", str(d / "*" / "raw_responses.jsonl"))]
        followers.append(HostFollower(f"h{i}", lambda: SshTransport(target).connect(), sources, sink,
                                      HostOptions(poll_interval=2.0, gpu=True, glob_interval=30,
                                                  gpu_sample_s=follower_gpu_s(len(dirs)))).start())
        # staggered: all the "hosts" share this machine's 2 cores with kvwatch and 7 other jobs;
        # 64 key exchanges at once would measure the box, not the collector
        time.sleep(0.1)
    return followers, sink


def start_app(server: Sshd, dirs: list[Path], stamps: WriteStamps) -> tuple[list[Collector], Any]:
    from kvwatch.app.bus import EventBus

    try:
        from kvwatch.app.pipeline.switching import fit_switch_interval
    except ImportError:  # a baseline from before it existed
        pass
    else:
        fit_switch_interval(len(dirs))  # as Services.start_collectors does in `kvwatch serve`
    store, bus = app_store(server.dir / "kvwatch.db", stamps), EventBus()  # shared, as in `kvwatch serve`
    collectors: list[Collector] = []
    for i, d in enumerate(dirs):
        collector = app_collector(f"h{i}", server, store, d / "server.log", bus,
                                  outputs=(str(d / "*" / "raw_responses.jsonl"),), gpu=True,
                                  gpu_interval=GPU_INTERVAL_S, fleet_hosts=len(dirs))
        collector.start()
        collectors.append(collector)
        time.sleep(0.1)  # staggered, as above
    return collectors, store


def measure(kind: str, hosts: int, seconds: float) -> dict[str, object]:
    stamps = WriteStamps()
    with throwaway_sshd() as server:
        install_fake_nvidia_smi(server)
        dirs = host_dirs(server, hosts)
        rss0, t_connect = status_kb("VmRSS"), time.monotonic()
        start = start_app if kind == "app" else start_followers
        running, counter = start(server, dirs, stamps)
        while sum(c.health.state == "up" for c in running) < hosts:
            time.sleep(0.2)
        connect_s = time.monotonic() - t_connect
        with appending(dirs, server.dir / "appended.txt") as writes:
            result, window_end = measured(kind, hosts, seconds, server, counter, stamps, rss0)
        time.sleep(10)  # the window's last lines arrive: counting only those reached by then would drop the slowest
        stamps.settle([w for w in writes if w[2] <= window_end])
        stopping = time.monotonic()
        for c in running:  # all asked first: one by one, each waits out its loop's current wait
            getattr(c, "request_stop", lambda: None)()  # (a baseline from before it existed: one by one)
        for c in running:
            c.stop()
        stop_s = time.monotonic() - stopping
    ms = [x * 1000 for x in stamps.latencies]
    if os.environ.get("KVWATCH_BENCH_DEBUG"):
        for path, lat in sorted(stamps.by_path.items()):
            print(path, len(lat), round(1000 * pct(lat, 0.5)), round(1000 * pct(lat, 0.95)))
    return {**result, "connect_all_s": round(connect_s, 1), "stop_all_s": round(stop_s, 1), "server_lines": len(ms),
            "p50_ms": round(pct(ms, 0.5), 1), "p95_ms": round(pct(ms, 0.95), 1)}


def measured(kind: str, hosts: int, seconds: float, server: Sshd, counter: Any, stamps: WriteStamps,
             rss0: int) -> tuple[dict[str, object], float]:
    """CPU, memory and what arrived over `seconds` after a warm-up, and when that window ended (the
    latencies of the lines appended in it are settled later)."""
    time.sleep(20)  # warm-up: every watch stream started (a login shell per exec is slow under load)
    # the sshd tree is slow to read in a process whose interpreter lock is busy: outside the timed window
    sshd0 = tree_cpu(server.proc.pid)
    stamps.reset()
    counts0, cpu0, t0 = dict(counter.counts), time.process_time(), time.monotonic()
    busy0 = machine_busy_s()
    time.sleep(seconds)
    cpu, t1, counts = time.process_time() - cpu0, time.monotonic(), dict(counter.counts)
    wall, busy = t1 - t0, machine_busy_s() - busy0
    sshd_cpu, rss = tree_cpu(server.proc.pid) - sshd0, status_kb("VmRSS")
    return {
        "collector": kind, "hosts": hosts, "gpu_interval_s": GPU_INTERVAL_S or "auto", "seconds": round(wall, 1),
        "threads": threading.active_count(),
        "kvwatch_cpu_pct_of_one_core": round(100 * cpu / wall, 1),
        "kvwatch_cpu_pct_per_host": round(100 * cpu / wall / hosts, 2),
        "rss_mb": round(rss / 1024), "rss_growth_mb": round((rss - rss0) / 1024),
        "peak_rss_mb": round(status_kb("VmHWM") / 1024),
        # follower: lines delivered by kind; app: rows (samples + events) committed by source
        "arrived_by_kind": {k: v - counts0.get(k, 0) for k, v in counts.items()},
        "sshd_side_cpu_pct_of_one_core": round(100 * sshd_cpu / wall, 1),
        # everything on this machine but kvwatch: the hosts' side with its short-lived processes (a stat
        # a poll where the host has no perl), the appender, the kernel's share; sshd_side misses the exited
        "machine_cpu_pct_of_one_core": round(100 * busy / wall, 1),
        "others_cpu_pct_of_one_core": round(100 * (busy - cpu) / wall, 1),
        "load_avg": os.getloadavg()[0],
        "inotify_max_user_instances": int(Path("/proc/sys/fs/inotify/max_user_instances").read_text()),
    }, t1


def main() -> None:
    hosts = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 30
    which = sys.argv[3] if len(sys.argv) > 3 else "both"
    if which != "both":
        print(json.dumps(measure(which, hosts, seconds)), flush=True)
        return
    results = []
    for kind in ("follower", "app"):
        argv = [sys.executable, __file__, str(hosts), str(seconds), kind, str(GPU_INTERVAL_S or "auto")]
        env = {**os.environ, "PYTHONPATH": "."}
        out = subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True, env=env).stdout
        print(out, end="", flush=True)
        results.append(json.loads(out.strip().splitlines()[-1]))
    follower, app = results
    print(json.dumps({"app_vs_follower": {
        key: round(float(app[key]) / max(float(follower[key]), 1e-9), 2)
        for key in ("kvwatch_cpu_pct_of_one_core", "rss_mb", "p50_ms", "p95_ms")}}), flush=True)


if __name__ == "__main__":
    main()
