"""Append-to-receipt latency over a real sshd: a line is appended, how long until the sink has it?

Writer appends one line every 20-80 ms (random) carrying its CLOCK_MONOTONIC write time; the
sink notes the receipt time. Modes: the tail -F wake-up stream (default) and plain polling.
usage: PYTHONPATH=. python bench/collect_latency.py [N_LINES]
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from bench._sshd import pct, throwaway_sshd
from collectors.base import Line
from collectors.host import HostFollower, HostOptions, SourceSpec
from collectors.ssh import SshTransport
from collectors.tail_state import TailState


class LatencySink:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.count = 0

    def load_state(self, host: str, kind: str, path: str) -> TailState | None:
        return None

    def deliver(self, host: str, kind: str, path: str, lines: list[Line], state: TailState | None) -> None:
        now = time.monotonic()
        for line in lines:
            self.latencies.append(now - float(line.text.split()[1]))
        self.count += len(lines)


def run(mode: str, options: HostOptions, n: int, server: object, workdir: Path) -> dict[str, object]:
    log = workdir / f"{mode}.log"
    log.write_bytes(b"")
    sink = LatencySink()
    target = server.target()  # type: ignore[attr-defined]
    follower = HostFollower("h", lambda: SshTransport(target).connect(),
                            [SourceSpec("server_log", str(log))], sink, options).start()
    time.sleep(1.5)  # connected, watch stream up
    cpu0 = time.process_time()
    t0 = time.monotonic()
    with open(log, "a") as handle:
        for i in range(n):
            handle.write(f"{i:08d} {time.monotonic():.6f} Decode batch. #running-req: 1\n")
            handle.flush()
            time.sleep(random.uniform(0.02, 0.08))
    deadline = time.monotonic() + 10
    while sink.count < n and time.monotonic() < deadline:
        time.sleep(0.05)
    wall = time.monotonic() - t0
    cpu = time.process_time() - cpu0
    follower.stop()
    ms = [x * 1000 for x in sink.latencies]
    return {"mode": mode, "lines": n, "received": sink.count, "p50_ms": round(pct(ms, 0.5), 2),
            "p95_ms": round(pct(ms, 0.95), 2), "max_ms": round(max(ms), 2),
            "client_cpu_pct": round(100 * cpu / wall, 1)}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    modes = {
        "tail -F wake-up (default)": HostOptions(poll_interval=1.0),
        "poll every 100 ms, no wake-up": HostOptions(poll_interval=0.1, wake=False),
        "poll every 500 ms, no wake-up": HostOptions(poll_interval=0.5, wake=False),
    }
    with throwaway_sshd() as server:
        for mode, options in modes.items():
            print(json.dumps(run(mode, options, n, server, server.dir)), flush=True)


if __name__ == "__main__":
    main()
