"""Wake-up streams and the GPU sampler on both transports."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kvwatch.collectors.base import Transport
from kvwatch.collectors.gpu import GpuSampler
from kvwatch.collectors.watch import Watch
from tests.collectors.harness import append, numbered
from tests.fixtures.sshd import Sshd


def test_watch_wakes_on_append_rotation_and_creation(transport: Transport, tmp_path: Path) -> None:
    log, later = tmp_path / "server.log", tmp_path / "later.log"
    append(log, numbered(1, 3))
    watch = Watch(transport, [str(log), str(later)])
    try:
        assert watch.active
        watch.wait(1.0)  # tail -F may report the missing file once at start
        while watch.wait(0.3):
            pass
        append(log, numbered(4, 4))
        assert watch.wait(10.0)
        os.rename(log, tmp_path / "server.log.1")
        append(log, numbered(5, 5))
        assert watch.wait(10.0)
        append(later, numbered(1, 1))
        assert watch.wait(10.0)
        while watch.wait(0.3):
            pass
        assert not watch.wait(0.3)  # quiet files: no wake-up
    finally:
        watch.close()


def test_gpu_sampler_reports_a_missing_nvidia_smi(transport: Transport) -> None:
    sampler = GpuSampler(transport, restart_after=60)
    try:
        lines = []
        for _ in range(20):
            lines += sampler.read(0.2)
            if sampler.last_error:
                break
        assert lines == []
        assert sampler.last_error  # "nvidia-smi: not found" or the local spawn error, said once
    finally:
        sampler.close()


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_remote_watch_ends_with_its_channel(sshd: Sshd, tmp_path: Path) -> None:
    log = tmp_path / "quiet.log"  # a file that never changes: tail would never write, never get SIGPIPE
    log.touch()
    remote = sshd.connect()
    try:
        watch = Watch(remote, [str(log)])
        deadline = time.monotonic() + 20
        while not _processes_mentioning(str(log)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _processes_mentioning(str(log)), "remote tail -F never started"
        watch.close()
        deadline = time.monotonic() + 10
        while _processes_mentioning(str(log)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _processes_mentioning(str(log)) == []
    finally:
        remote.close()


def test_local_watch_leaves_no_process_behind(tmp_path: Path) -> None:
    """Locally the stream is `sh -c 'tail -F | tr'`: closing it must end tail and tr too, not only sh."""
    from kvwatch.collectors.local import LocalTransport

    log = tmp_path / "quiet-local.log"  # never changes: a lingering tail would never get SIGPIPE
    log.touch()
    watch = Watch(LocalTransport(), [str(log)])
    deadline = time.monotonic() + 10
    while len(_processes_mentioning(str(log))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_processes_mentioning(str(log))) >= 2, "sh and tail -F never started"
    watch.close()
    deadline = time.monotonic() + 5  # SIGKILL is delivered at once; /proc may lag a moment
    while _processes_mentioning(str(log)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_mentioning(str(log)) == []


def _fake_nvidia_smi(bin_dir: Path, run_s: float) -> None:
    """Prints a sample every 0.1 s for `run_s` seconds, then exits (a loop killed or crashed)."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "nvidia-smi"
    script.write_text("#!/bin/sh\nend=$(( $(date +%s%N) + " + str(int(run_s * 1e9)) + " ))\n"
                      "while [ $(date +%s%N) -lt $end ]; do echo '2026/12/02 14:53:08.174, 0, 50, 1, 2, 3, 4'; "
                      "sleep 0.1; done\necho 'lost the GPU' >&2\n")
    script.chmod(0o755)


def _read_until_restarted(sampler: GpuSampler, limit_s: float) -> tuple[int, float | None]:
    """(the first run's generation, seconds from its end to the next run's first line, or None)."""
    first, ended_at = 0, None
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        lines = sampler.read(0.05)
        if lines and not first:
            first = lines[0].generation
        if first and sampler.last_error and ended_at is None:
            ended_at = time.monotonic()
        if ended_at is not None and any(line.generation != first for line in lines):
            return first, time.monotonic() - ended_at
    return first, None


@pytest.mark.parametrize(("run_s", "restart_after", "gap_between"), [
    (2.5, 2.0, (0.0, 1.0)),  # ran for restart_after: started again at the next interval (0.2 s)
    (0.3, 3.0, (2.5, 10.0)),  # ended soon: waits restart_after, a failing loop is not respawned each interval
])
def test_a_loop_is_started_again_by_how_long_it_ran(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_s: float,
                                                    restart_after: float, gap_between: tuple[float, float]) -> None:
    from kvwatch.collectors.local import LocalTransport

    _fake_nvidia_smi(tmp_path / "bin", run_s=run_s)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    sampler = GpuSampler(LocalTransport(), interval_ms=200, restart_after=restart_after)
    try:
        first, gap = _read_until_restarted(sampler, 10.0)
        assert first and gap is not None and gap_between[0] <= gap < gap_between[1], gap
        assert sampler.last_error == "lost the GPU"  # what the loop said on stderr
    finally:
        sampler.close()
