"""When the host's tail cannot use inotify (NFS, Lustre, a user's inotify instances used up) it polls:
the wake-up stream must still come within a fraction of a second, not tail's default second."""

from __future__ import annotations

import os
import shutil
import statistics
import time
from pathlib import Path

import pytest

from kvwatch.collectors.local import LocalTransport
from kvwatch.collectors.watch import Watch
from tests.collectors.harness import append, numbered


@pytest.fixture
def polling_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """GNU tail, made to poll as it does on NFS (its hidden ---disable-inotify), first on PATH."""
    real = shutil.which("tail")
    assert real is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "tail"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> "{bin_dir}/args"\nexec {real} ---disable-inotify "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def test_a_polling_tail_still_wakes_the_loop_within_half_a_second(polling_tail: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 1))
    watch = Watch(LocalTransport(), [str(log)])
    try:
        assert watch.active
        while watch.wait(0.5):  # whatever tail says at start
            pass
        assert (polling_tail / "args").exists()  # the wrapper, so tail really polls
        waits = []
        for n in range(2, 14):
            time.sleep(0.13 * n % 0.7)  # appends at different phases of tail's polling
            appended = time.monotonic()
            append(log, numbered(n, n))
            assert watch.wait(5.0)
            waits.append(time.monotonic() - appended)
            while watch.wait(0.05):
                pass
    finally:
        watch.close()
    # polling each second, the mean wait is about 0.5 s (0.53 s measured); every 0.2 s about 0.1 s
    assert statistics.fmean(waits) < 0.35, waits
