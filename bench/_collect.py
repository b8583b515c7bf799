"""Shared by the collection benchmarks: timed writers, the two collectors under test, process figures.

Latency is measured by byte offset, not by text: the writer notes the end offset of every line it
appends and when; whoever receives lines (a HostFollower sink) or commits them (the app's store,
through `TimedStore`) reports the offset it has reached, and every line up to there is done. So
both collectors read the same SGLang decode lines, and the app's parser sees real input.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvwatch.collectors.base import Line
from kvwatch.collectors.lines import TailState
from kvwatch.simulator.logfmt import DEFAULT_VERSION, VERSIONS, decode_line
from tests.fixtures.sshd import Sshd

if TYPE_CHECKING:  # the app is imported only where it runs: a HostFollower process stays as small as before
    from kvwatch.app.bus import EventBus
    from kvwatch.app.pipeline.collector import HostCollector
    from kvwatch.app.store import Batch, Store

# One process a host for the whole loop, as nvidia-smi's own -lms loop is. A shell loop forking `sleep`
# every second, times 256 fake hosts on this one machine, was 58 % system time and a load of 40-80 that
# the collector under test had to share (a real fleet's GPU hosts carry their nvidia-smi themselves).
# Its loop interval is the one asked for (`-lms N`), as nvidia-smi's is; 1 s when not given.
FAKE_NVIDIA_SMI = """#!/bin/sh
exec perl -e 'my $ms = 1000; for my $k (0 .. $#ARGV - 1) { $ms = $ARGV[$k + 1] if $ARGV[$k] eq "-lms" }
$| = 1; for (my $i = 0; ; $i++) {
  printf("2026/12/02 14:53:%02d.174, %d, 97, 39287, 81559, 687.74, 61\\n", $i % 60, $_) for 0 .. 7;
  select(undef, undef, undef, $ms / 1000);
}' -- "$@"
"""


def sglang_line(n: int) -> bytes:
    """An SGLang 0.5.23 decode line; its #running-req is n."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    body = decode_line(VERSIONS[DEFAULT_VERSION], n, 153179, 0.5 + n % 40 / 100, 900.0 + n, 7, True)
    return f"[{stamp}] {body}\n".encode()


class WriteStamps:
    """End offset and CLOCK_MONOTONIC write time of every appended line, per path."""

    def __init__(self) -> None:
        self.lock = threading.RLock()  # bench/fleet_phases.py holds it around `reached`
        self.pending: dict[str, deque[tuple[int, float]]] = {}
        self.latencies: list[float] = []
        self.by_path: dict[str, list[float]] = {}
        self.arrivals: list[tuple[str, int, float]] = []  # every report: path, offset reached, when
        self.since = time.monotonic()  # the last reset

    def append(self, path: Path, n: int) -> None:
        """Append decode line n to path and note when."""
        with open(path, "ab") as handle:
            handle.write(sglang_line(n))
            handle.flush()
            end, t = handle.tell(), time.monotonic()
        with self.lock:
            self.pending.setdefault(str(path), deque()).append((end, t))

    def reached(self, path: str, offset: int) -> None:
        """Everything of `path` up to `offset` has arrived (been delivered or committed) now."""
        now = time.monotonic()
        with self.lock:
            self.arrivals.append((path, offset, now))
            queue = self.pending.get(path)
            while queue and queue[0][0] <= offset:
                latency = now - queue.popleft()[1]
                self.latencies.append(latency)
                self.by_path.setdefault(path, []).append(latency)

    def reset(self) -> None:
        with self.lock:
            self.latencies.clear()
            self.by_path.clear()
            self.arrivals.clear()
            self.since = time.monotonic()

    def settle(self, writes: list[tuple[str, int, float]]) -> list[tuple[float, int]]:
        """Latencies of lines another process appended (`writes`: path, end offset, when), from the
        arrivals reported since `reset`: a line arrived with the first report at or past its end made
        after it was written. Lines written before the reset or never reached are not counted (so give
        the last ones time to arrive).
        Returns (write time, index into `arrivals`) for every counted line."""
        with self.lock:
            arrivals, since = list(self.arrivals), self.since
        by_path: dict[str, list[int]] = {}
        for i, (path, _, _) in enumerate(arrivals):
            by_path.setdefault(path, []).append(i)
        matched = []
        for path, end, written in writes:
            if written < since:
                continue
            index = next((i for i in by_path.get(path, ())
                          if arrivals[i][1] >= end and arrivals[i][2] >= written), None)
            if index is None:
                continue
            latency = arrivals[index][2] - written
            self.latencies.append(latency)
            self.by_path.setdefault(path, []).append(latency)
            matched.append((written, index))
        return matched


class StampSink:
    """A HostFollower sink that keeps nothing: it only notes what arrived (and counts by kind)."""

    def __init__(self, stamps: WriteStamps) -> None:
        self.stamps = stamps
        self.counts: dict[str, int] = {}

    def load_state(self, host: str, kind: str, path: str) -> TailState | None:
        return None

    def deliver(self, host: str, kind: str, path: str, lines: list[Line], state: TailState | None) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + len(lines)
        if kind == "server_log" and lines:
            self.stamps.reached(path, lines[-1].offset)

    def idle(self, host: str, kind: str, path: str) -> None:
        return None


class TimedStore:
    """The app's real store; a server-log batch's lines count as arrived once its commit returned
    (from then on `Store.series` and `/api/series` return them)."""

    def __init__(self, store: Store, stamps: WriteStamps) -> None:
        self.store = store
        self.stamps = stamps
        self.counts: dict[str, int] = {}

    def commit(self, batch: Batch) -> None:
        self.store.commit(batch)
        self.counts[batch.source] = self.counts.get(batch.source, 0) + len(batch.samples) + len(batch.events)
        if batch.source == "server_log" and batch.state:
            self.stamps.reached(batch.path, int(batch.state["offset"]))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def app_store(database: Path, stamps: WriteStamps) -> TimedStore:
    from kvwatch.app.store import open_store

    return TimedStore(open_store(str(database)), stamps)


def app_collector(name: str, server: Sshd, store: TimedStore, server_log: Path, bus: EventBus | None = None,
                  outputs: tuple[str, ...] = (), gpu: bool = False, gpu_interval: float | None = None,
                  fleet_hosts: int = 1) -> HostCollector:
    """A HostCollector exactly as `kvwatch serve` builds it (app/build.py), over real sshd, in a process
    collecting `fleet_hosts` hosts. `gpu_interval` None: the host's table leaves it unset."""
    from kvwatch.app.bus import EventBus
    from kvwatch.app.config import HostConfig
    from kvwatch.app.pipeline.collector import HostCollector

    table: dict[str, Any] = {"gpu_interval": gpu_interval} if gpu_interval is not None else {}
    host = HostConfig(name=name, ssh=server.spec, identity_file=server.key_path,
                      known_hosts=server.known_hosts_path, server_log=str(server_log), outputs=outputs, gpu=gpu,
                      **table)
    return HostCollector(host, store, bus or EventBus(), HostConfig.open_transport,  # type: ignore[arg-type]
                         fleet_hosts=fleet_hosts)


def install_fake_nvidia_smi(server: Sshd) -> None:
    (server.bin_dir / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
    (server.bin_dir / "nvidia-smi").chmod(0o755)


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


def machine_busy_s() -> float:
    """CPU seconds this machine's cores have been busy (all processes, exited ones included)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def status_kb(key: str, pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1])
    return 0
