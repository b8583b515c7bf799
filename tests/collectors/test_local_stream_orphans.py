"""A local stream's processes (`sh -c 'tail -F | tr'`, nvidia-smi -l) end with the kvwatch process that
started them, however it ends: here it is killed with SIGKILL, so no cleanup of its own runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kvwatch.collectors.base import CollectorError
from kvwatch.collectors.stream import LocalStream

CHILD = """
import sys, time
from kvwatch.collectors.stream import LocalStream
stream = LocalStream(["sh", "-c", 'tail -F "$1" | tr a b', "sh", sys.argv[1]])
print(stream._proc.pid, flush=True)
time.sleep(600)
"""


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_kill_9_of_kvwatch_leaves_no_tail_behind(tmp_path: Path) -> None:
    log = tmp_path / "quiet.log"
    log.write_text("nothing will ever be written here again\n")
    owner = subprocess.Popen([sys.executable, "-c", CHILD, str(log)], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    pgid = int(owner.stdout.readline())
    time.sleep(0.5)
    assert _group_alive(pgid)  # tail, tr and the watchdog run
    owner.send_signal(signal.SIGKILL)
    owner.wait(timeout=10)
    deadline = time.monotonic() + 5
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(pgid)


def test_a_missing_program_is_a_clear_error() -> None:
    with pytest.raises(CollectorError, match="nvidia-smi-not-installed-here: No such file or directory"):
        LocalStream(["nvidia-smi-not-installed-here"])
