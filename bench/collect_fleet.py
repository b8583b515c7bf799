"""Many hosts from one process: N HostFollowers (own SSH connection each) to one real sshd, each
following a server log, an output file and the GPU loop (a fake nvidia-smi: no GPU here).

usage: PYTHONPATH=. python bench/collect_fleet.py [HOSTS] [SECONDS]
Reports kvwatch's CPU (% of one core, per host), RSS, and append-to-receipt p50/p95 for the
server-log lines; the sshd side (all sessions and their tail/nvidia-smi children) is reported
separately because on a real fleet it runs on the GPU hosts, not here.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from bench._sshd import pct, throwaway_sshd
from collectors.base import Line
from collectors.host import HostFollower, HostOptions, SourceSpec
from collectors.ssh import SshTransport
from collectors.tail_state import TailState

FAKE_NVIDIA_SMI = """#!/bin/sh
i=0
while :; do
  for g in 0 1 2 3 4 5 6 7; do
    printf '2026/12/02 14:53:%02d.174, %d, 97, 39287, 81559, 687.74, 61\\n' $((i % 60)) $g
  done
  i=$((i + 1)); sleep 1
done
"""


class FleetSink:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.counts: dict[str, int] = {}
        self.by_host: dict[str, list[float]] = {}

    def load_state(self, host: str, kind: str, path: str) -> TailState | None:
        return None

    def deliver(self, host: str, kind: str, path: str, lines: list[Line], state: TailState | None) -> None:
        now = time.monotonic()
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + len(lines)
            if kind == "server_log":
                lat = [now - float(line.text.split()[1]) for line in lines]
                self.latencies.extend(lat)
                self.by_host.setdefault(host, []).extend(lat)


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int) -> float:
    """CPU of root's descendants, alive ones (enough for a steady-state window)."""
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            total += proc_cpu(pid) if pid != root else 0.0
        except OSError:
            continue
        todo.extend(int(k) for k in kids)
    return total


def status_kb(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1])
    return 0


def writer(dirs: list[Path], stop: threading.Event) -> None:
    tick = 0
    payload = '{"text": "' + "y" * 2000 + '"}'
    while not stop.is_set():
        for d in dirs:
            with open(d / "server.log", "a") as handle:
                handle.write(f"{tick:08d} {time.monotonic():.6f} Decode batch. #running-req: 233\n")
            if tick % 2 == 0:
                with open(d / "out" / "raw_responses.jsonl", "a") as handle:
                    handle.write(payload + "\n")
        tick += 1
        stop.wait(0.5)


def main() -> None:
    hosts = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 30
    with throwaway_sshd() as server:
        (server.bin_dir / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
        (server.bin_dir / "nvidia-smi").chmod(0o755)
        sink, dirs, followers = FleetSink(), [], []
        rss0 = status_kb("VmRSS")
        target = server.target()
        t_connect = time.monotonic()
        for i in range(hosts):
            d = server.dir / f"host{i}"
            (d / "out").mkdir(parents=True)
            (d / "server.log").touch()
            (d / "out" / "raw_responses.jsonl").touch()
            dirs.append(d)
            sources = [SourceSpec("server_log", str(d / "server.log")),
                       SourceSpec("outputs", str(d / "*" / "raw_responses.jsonl"))]
            followers.append(HostFollower(f"h{i}", lambda: SshTransport(target).connect(), sources, sink,
                                          HostOptions(poll_interval=2.0, gpu=True, glob_interval=30)).start())
            # staggered: all the "hosts" share this machine's 2 cores with kvwatch and 7 other jobs;
            # 64 key exchanges at once would measure the box, not the collector
            time.sleep(0.1)
        while sum(f.health.state == "up" for f in followers) < hosts:
            time.sleep(0.2)
        connect_s = time.monotonic() - t_connect
        stop = threading.Event()
        threading.Thread(target=writer, args=(dirs, stop), daemon=True).start()
        time.sleep(20)  # warm-up: every watch stream started (a login shell per exec is slow under load)
        with sink.lock:
            sink.latencies.clear()
            sink.by_host.clear()
        cpu0, sshd0, t0 = time.process_time(), tree_cpu(server.proc.pid), time.monotonic()
        time.sleep(seconds)
        wall = time.monotonic() - t0
        cpu, sshd_cpu = time.process_time() - cpu0, tree_cpu(server.proc.pid) - sshd0
        threads = threading.active_count()
        rss = status_kb("VmRSS")
        if os.environ.get("KVWATCH_BENCH_DEBUG"):
            for h, lat in sorted(sink.by_host.items()):
                print(h, len(lat), round(1000 * pct(lat, 0.5)), round(1000 * pct(lat, 0.95)))
        stop.set()
        for f in followers:
            f.stop()
        ms = [x * 1000 for x in sink.latencies]
        print(json.dumps({
            "hosts": hosts, "seconds": round(wall, 1), "connect_all_s": round(connect_s, 1),
            "threads": threads,
            "kvwatch_cpu_pct_of_one_core": round(100 * cpu / wall, 1),
            "kvwatch_cpu_pct_per_host": round(100 * cpu / wall / hosts, 2),
            "rss_mb": round(rss / 1024), "rss_growth_mb": round((rss - rss0) / 1024),
            "peak_rss_mb": round(status_kb("VmHWM") / 1024),
            "server_lines": len(ms), "p50_ms": round(pct(ms, 0.5), 1), "p95_ms": round(pct(ms, 0.95), 1),
            "lines_by_kind": sink.counts,
            "sshd_side_cpu_pct_of_one_core": round(100 * sshd_cpu / wall, 1),
            "load_avg": os.getloadavg()[0],
        }), flush=True)


if __name__ == "__main__":
    main()
