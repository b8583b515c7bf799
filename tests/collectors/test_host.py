"""HostFollower (the host loop the app runs) against real sshd: reconnects after drops and hangs,
kill -9 and resume, globs, GPU loop and /metrics tunnel. Writers number their lines; every line is
stored exactly once. The sink keeps raw lines; tests/app/test_collector_sink.py runs the same loop
with the app's parsing store sink."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kvwatch.collectors.backoff import Backoff
from kvwatch.collectors.base import Line
from kvwatch.collectors.host import HostFollower, HostOptions, SourceSpec
from kvwatch.collectors.lines import TailState
from kvwatch.collectors.ssh.transport import SshOptions, SshTransport
from tests.collectors.harness import append, numbered
from tests.collectors.sinks import SqliteSink
from tests.fixtures.sshd import Sshd, keygen

pytestmark = pytest.mark.sshd


class Writer:
    """Appends numbered lines in small bursts from a thread, like a live server log."""

    def __init__(self, path: Path, interval: float = 0.01) -> None:
        self.path, self.interval, self.written = path, interval, 0
        self.lock = threading.Lock()  # held by a test that must change the file between two bursts
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self.lock:
                self.write(5)
            time.sleep(self.interval)

    def write(self, n: int) -> None:
        append(self.path, numbered(self.written + 1, self.written + n))
        self.written += n


def wait_for(cond: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def sink(tmp_path: Path) -> SqliteSink:
    return SqliteSink(tmp_path / "store.db")


def follower_for(sshd: Sshd, sources: list[SourceSpec], sink: SqliteSink, opts: SshOptions | None = None,
                 **options: object) -> HostFollower:
    target = sshd.target()
    return HostFollower("h", lambda: SshTransport(target, opts).connect(), sources, sink,
                        HostOptions(**{"poll_interval": 0.2, **options}),  # type: ignore[arg-type]
                        Backoff(base=0.1, cap=0.5))


@pytest.fixture
def running() -> Iterator[list[HostFollower]]:
    started: list[HostFollower] = []
    yield started
    for follower in started:
        follower.stop()


def test_dropped_connection_loses_nothing(sshd: Sshd, tmp_path: Path, sink: SqliteSink,
                                          running: list[HostFollower]) -> None:
    log = tmp_path / "server.log"
    log.touch()
    follower = follower_for(sshd, [SourceSpec("server_log", str(log))], sink).start()
    running.append(follower)
    with Writer(log) as writer:
        wait_for(lambda: len(sink.texts()) > 50, what="first lines")
        for _ in range(2):
            before = set(sshd.session_pids())
            for pid in before:  # drop every session: our connection goes with them
                os.kill(pid, signal.SIGKILL)

            def reconnected(old: set[int] = before) -> bool:
                return follower.health.state == "up" and bool(set(sshd.session_pids()) - old)

            wait_for(reconnected, what="reconnect")
            time.sleep(0.3)
    wait_for(lambda: len(sink.texts()) >= writer.written, what="all lines")
    assert sink.seqs() == list(range(1, writer.written + 1))
    assert sink.dups() == 0
    assert follower.health.reconnects >= 2


def test_live_copytruncate_loses_nothing(sshd: Sshd, tmp_path: Path, sink: SqliteSink,
                                        running: list[HostFollower]) -> None:
    """logrotate's copytruncate while the server writes and the collector is behind (it polls every
    0.5 s, ~500 lines unread): those lines are drained from the copy. The writer pauses only over the
    copy and the truncation, the window whose lines no file keeps."""
    log = tmp_path / "server.log"
    log.touch()
    follower = follower_for(sshd, [SourceSpec("server_log", str(log))], sink, wake=False,
                            poll_interval=0.5).start()
    running.append(follower)
    with Writer(log, interval=0.005) as writer:
        for rotation in range(3):
            time.sleep(0.8)
            with writer.lock:
                writer.write(50)  # surely unread when copied
                for n in range(rotation, 0, -1):  # logrotate's numbering: .1 -> .2, then the new .1
                    os.rename(tmp_path / f"server.log.{n}", tmp_path / f"server.log.{n + 1}")
                shutil.copyfile(log, tmp_path / "server.log.1")
                os.truncate(log, 0)
    # generous: under load (parallel workers, other runs) draining three copies took over 20 s
    wait_for(lambda: len(sink.texts()) >= writer.written, timeout=90, what="all lines")
    assert sink.seqs() == list(range(1, writer.written + 1))
    assert sink.dups() == 0
    health = follower.health.sources["server_log"]
    assert (health.truncations, health.copies_drained) == (3, 3)


def test_hung_connection_is_noticed_and_replaced(sshd: Sshd, tmp_path: Path, sink: SqliteSink,
                                                running: list[HostFollower]) -> None:
    log = tmp_path / "server.log"
    log.touch()
    opts = SshOptions(io_timeout=2.0, connect_timeout=3.0)
    follower = follower_for(sshd, [SourceSpec("server_log", str(log))], sink, opts).start()
    running.append(follower)
    stopped: list[int] = []
    try:
        with Writer(log) as writer:
            wait_for(lambda: len(sink.texts()) > 50, what="first lines")
            stopped = sshd.session_pids()
            for pid in stopped:  # the host hangs: the kernel still ACKs, sshd answers nothing
                os.kill(pid, signal.SIGSTOP)
            hung_at = time.monotonic()
            wait_for(lambda: follower.health.reconnects >= 1, timeout=15, what="hang noticed")
            noticed = time.monotonic() - hung_at
            wait_for(lambda: follower.health.state == "up", what="reconnect")
            time.sleep(0.5)
        wait_for(lambda: len(sink.texts()) >= writer.written, what="all lines")
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
    assert noticed < 2.0 + 0.2 + 3.0  # io_timeout + one poll interval, plus scheduling slack
    assert sink.seqs() == list(range(1, writer.written + 1))
    assert sink.dups() == 0


def test_kill_9_and_restart_resumes_exactly(sshd: Sshd, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    db = tmp_path / "store.db"
    log.touch()
    argv = [sys.executable, "-m", "tests.collectors.worker", str(db), sshd.spec, sshd.key_path,
            sshd.known_hosts_path, str(log)]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    with Writer(log, interval=0.005) as writer:
        for delay in (1.5, 0.7, 1.1, 0.4):
            proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(delay)
            proc.kill()  # SIGKILL at an arbitrary point: mid-read, mid-transaction, anywhere
            proc.wait()
    append(log, b"00099999 half a li")  # a partial line across the restart...
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)
    proc.kill()
    proc.wait()
    append(log, b"ne\n")  # ...completed while kvwatch is down
    final = writer.written
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        sink = SqliteSink(db)
        wait_for(lambda: len(sink.texts()) >= final + 1, what="all lines after restart")
        time.sleep(0.5)
    finally:
        proc.kill()
        proc.wait()
    seqs = sink.seqs()
    assert seqs == sorted([*range(1, final + 1), 99999]), f"{len(seqs)} stored, {final + 1} written"
    assert sink.dups() == 0


def test_new_output_folders_are_found(sshd: Sshd, tmp_path: Path, sink: SqliteSink,
                                      running: list[HostFollower]) -> None:
    (tmp_path / "ds1").mkdir()
    append(tmp_path / "ds1" / "raw_responses.jsonl", numbered(1, 10))
    spec = SourceSpec("outputs", str(tmp_path / "*" / "raw_responses.jsonl"))
    follower = follower_for(sshd, [spec], sink, glob_interval=0.3).start()
    running.append(follower)
    wait_for(lambda: len(sink.texts("outputs")) == 10, what="first dataset")
    (tmp_path / "ds2").mkdir()
    append(tmp_path / "ds2" / "raw_responses.jsonl", numbered(11, 15))
    append(tmp_path / "ds1" / "raw_responses.jsonl", numbered(16, 20))
    wait_for(lambda: len(sink.texts("outputs")) == 20, what="second dataset")
    assert sorted(sink.seqs("outputs")) == list(range(1, 21))
    sources = follower.health.sources
    assert sources["outputs:ds2"].lines == 5 and sources["outputs:ds1"].lines == 15
    size = sum(p.stat().st_size for p in tmp_path.glob("*/raw_responses.jsonl"))
    assert sum(s.bytes for s in sources.values()) == size  # incremental: bytes read == bytes appended


def test_host_key_change_stops_without_retry(sshd: Sshd, tmp_path: Path, sink: SqliteSink,
                                             running: list[HostFollower]) -> None:
    keygen(tmp_path / "other")
    pub = (tmp_path / "other.pub").read_text().split()
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {pub[0]} {pub[1]}\n")
    target = sshd.target(known_hosts=str(wrong))
    attempts = []

    def connect() -> SshTransport:
        attempts.append(1)
        return SshTransport(target).connect()

    follower = HostFollower("h", connect, [SourceSpec("server_log", "/nonexistent")], sink).start()
    running.append(follower)
    wait_for(lambda: follower.health.state == "failed", what="rejection")
    time.sleep(0.5)
    assert attempts == [1]
    assert "CHANGED" in (follower.health.last_error or "")
    assert (follower.health.last_error or "").startswith("host key rejected")
    assert follower.health.reconnects == 0


def test_auth_failure_backs_off_slowly(sshd: Sshd, tmp_path: Path, sink: SqliteSink,
                                       running: list[HostFollower]) -> None:
    keygen(tmp_path / "stranger")
    target = sshd.target(identity_file=str(tmp_path / "stranger"))
    follower = HostFollower("h", lambda: SshTransport(target).connect(),
                            [SourceSpec("server_log", "/nonexistent")], sink).start()
    running.append(follower)
    wait_for(lambda: follower.health.state == "reconnecting", what="auth failure")
    assert (follower.health.last_error or "").startswith("authentication refused")
    assert (follower.health.next_retry_in or 0) >= 60


def test_a_hung_host_does_not_slow_the_others(sshd: Sshd, tmp_path: Path, sink: SqliteSink,
                                              running: list[HostFollower]) -> None:
    silent = socket.socket()  # accepts TCP, never says a word: a host that hangs during connect
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]
    try:
        from kvwatch.collectors.ssh.target import SshTarget

        dead = SshTarget("127.0.0.1", port, "root", known_hosts=sshd.known_hosts_path)
        running.append(HostFollower("dead", lambda: SshTransport(dead, SshOptions(connect_timeout=30)).connect(),
                                    [SourceSpec("server_log", "/x")], sink).start())
        log = tmp_path / "server.log"
        append(log, numbered(1, 5))
        healthy = follower_for(sshd, [SourceSpec("server_log", str(log))], sink).start()
        running.append(healthy)
        started = time.monotonic()
        wait_for(lambda: len(sink.texts()) == 5, what="healthy host lines")
        assert time.monotonic() - started < 5  # far below the dead host's 30 s connect timeout
        assert running[0].health.state == "connecting"
    finally:
        silent.close()


FAKE_NVIDIA_SMI = """#!/bin/sh
# stands in for nvidia-smi on a host without GPUs: the CSV the real query loop prints
case "$*" in *--query-gpu=timestamp,index,utilization.gpu*) ;; *) echo "unexpected: $*" >&2; exit 2;; esac
i=0
while :; do
  for g in 0 1; do
    printf '2026/12/02 14:53:%02d.174, %d, %d, 39287, 81559, 687.74, 61\\n' $((i % 60)) $g $((i % 100))
  done
  i=$((i + 1)); sleep 0.1
done
"""


def test_gpu_loop_on_one_channel(sshd: Sshd, sink: SqliteSink, running: list[HostFollower]) -> None:
    fake = sshd.bin_dir / "nvidia-smi"
    fake.write_text(FAKE_NVIDIA_SMI)
    fake.chmod(0o755)
    try:
        follower = follower_for(sshd, [], sink, gpu=True).start()
        running.append(follower)
        wait_for(lambda: len(sink.texts("gpu")) >= 10, what="GPU samples")
    finally:
        fake.unlink()
    rows = [t.split(", ") for t in sink.texts("gpu")]
    assert {r[1] for r in rows} == {"0", "1"}
    assert all(len(r) == 7 and r[3] == "39287" for r in rows)


class _Metrics(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 233\n"
        self.send_response(200 if self.path == "/metrics" else 404)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


def test_metrics_through_an_ssh_tunnel(sshd: Sshd, sink: SqliteSink, running: list[HostFollower]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        follower = follower_for(sshd, [], sink, metrics_port=server.server_address[1],
                                metrics_interval=0.2).start()
        running.append(follower)
        wait_for(lambda: "sglang:num_running_reqs 233" in sink.texts("metrics"), what="metrics")
    finally:
        server.shutdown()
        server.server_close()


def test_store_failure_rewinds_and_retries(tmp_path: Path, running: list[HostFollower]) -> None:
    from kvwatch.collectors.local import LocalTransport

    class Flaky(SqliteSink):
        fail = 2

        def deliver(self, host: str, kind: str, path: str, lines: list[Line], state: TailState | None) -> None:
            if lines and self.fail:
                self.fail -= 1
                raise OSError("disk full")
            super().deliver(host, kind, path, lines, state)

    log = tmp_path / "server.log"
    append(log, numbered(1, 30))
    flaky = Flaky(tmp_path / "store.db")
    follower = HostFollower("h", LocalTransport, [SourceSpec("server_log", str(log))], flaky,
                            HostOptions(poll_interval=0.05)).start()
    running.append(follower)
    wait_for(lambda: len(flaky.texts()) == 30, what="lines after the store recovered")
    append(log, numbered(31, 40))
    wait_for(lambda: len(flaky.texts()) == 40, what="later lines")
    assert flaky.seqs() == list(range(1, 41))
    # recovered: the error is no longer the host's state, but what it recovered from says it
    assert follower.health.last_error is None
    assert "disk full" in (follower.health.recovered_from or {}).get("error", "")
