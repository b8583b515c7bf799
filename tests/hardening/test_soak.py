"""Soak: several hosts (local, and one over the real sshd) written at a high line rate, with rename
and copytruncate rotations, `kill -9` of the `kvwatch collect` process and dropped SSH sessions at
random moments. Afterwards the store holds every written line exactly once, and the collector's RSS
(sampled once a second) stays flat.

Copytruncate is quiesced: the soak truncates once the tail has caught up (it was written when the tail
read the new generation from 0 and lost the unread rest). The tail now drains that rest from the copy
(collectors/tail_copies.py); copytruncate with unread lines is tested in
tests/collectors/test_host.py::test_live_copytruncate_loses_nothing.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.store import open_store
from tests.app.slice_helpers import decode_line

SOAK_SECONDS = float(os.environ.get("KVWATCH_SOAK_SECONDS", "90"))
QUIET_TAIL_S = 25.0  # the last stretch runs without faults: one process lives long enough to read its RSS
LINES_PER_BATCH = 60
BATCH_PERIOD_S = 0.05  # 1200 lines/s a host
LOCAL_HOSTS = 3
SEED = 20261202


@dataclass
class Writer:
    name: str
    path: Path
    written: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def write_batch(self) -> None:
        with self.lock, self.path.open("a") as handle:
            first = self.written + 1
            handle.writelines(decode_line(n) for n in range(first, first + LINES_PER_BATCH))
            self.written += LINES_PER_BATCH

    def rename_rotate(self, generation: int) -> None:
        with self.lock:
            self.path.rename(self.path.with_name(f"server.log.{generation}"))

    def copytruncate(self, generation: int, caught_up: Any) -> None:
        with self.lock:
            caught_up(self)
            shutil.copyfile(self.path, self.path.with_name(f"server.log.{generation}"))
            os.truncate(self.path, 0)


def stored_counts(db: Path, hosts: list[str]) -> dict[str, list[float]]:
    store = open_store(str(db))
    try:
        return {h: list(store.series(h, "running_req")[1]) for h in hosts}
    finally:
        store.close()


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def config_text(tmp: Path, writers: list[Writer], sshd: Any) -> str:
    text = f"[server]\ndata_dir = '{tmp}'\n"
    for w in writers:
        if w.name.startswith("ssh"):
            text += (f"[[hosts]]\nname = '{w.name}'\nssh = '{sshd.spec}'\nidentity_file = '{sshd.key_path}'\n"
                     f"known_hosts = '{sshd.known_hosts_path}'\nserver_log = '{w.path}'\n")
        else:
            text += f"[[hosts]]\nname = '{w.name}'\nssh = 'local'\nserver_log = '{w.path}'\n"
    return text


class Collector:
    """`kvwatch collect` as a subprocess, killed with SIGKILL and started again."""

    def __init__(self, config: Path, log: Path) -> None:
        self.config, self.log = config, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.rss: list[tuple[float, int, int]] = []  # (t, pid, kib)
        self.kills = 0

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "kvwatch.app", "collect", "--config", str(self.config)],
                                         stdout=log, stderr=log)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)  # reaped: its pid no longer holds the hosts' lease
        self.kills += 1
        self.start()

    def sample(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            kib = rss_kib(self.proc.pid)
            if kib is not None:
                self.rss.append((time.monotonic(), self.proc.pid, kib))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)


@pytest.mark.sshd
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_soak_no_line_lost_or_doubled_under_kills_drops_and_rotations(tmp_path: Path, sshd: Any) -> None:
    rng = random.Random(SEED)
    writers = [Writer(f"local{i}", tmp_path / f"local{i}" / "server.log") for i in range(LOCAL_HOSTS)]
    writers.append(Writer("ssh0", tmp_path / "ssh0" / "server.log"))
    for w in writers:
        w.path.parent.mkdir()
        w.path.touch()
    config = tmp_path / "kvwatch.toml"
    config.write_text(config_text(tmp_path, writers, sshd))
    db = tmp_path / "kvwatch.db"
    collector = Collector(config, tmp_path / "collect.log")
    collector.start()
    names = [w.name for w in writers]

    def caught_up(writer: Writer, timeout: float = 120) -> None:  # generous: CI machines are shared
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if len(stored_counts(db, [writer.name])[writer.name]) >= writer.written:
                    return
            except Exception:  # the store may not exist yet
                pass
            time.sleep(0.2)
        raise AssertionError(f"{writer.name}: collector did not catch up for a copytruncate")

    faults = {"kill9": 0, "ssh_drop": 0, "rename": 0, "copytruncate": 0}
    stop = threading.Event()

    def write_loop(writer: Writer) -> None:
        while not stop.is_set():
            writer.write_batch()
            time.sleep(BATCH_PERIOD_S)

    threads = [threading.Thread(target=write_loop, args=(w,), daemon=True) for w in writers]
    for thread in threads:
        thread.start()
    start = time.monotonic()
    next_fault = start + rng.uniform(3, 6)
    generation = 0
    plan = ["kill9", "ssh_drop", "rename", "copytruncate"] * 2 + ["kill9", "rename"]
    rng.shuffle(plan)
    try:
        while time.monotonic() - start < SOAK_SECONDS:
            collector.sample()
            if time.monotonic() >= next_fault and time.monotonic() - start < SOAK_SECONDS - QUIET_TAIL_S:
                generation += 1
                fault = plan[(generation - 1) % len(plan)]
                if fault == "kill9":
                    collector.kill9()
                elif fault == "ssh_drop":
                    for pid in sshd.session_pids():
                        os.kill(pid, signal.SIGKILL)
                elif fault == "rename":
                    rng.choice(writers).rename_rotate(generation)
                else:
                    rng.choice(writers).copytruncate(generation, caught_up)
                faults[fault] += 1
                next_fault = time.monotonic() + rng.uniform(3, 7)
            time.sleep(1.0)
    except BaseException:
        collector.stop()  # a failing soak must not leave its `kvwatch collect` running for good
        raise
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    written = {w.name: w.written for w in writers}
    deadline = time.monotonic() + 120
    counts: dict[str, list[float]] = {}
    while time.monotonic() < deadline:
        collector.sample()
        counts = stored_counts(db, names)
        if all(len(counts[n]) >= written[n] for n in names):
            break
        time.sleep(1.0)
    time.sleep(2)  # anything late (a duplicate) would arrive now
    counts = stored_counts(db, names)
    collector.stop()
    last_pid = collector.rss[-1][1]
    last = [kib for _, pid, kib in collector.rss if pid == last_pid]
    report = {
        "seconds": SOAK_SECONDS, "written": sum(written.values()), "faults": faults,
        "rss_kib_last_process": (last[min(5, len(last) - 1)], max(last), last[-1]), "samples": len(last),
        "rss_kib_max_all": max(kib for _, _, kib in collector.rss),
    }
    print(f"\nsoak: {report}")
    for name in names:
        values = sorted(counts[name])
        assert values == [float(n) for n in range(1, written[name] + 1)], (
            f"{name}: wrote {written[name]}, stored {len(values)} ({len(set(values))} distinct)")
    assert min(faults.values()) >= 1, faults
    # Flat: after its first seconds (imports, caches, the backlog since the last kill) it does not grow.
    assert max(last[5:]) < 1.25 * last[min(5, len(last) - 1)] + 20_000, report
